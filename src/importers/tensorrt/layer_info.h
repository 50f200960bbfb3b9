// TensorRT layer info as `trtexec --exportLayerInfo=FILE` writes it (with
// --profilingVerbosity=detailed):
//
//   {"Layers": [{"Name": "Conv_0 + Relu_1", "LayerType": "CaskConvolution",
//                "Inputs": [{"Name": "input", "Location": "Device", "Dimensions": [1,3,224,224],
//                            "Format/Datatype": "Row major linear FP32"}],
//                "Outputs": [...], "TacticName": "...", "Metadata": "[ONNX Layer: Conv_0]..."},
//               ...],
//    "Bindings": ["input", "output"]}
//
// With the default verbosity (layer_names_only) "Layers" is a list of names only.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope::importers::trt {

struct LayerInfoEntry {
  std::string name, type, tactic;
  std::string implementation;  // LayerType ("CaskConvolution"); type is ParameterType when given
  std::vector<std::string> onnx_nodes;  // from Metadata
  std::vector<std::vector<int64_t>> input_shapes, output_shapes;
  std::string formats;  // "FP16 in, FP32 out" style summary of Format/Datatype
};

struct LayerInfo {
  std::string origin;
  bool names_only = false;
  std::vector<LayerInfoEntry> layers;
};

// True when TEXT's head looks like layer info (so `import` can say where it belongs).
bool LooksLikeLayerInfo(std::string_view head);
StatusOr<LayerInfo> ParseLayerInfo(std::string_view text, const std::string& origin);

// Gives every profile row its layer type, shapes and tactic. Refuses layer info that is not of
// this profile's engine: when fewer than half of the profile's layers have an entry.
Status ApplyLayerInfo(const LayerInfo& info, profile::Profile* p);

}  // namespace opscope::importers::trt
