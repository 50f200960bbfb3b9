// Arm NN's profiler JSON (IProfiler::Print / ExecuteNetwork --event-based-profiling), alone or
// embedded in an ExecuteNetwork log:
//
//   {"ArmNN": {
//     "inference_measurements_#1": {"type": "Event",
//       "Wall clock time_#1": {"type": "Measurement", "raw": [5123.0], "unit": "us"},
//       "Execute_#2": {"type": "Event",
//         "Wall clock time_#2": {...},
//         "NeonConvolution2dWorkload_Execute_#3": {"type": "Event",
//            "Wall clock time_#3": {"type": "Measurement", "raw": [812.5], "unit": "us"}, ...},
//         "CopyMemGeneric_Execute_#4": {...}, ...}}}}
//
// Each workload event under an Execute event is a row (named after its layer when the event
// carries "layer_name"/"LayerName", else after the workload); `raw` holds one value per
// execution (several with repeated inferences), in the `unit` given (µs in practice). Rows
// repeat per inference_measurements block with new event ids: they are matched by position.
// The backend is the workload's prefix (Neon → CpuAcc, Cl → GpuAcc, Ref → CpuRef) or a
// "backendId" field. Keys are read in file order (ordered_json): the order of execution.
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "importers/importer.h"
#include "importers/json_scan.h"

