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

// A Run Order row split into the header's columns when its tabs are gone (a log copied from a
// terminal or a web page: the columns are then runs of spaces) or never separated the name
// (TF 1.x): the numeric columns anchor the split. The node type is what precedes the first run
// of numbers as long as the header's numeric columns, the name what follows; both may hold
// spaces ("Convolution (NHWC, QC8) GEMM", "Delegate/Add (ND, QS8):9", "[a, b]:266").
// Empty when the row does not have that shape.
std::vector<std::string> SplitAtNumbers(std::string_view row,
                                        const std::vector<std::string>& cols) {
  if (cols.size() < 3 || cols.front() != "node type" || cols.back() != "Name") return {};
  std::vector<std::string> tok;
  for (const std::string& w : Split(row, ' ', true))
    for (const std::string& x : Split(w, '\t', true)) tok.push_back(x);
  const size_t k = cols.size() - 2;
  auto numeric = [](std::string v) {
    if (!v.empty() && v.back() == '%') v.pop_back();
    double d;
    return !v.empty() && ParseDouble(v, &d);
  };
  for (size_t i = 1; i + k < tok.size(); ++i) {
    size_t n = 0;
    while (n < k && numeric(tok[i + n])) ++n;
    if (n < k) continue;
    std::vector<std::string> out;
    auto join = [&](size_t a, size_t b) {
      std::string s;
      for (size_t j = a; j < b; ++j) s += (j > a ? " " : "") + tok[j];
      return s;
    };
    out.push_back(join(0, i));
    for (size_t j = i; j < i + k; ++j) out.push_back(tok[j]);
    out.push_back(join(i + k, tok.size()));
    return out;
  }
  return {};
}

// The node's name from the [Name] cell: "[conv1/Relu6]:0" (newer versions append the node
// index), "[conv1/Relu6]", "conv1", a delegate's "[node1, node2]:14". A node whose outputs have
// no names is "[]:64" (an NNAPI delegate's row): it is named after its type and index,
// "TfLiteNnapiDelegate:64", as two such rows must stay apart.
std::string NodeName(std::string nm, const std::string& node_type) {
  nm = Trim(nm);
  if (nm.empty() || nm[0] != '[' || nm.rfind(']') == std::string::npos) return nm;
  size_t close = nm.rfind(']');
  std::string inner = Trim(std::string_view(nm).substr(1, close - 1));
  if (!inner.empty()) return inner;
  std::string index = Trim(std::string_view(nm).substr(close + 1));
  if (StartsWith(index, ":")) index = index.substr(1);
  return index.empty() ? std::string() : node_type + ":" + index;
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
      if (!cells.empty())
        for (char& ch : cells.back())
          if (ch == '\t') ch = ',';
    } else if (line.find('\t') != std::string_view::npos) {
      // Each column is "\t" + a right-aligned field: tabs separate, and a node type may hold
      // spaces ("Convolution (NHWC, F32) IGEMM" in a delegate's own table).
      for (const std::string& c : Split(line, '\t')) {
        std::string x = Trim(c);
        if (!x.empty() || !cells.empty()) cells.push_back(x);
      }
      while (!cells.empty() && cells.back().empty()) cells.pop_back();
    }
    if (cells.size() != cols.size()) cells = SplitAtNumbers(t, cols);
    if (cells.size() != cols.size())
      return DataLoss(where + ": expected " + std::to_string(cols.size()) + " columns, found " +
                      std::to_string(cells.empty() ? Split(t, ' ', true).size() : cells.size()) +
                      " (truncated or corrupt table?)");
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < cells.size(); ++i) row[cols[i]] = cells[i];
    const std::string node_type = row.count("node type") ? row["node type"] : "?";
    std::string name = NodeName(row.count("Name") ? row["Name"] : "", node_type);
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
    op.op_type = node_type;
    op.index = static_cast<int>(p.ops.size());
    // [avg ms] and [first] are per call; [times called] is calls per run (TFLite's stats
    // calculator divides the call count by the run count), so a node called 13 times a run
    // (a WHILE body, or one XNNPACK operator name shared by 13 delegate partitions) takes
    // avg x 13 of each run: the [%] column says the same.
    const bool repeated = std::isfinite(called) && called > 1;
    if (repeated && called > 1e9) return DataLoss(where + ": [times called] out of range");
    op.runs_ms = {repeated ? avg * called : avg};
    op.step = name;
    op.attribution =
        repeated ? "TFLite: " + std::to_string(static_cast<int64_t>(called)) + " calls per run, " +
                       HumanMs(avg) + " average per call (first call " +
                       HumanMs(std::isfinite(first) ? first : 0) + ")"
                 : "TFLite average (first run " + HumanMs(std::isfinite(first) ? first : 0) + ")";
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
