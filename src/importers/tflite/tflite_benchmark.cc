// TFLite's `benchmark_model --enable_op_profiling=true` output (its profile summary tables),
// as printed to stdout or the log (lines may carry an "INFO: " prefix):
//
//   Operator-wise Profiling Info for Regular Benchmark Runs:
//   ============================== Run Order ==============================
//   	 [node type]	 [start]	 [first]	 [avg ms]	 [%]	 [cdf%]	 [mem KB]
//   [times called]	 [Name] 	     CONV_2D
//   0.000	   4.269	   4.206	 12.344%	 12.344%	   0.000	   1
//   [conv1/Relu6]
//   ...
//   ============================== Summary by node type ==============================
//   Timings (microseconds): count=50 first=34095 curr=34023 min=33936 max=34391 avg=34079.6 std=93
//
// Columns are found by their header names, so layouts with and without [times called] (TF 1.x)
// and with the newer [Name] column order all read. Only the "Regular Benchmark Runs" Run Order
// table is read (the "Benchmark Initialization" one, printed first by newer versions, is skipped).
// Delegated subgraphs appear as one row of their delegate's node type (TfLiteXNNPackDelegate).
// TFLite writes averages only: one value per node, said in the notes.
#include <cmath>
#include <map>

#include "base/strings.h"
#include "importers/importer.h"

