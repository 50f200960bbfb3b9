// TensorRT per-layer profiles as `trtexec --exportProfile=FILE` writes them:
//
//   [
//     { "count" : 625 }
//   , { "name" : "Conv_0 + PWN(Clip_3)", "timeMs" : 41.42, "averageMs" : 0.0663,
//       "medianMs" : 0.0655, "percentage" : 1.36 }
//   , ...
//   ]
//
// `count` is the number of profiled iterations; timeMs their total, averageMs = timeMs / count;
// medianMs appeared in TensorRT 8 (TensorRT 7 files lack it). TensorRT only writes aggregates,
// so each row gets one value per run, the average, and says so. Layer info (--exportLayerInfo,
// trt_layer_info.cc) adds layer types, shapes, tactics and the source ONNX nodes.
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "base/strings.h"
#include "importers/importer.h"
#include "importers/tensorrt/layer_names.h"

namespace opscope::importers {
namespace {

int Sniff(std::string_view head, const std::string&) {
  size_t i = 0;
  while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  if (i >= head.size() || head[i] != '[') return kSniffNo;
  auto has = [&](std::string_view s) { return head.find(s) != std::string_view::npos; };
  if (has("\"averageMs\"") && has("\"timeMs\"")) return kSniffCertain;
  // `[ { "count" : N }` alone (an empty profile): the first object's only key.
  size_t b = head.find('{', i);
  if (b != std::string_view::npos) {
    size_t q = head.find_first_not_of(" \t\r\n", b + 1);
    if (q != std::string_view::npos && head.compare(q, 7, "\"count\"") == 0) return kSniffLikely;
  }
  return kSniffNo;
}

StatusOr<double> Number(const nlohmann::json& row, const char* key, const std::string& where,
                        bool required) {
  auto it = row.find(key);
  if (it == row.end()) {
    if (required) return DataLoss(where + " has no \"" + key + "\"");
    return std::nan("");
  }
  if (!it->is_number()) return DataLoss(where + ": \"" + key + "\" is not a number");
  double v = it->get<double>();
  OPSCOPE_RETURN_IF_ERROR(util::CheckTime(v, where, std::string("\"") + key + "\""));
  return v;
}

std::string TypeFromName(const trt::LayerName& ln) {
  using K = trt::LayerName::Kind;
  switch (ln.kind) {
    case K::kReformat:
      return "Reformat";
    case K::kRegion:
      return "ForeignNode";
    case K::kPointwise:
      return "PointWise";
    case K::kUnnamed:
      return "TensorRT";
    default:
      break;
  }
  if (ln.parts.empty()) return "TensorRT";
  std::string t = trt::GuessOpType(ln.parts.front());
  if (t.empty()) return "TensorRT";
  if (ln.parts.size() > 1) {
    std::string last = trt::GuessOpType(ln.parts.back());
    if (!last.empty() && last != t) t += "+" + last;
  }
  return t;
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  nlohmann::json j = nlohmann::json::parse(src.bytes().begin(), src.bytes().end(), nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded())
    return DataLoss(origin + ": not valid JSON (truncated or corrupt TensorRT profile?)");
  if (!j.is_array() || j.empty())
    return DataLoss(origin + ": a TensorRT profile is a JSON array starting with {\"count\": N}");
  profile::Profile p = util::NewProfile("tensorrt", origin);
  int64_t count = 0;
  bool has_median = false;
  std::set<std::string> seen;
  double pct_sum = 0;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& row = j[i];
    std::string where = origin + ": entry #" + std::to_string(i);
    if (!row.is_object()) return DataLoss(where + " is not an object");
    if (row.contains("count") && !row.contains("name")) {
      if (!row["count"].is_number_integer() || row["count"].get<int64_t>() < 0)
        return DataLoss(where + ": \"count\" is not a non-negative integer");
      count += row["count"].get<int64_t>();  // one per profile in multi-profile files
      continue;
    }
    if (!row.contains("name") || !row["name"].is_string())
      return DataLoss(where + " has no layer \"name\"");
    std::string name = row["name"].get<std::string>();
    where += " ('" + name + "')";
    if (name.empty()) return DataLoss(where + ": empty layer name");
    OPSCOPE_ASSIGN_OR_RETURN(double total, Number(row, "timeMs", where, true));
    OPSCOPE_ASSIGN_OR_RETURN(double avg, Number(row, "averageMs", where, true));
    OPSCOPE_ASSIGN_OR_RETURN(double median, Number(row, "medianMs", where, false));
    OPSCOPE_ASSIGN_OR_RETURN(double pct, Number(row, "percentage", where, false));
    (void)total;
    // trtexec writes one array per optimization profile / stream into the same file in some
    // versions: a repeated name is the same layer again; keep the first.
    if (!seen.insert(name).second) {
      p.meta.degradations.push_back("layer '" + name + "' appears twice; the second is ignored");
      continue;
    }
    if (std::isfinite(pct)) pct_sum += pct;
    profile::OpRecord op;
    op.name = name;
    op.op_type = TypeFromName(trt::ParseLayerName(name));
    op.index = static_cast<int>(p.ops.size());
    op.runs_ms = {avg};
    op.step = name;
    has_median = has_median || std::isfinite(median);
    op.attribution = "TensorRT average over the profiled runs" +
                     (std::isfinite(median) ? " (median " + HumanMs(median) + ")" : std::string());
    p.ops.push_back(std::move(op));
  }
  if (p.ops.empty()) return DataLoss(origin + ": the TensorRT profile has no layers");
  if (pct_sum > 100.5)
    return DataLoss(origin + ": layer percentages sum to " + std::to_string(pct_sum) +
                    "% (more than 100): corrupt profile");
  p.meta.runs = count > 0 && count < (1LL << 31) ? static_cast<int>(count) : 0;
  p.meta.extra["trt.iterations"] = std::to_string(count);
  p.meta.extra["trt.layout"] = has_median ? "TensorRT 8+ (medianMs)" : "TensorRT 7 (no medianMs)";
  p.meta.degradations.push_back(
      "TensorRT profiles hold per-layer averages only: one value per "
      "layer, no run-to-run spread");
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_tensorrt = {"tensorrt", "TensorRT trtexec --exportProfile JSON", Sniff,
                                        Parse};
}  // namespace formats

}  // namespace opscope::importers
