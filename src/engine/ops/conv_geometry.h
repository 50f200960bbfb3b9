// Convolution attributes and geometry in ONNX terms (auto_pad, pads, strides, dilations),
// shared by the float convolutions (conv.cc, conv_transpose.cc) and the integer ones
// (quant_conv.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/graph.h"

namespace opscope::engine {

struct ConvAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel_shape, strides, dilations, pads, output_padding, output_shape;
  int64_t group = 1;
};

// Spatial geometry resolved against concrete shapes: kernel, strides, dilations, begin/end pads
// and output size per spatial dim.
struct Geometry {
  std::vector<int64_t> k, s, d, pb, pe, out;
};

// Reads and range-checks the attributes (an error names the node).
Status ReadConvAttrs(const Node& n, bool transpose, ConvAttrs* a);
// Resolves a forward convolution's geometry for spatial input dims `in` and kernel dims.
Status ConvGeometry(const Node& n, const ConvAttrs& a, const std::vector<int64_t>& in,
                    const std::vector<int64_t>& kernel, Geometry* g);
// Transposed geometry. `full[i]` is the unpadded transposed extent; `core[i]` the part of the
// output the primitive produces (the rest is the bias-only tail).
Status ConvTransposeGeometry(const Node& n, const ConvAttrs& a, const std::vector<int64_t>& in,
                             const std::vector<int64_t>& kernel, Geometry* g,
                             std::vector<int64_t>* core);

}  // namespace opscope::engine
