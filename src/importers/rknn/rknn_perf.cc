// RKNN performance tables: RKNN-Toolkit2's `rknn.eval_perf()` (and the runtime's
// RKNN_QUERY_PERF_DETAIL text, which is the same table), with or without the runtime's log prefix
// ("D RKNN: [10:31:02.123] "):
//
//   Network Layer Information Table
//   ID   OpType        DataType Target InputShape                       OutputShape
//        Cycles(DDR/NPU/Total)    Time(us)  MacUsage(%)      WorkLoad(0/1/2)   RW(KB)  FullName
//   1    InputOperator UINT8    CPU    \                                (1,3,640,640)
//        0/0/0                    4         \                0.0%/0.0%/0.0%    0
//        InputOperator:images
//   2    ConvExSwish   UINT8    NPU    (1,3,640,640),(16,3,3,3),(16)    (1,16,320,320)
//        1091036/8294400/8294400  16130     2.41/0.00/0.00   100.0%/0.0%/0.0%  10802
//        Conv:/model.0/conv/Conv
//   Total Operator Elapsed Per Frame Time(us): 12631
//   Total Memory Read/Write Per Frame Size(KB): 10563
//
// (one line per layer), the shorter model-zoo layout `ID OpType DataType Target Time(us)`, and
// RKNN-Toolkit 1.x's `Performance` table (`Layer ID  Name  Time(us)`, then `Total Time(us):`).
// Columns are found by their header names. A row is one RKNN layer (often fused: ConvExSwish is
// Conv + Swish); FullName's part after the first ':' is the ONNX node it came from, which is the
// row's name and source node, so `import --model` joins it to the graph. Per row: the time (one
// value: eval_perf reports a per-frame average), the placement (`rknn.cpu` 1 for a layer that ran
// on the CPU), DDR/NPU/total cycles, MAC usage (the busiest core), per-core work load and the
// bytes read and written.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "base/strings.h"
#include "importers/importer.h"