namespace opscope::importers {
namespace {

constexpr std::string_view kRegular = "Profiling Info for Regular Benchmark Runs";

std::string_view StripLog(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (StartsWith(line, "INFO: ")) line.remove_prefix(6);
  return line;
}

int Sniff(std::string_view head, const std::string&) {
  if (head.find("Operator-wise Profiling Info") != std::string_view::npos ||
      (head.find("[node type]") != std::string_view::npos &&
       head.find("[avg ms]") != std::string_view::npos) ||
      head.find("node type, first, avg_ms, %, cdf%") != std::string_view::npos)
    return kSniffCertain;
  if (head.find("STARTING!") != std::string_view::npos &&
      head.find("Graph:") != std::string_view::npos &&
      head.find("Num runs:") != std::string_view::npos)
    return kSniffLikely;  // a benchmark_model log (its tables come later)
  return kSniffNo;
}

// "[node type]\t[start]..." -> {"node type", "start", ...}
std::vector<std::string> HeaderColumns(std::string_view line) {
  std::vector<std::string> cols;
  size_t pos = 0;
  while ((pos = line.find('[', pos)) != std::string_view::npos) {
    size_t end = line.find(']', pos);
    if (end == std::string_view::npos) break;
    cols.push_back(std::string(line.substr(pos + 1, end - pos - 1)));
    pos = end + 1;
  }
  return cols;
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  std::string_view text = src.bytes();
  profile::Profile p = util::NewProfile("tflite", origin);
  std::vector<std::string> cols;
  bool in_regular = text.find(kRegular) == std::string_view::npos;  // old logs: one table only
  bool in_table = false, done = false;
  size_t pos = 0, line_no = 0;
  std::map<std::string, int> seen;
  int64_t count = 0;
  double avg_us = -1;
  bool have_timings = false, csv_rows = false;
  std::vector<std::string> skipped_sections;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = StripLog(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    const std::string where = origin + ":" + std::to_string(line_no);
    if (line.find(kRegular) != std::string_view::npos) {
      in_regular = true;
      continue;
    }
    if (line.find("Profiling Info for Benchmark Initialization") != std::string_view::npos) {
      in_regular = false;
      continue;
    }
    {
      std::string t = Trim(line);
      if (in_regular &&
          (StartsWith(t, "Subgraph (index:") || StartsWith(t, "Delegate internal:")) &&
          !StartsWith(t, "Subgraph (index: 0") && t.find("Timings") == std::string::npos) {
        // Other subgraphs (control flow bodies) and the ops inside a delegate have tables of
        // their own; their time is already inside the calling op / the delegate's row.
        skipped_sections.push_back(t.substr(0, t.size() - (EndsWith(t, ":") ? 1 : 0)));
        in_table = false;
        done = done || !p.ops.empty();
        continue;
      }
    }
    if (StartsWith(Trim(line), "Timings (microseconds):") && in_regular && !have_timings) {
      have_timings = true;
      for (const std::string& kv : Split(Trim(line).substr(23), ' ', true)) {
        size_t eq = kv.find('=');
        if (eq == std::string::npos) continue;
        std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
        if (k == "count") ParseInt64(v, &count);
        if (k == "avg") ParseDouble(v, &avg_us);
      }
      continue;
    }
    if (line.find("=====") != std::string_view::npos) {
      if (in_table) {
        in_table = false;
        if (!p.ops.empty()) done = true;
      }
      if (in_regular && !done && line.find("Run Order") != std::string_view::npos) in_table = true;
      continue;
    }
    if (!in_table || done) continue;
    if (line.find("[node type]") != std::string_view::npos) {
      cols = HeaderColumns(line);
      csv_rows = false;
      continue;
    }
    if (StartsWith(Trim(line), "node type, first, avg_ms")) {
      // --op_profiling_output_mode=csv: "node type, first, avg_ms, %, cdf%, mem KB, times
      // called, name"; commas inside a name were replaced by tabs.
      cols.clear();
      for (const std::string& c : Split(Trim(line), ',', true)) {
        std::string n = Trim(c);
        cols.push_back(n == "avg_ms" ? "avg ms" : n == "name" ? "Name" : n);
      }
      csv_rows = true;
      continue;
    }
    std::string t = Trim(line);
    if (t.empty()) continue;
    if (cols.empty()) return DataLoss(where + ": a Run Order row before the column header");
    std::vector<std::string> cells;
    if (csv_rows) {
      for (const std::string& c : Split(t, ',')) cells.push_back(Trim(c));
    } else if (line.find('\t') != std::string_view::npos) {
      // Each column is "\t" + a right-aligned field: tabs separate, and a node type may hold
      // spaces ("Convolution (NHWC, F32) IGEMM" in a delegate's own table).
      for (const std::string& c : Split(line, '\t')) {
        std::string x = Trim(c);
        if (!x.empty() || !cells.empty()) cells.push_back(x);
      }
      while (!cells.empty() && cells.back().empty()) cells.pop_back();
    }
    const bool by_cells = cells.size() == cols.size();
    std::string name;
    if (by_cells) {
      std::string& nm = cells.back();
      if (csv_rows)
        for (char& ch : nm)
          if (ch == '\t') ch = ',';
      // "[conv1/Relu6]:0" (newer versions append the node index), "[conv1/Relu6]", "conv1".
      if (!nm.empty() && nm[0] == '[' && nm.rfind(']') != std::string::npos)
        nm = Trim(std::string_view(nm).substr(1, nm.rfind(']') - 1));
      name = nm;
    }
    // The name is the bracketed group after the numbers ("[conv1/Relu6]"; a delegate's row is
    // "[node1, node2]:14", the delegate's own node index after the colon).
    if (size_t o = t.find('['); !by_cells && o != std::string::npos) {
      std::string_view nm = std::string_view(t).substr(o + 1);
      size_t close = nm.rfind(']');
      if (close == std::string_view::npos) return DataLoss(where + ": unterminated [Name]");
      name = Trim(nm.substr(0, close));
      t = Trim(std::string_view(t).substr(0, o));
    }
    std::vector<std::string> vals;
    if (cells.size() == cols.size()) {
      vals.assign(cells.begin(), cells.end() - 1);
    } else {
      for (const std::string& v : Split(t, ' ', true))
        for (const std::string& w : Split(v, '\t', true)) vals.push_back(w);
    }
    size_t want = by_cells ? vals.size() : cols.size() - (name.empty() ? 0 : 1);
    if (vals.size() != want)
      return DataLoss(where + ": expected " + std::to_string(want) + " columns, found " +
                      std::to_string(vals.size()) + " (truncated or corrupt table?)");
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < vals.size(); ++i) row[cols[i]] = vals[i];
    if (name.empty()) name = row.count("Name") ? row["Name"] : "";
    if (name.empty()) return DataLoss(where + ": row without a node name");
    auto num = [&](const char* col, double* out) -> Status {
      auto it = row.find(col);
      if (it == row.end()) {
        *out = std::nan("");
        return Status::Ok();
      }
      std::string v = it->second;
      if (!v.empty() && v.back() == '%') v.pop_back();
      if (!ParseDouble(v, out))
        return DataLoss(where + ": [" + col + "] '" + it->second + "' is not a number");
      return util::CheckTime(*out, where, std::string("[") + col + "]");
    };
    double avg, first, mem, called;
    OPSCOPE_RETURN_IF_ERROR(num("avg ms", &avg));
    OPSCOPE_RETURN_IF_ERROR(num("first", &first));
    OPSCOPE_RETURN_IF_ERROR(num("mem KB", &mem));
    OPSCOPE_RETURN_IF_ERROR(num("times called", &called));
    if (!std::isfinite(avg)) return DataLoss(where + ": the table has no [avg ms] column");
    profile::OpRecord op;
    op.name = name;
    if (int n = seen[name]++; n > 0) op.name += " #" + std::to_string(n + 1);
    op.op_type = row.count("node type") ? row["node type"] : "?";
    op.index = static_cast<int>(p.ops.size());
    op.runs_ms = {avg};
    op.step = name;
    op.attribution = "TFLite average (first run " + HumanMs(std::isfinite(first) ? first : 0) +
                     (std::isfinite(called) && called > 1
                          ? ", " + std::to_string(static_cast<int64_t>(called)) + " calls per run"
                          : std::string()) +
                     ")";
    p.ops.push_back(std::move(op));
  }
  if (p.ops.empty())
    return DataLoss(origin +
                    ": no \"Run Order\" table of the regular benchmark runs; run "
                    "benchmark_model with --enable_op_profiling=true");
  for (const std::string& sec : skipped_sections)
    p.meta.degradations.push_back("section '" + sec +
                                  "' not read: its time is inside the primary graph's rows");
  if (in_table && !done && !csv_rows)
    p.meta.degradations.push_back(
        "the Run Order table is not followed by the next section: the "
        "output may be cut short");
  if (count > 0 && count < (1LL << 31)) p.meta.runs = static_cast<int>(count);
  if (avg_us >= 0 && std::isfinite(avg_us)) p.e2e.runs_ms = {avg_us / 1000.0};
  p.meta.degradations.push_back(
      "TFLite op profiles hold per-node averages only: one value per "
      "node, no run-to-run spread");
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_tflite = {
    "tflite", "TFLite benchmark_model --enable_op_profiling output", Sniff, Parse};
}  // namespace formats

}  // namespace opscope::importers
