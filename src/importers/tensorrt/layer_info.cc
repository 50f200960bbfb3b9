#include "importers/tensorrt/layer_info.h"

#include <map>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "importers/tensorrt/layer_names.h"

namespace opscope::importers::trt {
namespace {

void ReadTensors(const nlohmann::json& arr, std::vector<std::vector<int64_t>>* shapes,
                 std::vector<std::string>* formats) {
  if (!arr.is_array()) return;
  for (const auto& t : arr) {
    std::vector<int64_t> dims;
    if (t.is_object() && t.contains("Dimensions") && t["Dimensions"].is_array())
      for (const auto& d : t["Dimensions"])
        dims.push_back(d.is_number_integer() ? d.get<int64_t>() : -1);
    shapes->push_back(std::move(dims));
    if (t.is_object() && t.contains("Format/Datatype") && t["Format/Datatype"].is_string())
      formats->push_back(t["Format/Datatype"].get<std::string>());
  }
}

}  // namespace

bool LooksLikeLayerInfo(std::string_view head) {
  size_t i = head.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && head[i] == '{' &&
         head.find("\"Layers\"") != std::string_view::npos;
}

StatusOr<LayerInfo> ParseLayerInfo(std::string_view text, const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return DataLoss(origin + ": not valid JSON (truncated layer info?)");
  if (!j.is_object() || !j.contains("Layers") || !j["Layers"].is_array())
    return DataLoss(origin +
                    ": not TensorRT layer info (no \"Layers\" array); export it with "
                    "trtexec --exportLayerInfo=FILE --profilingVerbosity=detailed");
  LayerInfo info;
  info.origin = origin;
  for (const auto& l : j["Layers"]) {
    LayerInfoEntry e;
    if (l.is_string()) {
      info.names_only = true;
      e.name = l.get<std::string>();
    } else if (l.is_object() && l.contains("Name") && l["Name"].is_string()) {
      e.name = l["Name"].get<std::string>();
      // ParameterType is the layer's kind (Convolution, Pooling, Shuffle, Reformat); LayerType
      // its implementation (CaskConvolution, CaskPooling, PointWiseV2, Myelin), the only one
      // some layers have. TensorRT's own engine explorer reads them the same way.
      if (l.contains("LayerType") && l["LayerType"].is_string())
        e.implementation = l["LayerType"].get<std::string>();
      if (l.contains("ParameterType") && l["ParameterType"].is_string())
        e.type = l["ParameterType"].get<std::string>();
      if (e.type.empty()) e.type = e.implementation;
      if (l.contains("TacticName") && l["TacticName"].is_string())
        e.tactic = l["TacticName"].get<std::string>();
      if (l.contains("Metadata") && l["Metadata"].is_string())
        e.onnx_nodes = ParseOnnxMetadata(l["Metadata"].get<std::string>());
      std::vector<std::string> in_f, out_f;
      if (l.contains("Inputs")) ReadTensors(l["Inputs"], &e.input_shapes, &in_f);
      if (l.contains("Outputs")) ReadTensors(l["Outputs"], &e.output_shapes, &out_f);
      if (!in_f.empty() || !out_f.empty())
        e.formats = (in_f.empty() ? "?" : in_f[0]) + " -> " + (out_f.empty() ? "?" : out_f[0]);
    } else {
      return DataLoss(origin + ": layer #" + std::to_string(info.layers.size()) +
                      " is neither a name nor an object with \"Name\"");
    }
    info.layers.push_back(std::move(e));
  }
  if (info.layers.empty()) return DataLoss(origin + ": the layer info lists no layers");
  return info;
}

Status ApplyLayerInfo(const LayerInfo& info, profile::Profile* p) {
  std::map<std::string, const LayerInfoEntry*> by_name;
  for (const auto& e : info.layers) by_name.emplace(e.name, &e);
  size_t found = 0;
  for (const auto& op : p->ops) found += by_name.count(op.name);
  if (p->ops.empty() || found * 2 < p->ops.size())
    return InvalidArgument("--layer-info " + info.origin + ": only " + std::to_string(found) +
                           " of the profile's " + std::to_string(p->ops.size()) +
                           " layers are in it: it was exported from another engine than the "
                           "profile (export both from the same trtexec run)");
  for (auto& op : p->ops) {
    auto it = by_name.find(op.name);
    if (it == by_name.end()) continue;
    const LayerInfoEntry& e = *it->second;
    if (!e.type.empty()) op.op_type = e.type;
    if (!e.input_shapes.empty()) op.input_shapes = e.input_shapes;
    if (!e.output_shapes.empty()) op.output_shapes = e.output_shapes;
    for (auto* shapes : {&op.input_shapes, &op.output_shapes})
      for (auto& s : *shapes)
        for (auto& d : s)
          if (d < 0) d = 0;
    if (!e.tactic.empty())
      op.attribution +=
          "; " +
          (e.implementation.empty() || e.implementation == e.type ? std::string()
                                                                  : e.implementation + " ") +
          "tactic " + e.tactic;
    if (!e.onnx_nodes.empty()) op.source_nodes = e.onnx_nodes;  // exact, better than the name
    if (!e.formats.empty()) op.layout = e.formats;
  }
  p->meta.extra["trt.layer_info"] = info.origin + (info.names_only ? " (names only)" : "");
  return Status::Ok();
}

}  // namespace opscope::importers::trt