namespace opscope::importers {
namespace {

// The log prefix of the runtime ("D RKNN: [10:31:02.123] ", "I RKNN: ") and carriage returns.
std::string_view Clean(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > 8 && (line[0] == 'D' || line[0] == 'I' || line[0] == 'W' || line[0] == 'E') &&
      line.substr(1, 7) == " RKNN: ") {
    line.remove_prefix(8);
    if (!line.empty() && line[0] == '[') {
      const size_t close = line.find(']');
      if (close != std::string_view::npos) line.remove_prefix(close + 1);
    }
  }
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  return line;
}

int Sniff(std::string_view head, const std::string&) {
  if (head.find("Network Layer Information Table") != std::string_view::npos) return kSniffCertain;
  if (head.find("Layer ID") != std::string_view::npos &&
      head.find("Time(us)") != std::string_view::npos &&
      head.find("Total Time(us)") != std::string_view::npos)
    return kSniffLikely;
  return kSniffNo;
}

// "(1,3,640,640),(16,3,3,3),(16)" -> shapes; "\" -> none; a trailing ",..." (the table cut the
// list) ends it.
std::vector<std::vector<int64_t>> Shapes(const std::string& s) {
  std::vector<std::vector<int64_t>> out;
  size_t i = 0;
  while ((i = s.find('(', i)) != std::string::npos) {
    const size_t close = s.find(')', i);
    if (close == std::string::npos) break;
    std::vector<int64_t> shape;
    for (const std::string& d : Split(s.substr(i + 1, close - i - 1), ',', true)) {
      int64_t v = 0;
      if (!ParseInt64(d, &v) || v < 0 || v > (int64_t{1} << 40)) {
        shape.clear();
        break;
      }
      shape.push_back(v);
    }
    out.push_back(std::move(shape));
    i = close + 1;
  }
  return out;
}

// "a/b/c" -> numbers ("2.41/0.00/0.00", "100.0%/0.0%/0.0%", "1091036/8294400/8294400").
std::vector<double> Slashed(const std::string& s) {
  std::vector<double> out;
  for (std::string part : Split(s, '/', false)) {
    if (!part.empty() && part.back() == '%') part.pop_back();
    double v = 0;
    out.push_back(ParseDouble(part, &v) && std::isfinite(v) ? v : std::nan(""));
  }
  return out;
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  std::string_view text = src.bytes();
  profile::Profile p = util::NewProfile("rknn", origin);
  std::map<std::string, int> col;  // header name -> token index
  bool in_table = false, toolkit1 = false;
  size_t pos = 0, line_no = 0, bad = 0, cpu_layers = 0;
  double total_us = -1, rw_total_kb = -1;
  std::map<std::string, int> seen_names;
  auto need = [&](const char* c) { return col.count(c) ? col.at(c) : -1; };
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string line(Clean(text.substr(pos, end - pos)));
    pos = end + 1;
    ++line_no;
    if (line.find("Network Layer Information Table") != std::string::npos) {
      // A log may hold several tables (one per build pass, then the run's): the last one wins.
      in_table = true;
      toolkit1 = false;
      col.clear();
      p.ops.clear();
      seen_names.clear();
      cpu_layers = 0;
      continue;
    }
    if (StartsWith(line, "Total Operator Elapsed Per Frame Time(us):") ||
        StartsWith(line, "Total Time(us):")) {
      double v = 0;
      if (ParseDouble(Trim(line.substr(line.find(':') + 1)), &v) && std::isfinite(v) && v >= 0)
        total_us = v;
      in_table = false;
      continue;
    }
    if (StartsWith(line, "Total Memory Read/Write Per Frame Size(KB):")) {
      double v = 0;
      if (ParseDouble(Trim(line.substr(line.find(':') + 1)), &v) && std::isfinite(v) && v >= 0)
        rw_total_kb = v;
      continue;
    }
    if (StartsWith(line, "Layer ID") && line.find("Time(us)") != std::string::npos) {
      // RKNN-Toolkit 1.x: "Layer ID    Name    Time(us)".
      in_table = toolkit1 = true;
      col.clear();
      p.ops.clear();
      seen_names.clear();
      continue;
    }
    if (!in_table) continue;
    std::vector<std::string> tok = Split(line, ' ', /*skip_empty=*/true);
    if (tok.empty() || StartsWith(tok[0], "---") || StartsWith(tok[0], "===")) continue;
    if (tok[0] == "ID" && col.empty()) {
      for (size_t i = 0; i < tok.size(); ++i) col[tok[i]] = static_cast<int>(i);
      continue;
    }
    int64_t id = 0;
    if (!ParseInt64(tok[0], &id)) {
      in_table = !StartsWith(line, "Operator Time Consuming Ranking Table");
      continue;
    }
    profile::OpRecord op;
    double us = 0;
    std::string node;
    if (toolkit1) {
      if (tok.size() < 3 || !ParseDouble(tok.back(), &us)) {
        ++bad;
        continue;
      }
      std::vector<std::string> mid(tok.begin() + 1, tok.end() - 1);
      node = Join(mid, " ");
      op.op_type = node.substr(0, node.find('.'));
    } else {
      const int t_col = need("Time(us)"), type_col = need("OpType");
      if (t_col < 0 || type_col < 0 || static_cast<int>(tok.size()) <= t_col ||
          !ParseDouble(tok[static_cast<size_t>(t_col)], &us)) {
        ++bad;
        continue;
      }
      op.op_type = tok[static_cast<size_t>(type_col)];
      auto at = [&](const char* c) -> std::string {
        const int k = need(c);
        return k >= 0 && static_cast<size_t>(k) < tok.size() ? tok[static_cast<size_t>(k)] : "";
      };
      const int full = need("FullName");
      if (full >= 0 && static_cast<size_t>(full) < tok.size()) {
        std::vector<std::string> rest(tok.begin() + full, tok.end());
        const std::string f = Join(rest, " ");
        const size_t colon = f.find(':');
        node = colon == std::string::npos ? f : f.substr(colon + 1);
      }
      const std::string target = at("Target");
      op.input_shapes = Shapes(at("InputShape"));
      op.output_shapes = Shapes(at("OutputShape"));
      if (target == "CPU") {
        op.counters["rknn.cpu"] = 1;
        ++cpu_layers;
      }
      const std::vector<double> cycles = Slashed(at("Cycles(DDR/NPU/Total)"));
      if (cycles.size() == 3) {
        if (std::isfinite(cycles[0])) op.counters["rknn.ddr_cycles"] = cycles[0];
        if (std::isfinite(cycles[1])) op.counters["rknn.npu_cycles"] = cycles[1];
        if (std::isfinite(cycles[2])) op.counters["rknn.total_cycles"] = cycles[2];
      }
      double mac = -1;
      for (double v : Slashed(at("MacUsage(%)")))
        if (std::isfinite(v)) mac = std::max(mac, v);
      if (mac >= 0) op.counters["rknn.mac_usage_pct"] = mac;
      const std::vector<double> load = Slashed(at("WorkLoad(0/1/2)"));
      for (size_t k = 0; k < load.size(); ++k)
        if (std::isfinite(load[k])) op.counters[fmt::format("rknn.core{}_load_pct", k)] = load[k];
      double kb = 0;
      if (ParseDouble(at("RW(KB)"), &kb) && std::isfinite(kb) && kb >= 0) op.bytes = kb * 1024;
      op.attribution = target.empty() ? "RKNN eval_perf time per frame"
                                      : "RKNN eval_perf time per frame, on the " + target;
    }
    if (!std::isfinite(us) || us < 0 || us > 1e12) {
      ++bad;
      continue;
    }
    if (node.empty()) node = op.op_type + "_" + std::to_string(id);
    // Several layers from one node (a split Conv) stay rows of their own.
    if (seen_names[node]++) node += "#" + std::to_string(seen_names[node]);
    op.name = node;
    if (!toolkit1 && node.find('#') == std::string::npos) op.source_nodes = {node};
    op.index = static_cast<int>(p.ops.size());
    op.runs_ms = {us / 1000};
    op.step = op.name;
    if (op.attribution.empty()) op.attribution = "RKNN-Toolkit 1.x eval_perf time per frame";
    p.ops.push_back(std::move(op));
  }
  if (p.ops.empty())
    return DataLoss(origin +
                    ": no layer rows in an RKNN performance table (\"Network Layer Information "
                    "Table\" of eval_perf / RKNN_QUERY_PERF_DETAIL, or Toolkit 1.x's \"Layer ID\" "
                    "table): truncated, or not an RKNN log?");
  p.meta.runs = 1;
  if (total_us >= 0) p.e2e.runs_ms = {total_us / 1000};
  p.meta.degradations.push_back(
      "RKNN eval_perf reports one averaged time per layer per frame: no runs, so no spread");
  if (cpu_layers) p.meta.extra["rknn.cpu_layers"] = std::to_string(cpu_layers);
  if (rw_total_kb >= 0) p.meta.extra["rknn.rw_kb_per_frame"] = fmt::format("{:.0f}", rw_total_kb);
  if (bad)
    p.meta.degradations.push_back(
        fmt::format("{} table row(s) could not be read and were skipped", bad));
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_rknn = {
    "rknn", "RKNN-Toolkit2 eval_perf / RKNN_QUERY_PERF_DETAIL layer table (and Toolkit 1.x's)",
    Sniff, Parse};
}  // namespace formats

}  // namespace opscope::importers
