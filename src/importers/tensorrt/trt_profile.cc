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
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
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

std::string TypeFromName(const trt::LayerName& ln) {
  using K = trt::LayerName::Kind;
  switch (ln.kind) {
    case K::kReformat:
      return "Reformat";
    case K::kCopy:
      return "Copy";
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

// One entry of the profile array: the iteration count, or a layer's times (NaN when absent).
struct Entry {
  bool is_count = false;
  int64_t count = 0;
  std::string name;
  double time = std::nan(""), avg = std::nan(""), median = std::nan(""), pct = std::nan("");
  std::string where;
};

StatusOr<std::vector<Entry>> EntriesFromJson(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_array() || j.empty())
    return DataLoss(origin + ": a TensorRT profile is a JSON array starting with {\"count\": N}");
  std::vector<Entry> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& row = j[i];
    Entry e;
    e.where = origin + ": entry #" + std::to_string(i);
    if (!row.is_object()) return DataLoss(e.where + " is not an object");
    if (row.contains("count") && !row.contains("name")) {
      if (!row["count"].is_number_integer() || row["count"].get<int64_t>() < 0)
        return DataLoss(e.where + ": \"count\" is not a non-negative integer");
      e.is_count = true;
      e.count = row["count"].get<int64_t>();
      out.push_back(std::move(e));
      continue;
    }
    if (!row.contains("name") || !row["name"].is_string())
      return DataLoss(e.where + " has no layer \"name\"");
    e.name = row["name"].get<std::string>();
    for (auto [key, dst] : {std::pair{"timeMs", &e.time}, std::pair{"averageMs", &e.avg},
                            std::pair{"medianMs", &e.median}, std::pair{"percentage", &e.pct}}) {
      auto it = row.find(key);
      if (it == row.end()) continue;
      if (!it->is_number())
        return DataLoss(e.where + " ('" + e.name + "'): \"" + key + "\" is not a number");
      *dst = it->get<double>();
    }
    out.push_back(std::move(e));
  }
  return out;
}

