// TensorRT layer names, taken apart into the ONNX nodes they came from.
//
// TensorRT names a fused layer after its parts, and the profile (trtexec --exportProfile) and
// layer info (--exportLayerInfo) use those names:
//   "Conv_12 + BatchNormalization_13 + Relu_14"      a chain fused into one kernel
//   "PWN(Clip_3)", "PWN(PWN(/act/Sigmoid), /act/Mul)" PointWise fusion of elementwise nodes
//   "{ForeignNode[/blocks.0/Add.../blocks.3/Mul]}"   a region compiled by Myelin (or run on DLA):
//                                                     every node from the first to the last
//   "Reformatting CopyNode for Input Tensor 0 to X"  a format conversion TensorRT inserted
//   "node_of_out_3"                                   onnx-tensorrt's name for an unnamed node
//                                                     (the tensor it produces)
//   "(Unnamed Layer* 7) [Shuffle]"                    a layer without an ONNX counterpart
//   "/model.2/cv1/act/Mul_output_0 copy", "639 copy"  a copy of a tensor TensorRT inserted
//                                                     (a Concat input it could not write in
//                                                     place): named after the tensor
//   "a + b || c + d"                                  TensorRT 7: parallel layers merged
//   "conv1 + relu1 input reformatter 0"               TensorRT 7's name for a format conversion
// Layer info adds "Metadata": "[ONNX Layer: Conv_12]\x1f[ONNX Layer: Relu_14]" (TensorRT 8.6;
// 10 separates with \x1e), the exact source nodes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace opscope::importers::trt {

struct LayerName {
  enum class Kind { kPlain, kFused, kPointwise, kRegion, kReformat, kUnnamed, kCopy };
  Kind kind = Kind::kPlain;
  std::vector<std::string> parts;  // source node names (or tensor names for node_of_), in order
  // kRegion: the first and last node of each "A...B" range (a single name gives first == last).
  std::vector<std::pair<std::string, std::string>> ranges;
  std::string reformat_target;  // kReformat: the layer the copy feeds; kCopy: the tensor copied
};

LayerName ParseLayerName(std::string_view name);

// "[ONNX Layer: A]\x1f[ONNX Layer: B]" -> {"A", "B"}.
std::vector<std::string> ParseOnnxMetadata(std::string_view metadata);

// "Conv" from "/backbone/conv1/Conv", "Conv_12", "conv1.Conv"; "" when the name says nothing.
std::string GuessOpType(std::string_view part);

}  // namespace opscope::importers::trt