namespace opscope::importers {
namespace {

int Sniff(std::string_view head, const std::string&) {
  if (head.find("\"ArmNN\"") != std::string_view::npos &&
      (head.find("inference_measurements_#") != std::string_view::npos ||
       head.find("Execute_#") != std::string_view::npos))
    return kSniffCertain;
  return kSniffNo;
}

std::string StripId(const std::string& key) {
  size_t h = key.rfind("_#");
  return h == std::string::npos ? key : key.substr(0, h);
}

std::string Backend(const std::string& workload) {
  if (StartsWith(workload, "Neon")) return "CpuAcc";
  if (StartsWith(workload, "Cl")) return "GpuAcc";
  if (StartsWith(workload, "Ref")) return "CpuRef";
  if (StartsWith(workload, "EthosN")) return "EthosNAcc";
  return "";
}

// The "Wall clock time_#N" measurement of an event, in ms per execution.
StatusOr<std::vector<double>> WallClock(const nlohmann::ordered_json& ev,
                                        const std::string& where) {
  for (auto it = ev.begin(); it != ev.end(); ++it) {
    if (!StartsWith(it.key(), "Wall clock time") || !it->is_object()) continue;
    const auto& m = *it;
    double scale = 1e-3;  // µs
    if (m.contains("unit") && m["unit"].is_string()) {
      std::string u = m["unit"].get<std::string>();
      if (u == "ms")
        scale = 1;
      else if (u == "s")
        scale = 1e3;
      else if (u == "ns")
        scale = 1e-6;
    }
    if (!m.contains("raw") || !m["raw"].is_array())
      return DataLoss(where + ": \"" + it.key() + "\" has no \"raw\" array");
    std::vector<double> out;
    for (const auto& v : m["raw"]) {
      if (!v.is_number()) return DataLoss(where + ": a \"raw\" value is not a number");
      double x = v.get<double>();
      OPSCOPE_RETURN_IF_ERROR(util::CheckTime(x, where, "a wall-clock time"));
      out.push_back(x * scale);
    }
    return out;
  }
  return std::vector<double>{};
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  std::string_view text = src.bytes();
  // ExecuteNetwork logs print the JSON among other lines: take the object holding "ArmNN".
  size_t key = text.find("\"ArmNN\"");
  if (key == std::string_view::npos) return DataLoss(origin + ": no \"ArmNN\" object");
  size_t open = text.rfind('{', key);
  if (open == std::string_view::npos) return DataLoss(origin + ": no JSON object around \"ArmNN\"");
  size_t end = json::SkipValue(text, open);
  if (end == std::string_view::npos)
    return DataLoss(origin + ": the Arm NN profile JSON is cut short (truncated file?)");
  nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(text.substr(open, end - open), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ArmNN") || !j["ArmNN"].is_object())
    return DataLoss(origin + ": not valid Arm NN profiler JSON (corrupt file?)");
  profile::Profile p = util::NewProfile("armnn", origin);
  struct Row {
    std::string name, workload, backend;
    std::vector<double> runs;
  };
  std::vector<Row> rows;
  std::map<std::string, int> backends;
  int inferences = 0;
  for (auto inf = j["ArmNN"].begin(); inf != j["ArmNN"].end(); ++inf) {
    if (!StartsWith(inf.key(), "inference_measurements") || !inf->is_object()) continue;
    ++inferences;
    const std::string where = origin + ": " + inf.key();
    OPSCOPE_ASSIGN_OR_RETURN(std::vector<double> total, WallClock(*inf, where));
    for (double t : total) p.e2e.runs_ms.push_back(t);
    for (auto ex = inf->begin(); ex != inf->end(); ++ex) {
      if (!StartsWith(ex.key(), "Execute") || !ex->is_object()) continue;
      size_t pos = 0;
      for (auto w = ex->begin(); w != ex->end(); ++w) {
        if (!w->is_object() || !w->contains("type") || (*w)["type"] != "Event") continue;
        std::string wname = StripId(w.key());
        std::string short_name =
            EndsWith(wname, "_Execute") ? wname.substr(0, wname.size() - 8) : wname;
        OPSCOPE_ASSIGN_OR_RETURN(std::vector<double> t, WallClock(*w, where + "/" + w.key()));
        std::string layer;
        for (const char* k : {"layer_name", "LayerName", "layerName"})
          if (w->contains(k) && (*w)[k].is_string()) layer = (*w)[k].get<std::string>();
        std::string backend = Backend(short_name);
        if (w->contains("backendId") && (*w)["backendId"].is_string())
          backend = (*w)["backendId"].get<std::string>();
        if (pos >= rows.size())
          rows.push_back({layer.empty() ? short_name : layer, short_name, backend, {}});
        Row& r = rows[pos];
        if (r.workload != short_name)
          return DataLoss(where + ": workload #" + std::to_string(pos + 1) + " is '" + short_name +
                          "' but was '" + r.workload +
                          "' in the first inference: the blocks are of different networks");
        double sum = 0;
        for (double x : t) sum += x;
        // One value per inference block (its executions summed).
        r.runs.push_back(sum);
        ++pos;
      }
    }
  }
  if (rows.empty())
    return DataLoss(origin +
                    ": the Arm NN profile has no workload events under an Execute "
                    "event: was profiling enabled for the inference?");
  std::map<std::string, int> names;
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& r = rows[i];
    profile::OpRecord op;
    op.name = r.name;
    if (int n = names[r.name]++; n > 0) op.name += " #" + std::to_string(n + 1);
    op.op_type = r.workload;
    // "NeonConvolution2dWorkload" -> "Convolution2d"
    std::string t = r.workload;
    for (std::string_view pre : {"Neon", "Cl", "Ref", "EthosN"})
      if (StartsWith(t, pre)) t = t.substr(pre.size());
    if (EndsWith(t, "Workload")) t = t.substr(0, t.size() - 8);
    if (!t.empty()) op.op_type = t;
    op.index = static_cast<int>(i);
    op.runs_ms = r.runs;
    op.runs_ms.resize(static_cast<size_t>(inferences), 0.0);
    op.step = r.workload;
    op.attribution = "Arm NN wall clock" + (r.backend.empty() ? "" : " on " + r.backend);
    if (!r.backend.empty()) ++backends[r.backend];
    p.ops.push_back(std::move(op));
  }
  std::vector<std::string> b;
  for (const auto& [name, n] : backends) b.push_back(name + ":" + std::to_string(n));
  if (!b.empty()) p.meta.extra["armnn.backends"] = Join(b, " ");
  p.meta.runs = inferences;
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_armnn = {"armnn", "Arm NN profiler JSON (ExecuteNetwork -e)", Sniff,
                                     Parse};
}  // namespace formats

}  // namespace opscope::importers