// trtexec writes the file line by line with `<<` and does not escape layer names (a name with a
// quote, a backslash or a control character such as TensorRT 10's \x1e makes it invalid JSON) nor
// non-finite numbers ("nan" percentages when every layer took 0 ms). This reads that layout:
//   [
//     { "count" : 625 }
//   , { "name" : "NAME", "timeMs" : 41.4, "averageMs" : 0.066, "medianMs" : 0.065, "percentage"
//   : 1.3 }
//   ]
// The name runs from `"name" : "` to the last `", "timeMs" : ` of its line. nullopt when the
// text is not in that layout (the caller then reports the JSON error).
std::optional<StatusOr<std::vector<Entry>>> EntriesFromTrtexecLines(std::string_view text,
                                                                    const std::string& origin) {
  std::vector<Entry> out;
  size_t pos = 0, line_no = 0;
  bool opened = false, closed = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string line = Trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    const std::string where = origin + ":" + std::to_string(line_no);
    if (closed) return std::nullopt;
    if (line == "[" && !opened) {
      opened = true;
      continue;
    }
    if (!opened) return std::nullopt;
    if (line == "]") {
      closed = true;
      continue;
    }
    if (StartsWith(line, ",")) line = Trim(std::string_view(line).substr(1));
    if (!StartsWith(line, "{") || !EndsWith(line, "}")) return std::nullopt;
    std::string body = Trim(std::string_view(line).substr(1, line.size() - 2));
    Entry e;
    e.where = where;
    std::string_view rest = body;
    if (StartsWith(body, "\"name\" : \"")) {
      size_t name_end = body.rfind("\", \"timeMs\" : ");
      if (name_end == std::string::npos || name_end < 10) return std::nullopt;
      e.name = body.substr(10, name_end - 10);
      rest = std::string_view(body).substr(name_end + 3);
    } else if (!StartsWith(body, "\"count\" : ")) {
      return std::nullopt;
    }
    for (const std::string& kv : Split(rest, ',', true)) {
      std::string k = Trim(kv);
      size_t colon = k.find(" : ");
      if (colon == std::string::npos || k.size() < 2 || k[0] != '"' || k[colon - 1] != '"')
        return std::nullopt;
      std::string key = k.substr(1, colon - 2), v = Trim(std::string_view(k).substr(colon + 3));
      double x = 0;
      // strtod reads "nan", "-nan" and "inf" as std::ostream writes them.
      char* endp = nullptr;
      x = std::strtod(v.c_str(), &endp);
      if (v.empty() || endp != v.c_str() + v.size())
        return StatusOr<std::vector<Entry>>(
            DataLoss(where + ": \"" + key + "\" '" + v + "' is not a number"));
      if (key == "count") {
        if (!(x >= 0 && x < 9e18) || x != std::floor(x))
          return StatusOr<std::vector<Entry>>(
              DataLoss(where + ": \"count\" is not a non-negative integer"));
        e.is_count = true;
        e.count = static_cast<int64_t>(x);
      } else if (key == "timeMs") {
        e.time = x;
      } else if (key == "averageMs") {
        e.avg = x;
      } else if (key == "medianMs") {
        e.median = x;
      } else if (key == "percentage") {
        e.pct = x;
      }
    }
    if (!e.is_count && e.name.empty()) return std::nullopt;
    out.push_back(std::move(e));
  }
  if (!opened) return std::nullopt;
  if (!closed)
    return StatusOr<std::vector<Entry>>(DataLoss(
        origin + ": the TensorRT profile is cut short (no closing \"]\"; truncated file?)"));
  if (out.empty())
    return StatusOr<std::vector<Entry>>(
        DataLoss(origin + ": a TensorRT profile is a JSON array starting with {\"count\": N}"));
  return StatusOr<std::vector<Entry>>(std::move(out));
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  std::string_view text = src.bytes();
  if (StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);  // a BOM (files edited on Windows)
  std::vector<Entry> entries;
  bool raw_layout = false;
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr,
                                           /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    OPSCOPE_ASSIGN_OR_RETURN(entries, EntriesFromJson(j, origin));
  } else {
    auto lines = EntriesFromTrtexecLines(text, origin);
    if (!lines)
      return DataLoss(origin + ": not valid JSON (truncated or corrupt TensorRT profile?)");
    OPSCOPE_ASSIGN_OR_RETURN(entries, std::move(*lines));
    raw_layout = true;
  }
  profile::Profile p = util::NewProfile("tensorrt", origin);
  int64_t count = 0;
  bool has_median = false, nan_pct = false;
  std::set<std::string> seen;
  double pct_sum = 0;
  for (Entry& e : entries) {
    if (e.is_count) {
      count += e.count;  // one per profile in multi-profile files
      continue;
    }
    std::string where = e.where + " ('" + e.name + "')";
    if (e.name.empty()) return DataLoss(where + ": empty layer name");
    if (std::isnan(e.time)) return DataLoss(where + " has no \"timeMs\"");
    if (std::isnan(e.avg) && count == 0 && e.time == 0) e.avg = 0;  // 0 ms / 0 iterations
    if (std::isnan(e.avg)) return DataLoss(where + " has no \"averageMs\" (or it is NaN)");
    OPSCOPE_RETURN_IF_ERROR(util::CheckTime(e.time, where, "\"timeMs\""));
    OPSCOPE_RETURN_IF_ERROR(util::CheckTime(e.avg, where, "\"averageMs\""));
    if (!std::isnan(e.median))
      OPSCOPE_RETURN_IF_ERROR(util::CheckTime(e.median, where, "\"medianMs\""));
    // trtexec divides by the total time: every layer at 0 ms gives "nan" — no share, not an error.
    if (std::isnan(e.pct)) nan_pct = true;
    if (!std::isnan(e.pct))
      OPSCOPE_RETURN_IF_ERROR(util::CheckTime(e.pct, where, "\"percentage\""));
    // trtexec writes one array per optimization profile / stream into the same file in some
    // versions: a repeated name is the same layer again; keep the first.
    if (!seen.insert(e.name).second) {
      p.meta.degradations.push_back("layer '" + e.name + "' appears twice; the second is ignored");
      continue;
    }
    if (std::isfinite(e.pct)) pct_sum += e.pct;
    profile::OpRecord op;
    op.name = e.name;
    trt::LayerName ln = trt::ParseLayerName(e.name);
    op.op_type = TypeFromName(ln);
    // The nodes the name lists (a region's first and last node: the ones between need the model).
    if (ln.kind != trt::LayerName::Kind::kReformat && ln.kind != trt::LayerName::Kind::kUnnamed &&
        ln.kind != trt::LayerName::Kind::kCopy) {
      op.source_nodes = ln.parts;
      for (const auto& [first, last] : ln.ranges) {
        op.source_nodes.push_back(first);
        if (last != first) op.source_nodes.push_back(last);
      }
    }
    op.index = static_cast<int>(p.ops.size());
    op.runs_ms = {e.avg};
    op.step = e.name;
    has_median = has_median || std::isfinite(e.median);
    op.attribution =
        "TensorRT average over the profiled runs" +
        (std::isfinite(e.median) ? " (median " + HumanMs(e.median) + ")" : std::string());
    p.ops.push_back(std::move(op));
  }
  if (p.ops.empty()) return DataLoss(origin + ": the TensorRT profile has no layers");
  if (pct_sum > 100.5)
    return DataLoss(origin + ": layer percentages sum to " + std::to_string(pct_sum) +
                    "% (more than 100): corrupt profile");
  p.meta.runs = count > 0 && count < (1LL << 31) ? static_cast<int>(count) : 0;
  p.meta.extra["trt.iterations"] = std::to_string(count);
  p.meta.extra["trt.layout"] = has_median ? "TensorRT 8+ (medianMs)" : "TensorRT 7 (no medianMs)";
  if (raw_layout)
    p.meta.degradations.push_back(
        "the profile is not valid JSON (trtexec does not escape layer names or NaN); read line by "
        "line in trtexec's layout");
  if (nan_pct) p.meta.degradations.push_back("some layer percentages are NaN (0 ms in total)");
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
