// Convolution geometry in ONNX terms (conv_geometry.h): attributes read and range-checked,
// auto_pad, pads, strides, dilations, output_shape and output_padding resolved against concrete
// shapes into explicit begin/end padding and output sizes, for the float kernels (conv.cc,
// conv_transpose.cc) and the integer ones (quant_conv.cc).
#include "engine/ops/conv_geometry.h"

#include <algorithm>

#include "engine/ops/common.h"

namespace opscope::engine {

Status ReadConvAttrs(const Node& n, bool transpose, ConvAttrs* a) {
  a->auto_pad = n.attrs.String("auto_pad", "NOTSET");
  if (a->auto_pad != "NOTSET" && a->auto_pad != "SAME_UPPER" && a->auto_pad != "SAME_LOWER" &&
      a->auto_pad != "VALID")
    return NodeError(
        n, "auto_pad '" + a->auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  a->kernel_shape = n.attrs.Ints("kernel_shape");
  a->strides = n.attrs.Ints("strides");
  a->dilations = n.attrs.Ints("dilations");
  a->pads = n.attrs.Ints("pads");
  a->group = n.attrs.Int("group", 1);
  if (a->group < 1) return NodeError(n, "group must be >= 1, got " + std::to_string(a->group));
  for (int64_t s : a->strides)
    if (s < 1) return NodeError(n, "strides must be >= 1");
  for (int64_t d : a->dilations)
    if (d < 1) return NodeError(n, "dilations must be >= 1");
  for (int64_t p : a->pads)
    if (p < 0) return NodeError(n, "pads must be >= 0");
  for (int64_t k : a->kernel_shape)
    if (k < 1) return NodeError(n, "kernel_shape entries must be >= 1");
  if (transpose) {
    a->output_padding = n.attrs.Ints("output_padding");
    a->output_shape = n.attrs.Ints("output_shape");
    for (int64_t p : a->output_padding)
      if (p < 0) return NodeError(n, "output_padding must be >= 0");
  }
  return Status();
}

namespace {
Status SpatialParams(const Node& n, const ConvAttrs& a, const std::vector<int64_t>& kernel,
                     Geometry* g) {
  size_t sp = kernel.size();
  if (!a.kernel_shape.empty() && a.kernel_shape != kernel)
    return NodeError(n, "kernel_shape attribute does not match the weight's spatial dims");
  g->k = kernel;
  g->s = a.strides;
  if (g->s.empty()) g->s.assign(sp, 1);
  g->d = a.dilations;
  if (g->d.empty()) g->d.assign(sp, 1);
  if (g->s.size() != sp)
    return NodeError(n, "strides has " + std::to_string(g->s.size()) + " entries, expected " +
                            std::to_string(sp));
  if (g->d.size() != sp)
    return NodeError(n, "dilations has " + std::to_string(g->d.size()) + " entries, expected " +
                            std::to_string(sp));
  if (!a.pads.empty() && a.pads.size() != 2 * sp)
    return NodeError(n, "pads has " + std::to_string(a.pads.size()) + " entries, expected " +
                            std::to_string(2 * sp));
  return Status();
}

}  // namespace

Status ConvGeometry(const Node& n, const ConvAttrs& a, const std::vector<int64_t>& in,
                    const std::vector<int64_t>& kernel, Geometry* g) {
  OPSCOPE_RETURN_IF_ERROR(SpatialParams(n, a, kernel, g));
  size_t sp = kernel.size();
  g->pb.assign(sp, 0);
  g->pe.assign(sp, 0);
  g->out.assign(sp, 0);
  for (size_t i = 0; i < sp; ++i) {
    // An empty tensor may carry any other dim (a [0, 2^62] weight holds no data): bound the
    // sizes before the arithmetic below, which would overflow.
    if (in[i] > kMaxGeometrySize || g->k[i] > kMaxGeometrySize || g->d[i] > kMaxGeometrySize)
      return NodeError(n, "spatial dim " + std::to_string(i) + ": input " + std::to_string(in[i]) +
                              ", kernel " + std::to_string(g->k[i]) + ", dilation " +
                              std::to_string(g->d[i]) + " out of range");
    int64_t dk = (g->k[i] - 1) * g->d[i] + 1;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      int64_t o = (in[i] + g->s[i] - 1) / g->s[i];
      int64_t total = std::max<int64_t>(0, (o - 1) * g->s[i] + dk - in[i]);
      int64_t small = total / 2;
      g->pb[i] = a.auto_pad == "SAME_UPPER" ? small : total - small;
      g->pe[i] = total - g->pb[i];
    } else if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
      g->pb[i] = a.pads[i];
      g->pe[i] = a.pads[i + sp];
    }
    int64_t span = in[i] + g->pb[i] + g->pe[i] - dk;
    if (span < 0)
      return NodeError(n, "spatial dim " + std::to_string(i) + " of size " + std::to_string(in[i]) +
                              " (padded " + std::to_string(in[i] + g->pb[i] + g->pe[i]) +
                              ") is smaller than the dilated kernel " + std::to_string(dk));
    g->out[i] = span / g->s[i] + 1;
    // One output position along this dim reads only the first window, whatever the stride; give
    // the kernels the smallest stride with that output (span + 1) rather than the model's: oneDNN
    // 2.6 crashed making a 1-D convolution of stride 2^31-1 over 3 columns (model_struct_fuzz).
    if (g->out[i] == 1) g->s[i] = std::min(g->s[i], span + 1);
  }
  return Status();
}

// Transposed geometry. `full[i]` is the unpadded transposed extent; `core[i]` the part of the
// output the primitive produces (the rest is the bias-only tail).
Status ConvTransposeGeometry(const Node& n, const ConvAttrs& a, const std::vector<int64_t>& in,
                             const std::vector<int64_t>& kernel, Geometry* g,
                             std::vector<int64_t>* core) {
  OPSCOPE_RETURN_IF_ERROR(SpatialParams(n, a, kernel, g));
  size_t sp = kernel.size();
  std::vector<int64_t> op = a.output_padding;
  if (op.empty()) op.assign(sp, 0);
  if (op.size() != sp) return NodeError(n, "output_padding has the wrong number of entries");
  std::vector<int64_t> target;
  if (!a.output_shape.empty()) {
    if (a.output_shape.size() < sp) return NodeError(n, "output_shape has too few entries");
    target.assign(a.output_shape.end() - static_cast<long>(sp), a.output_shape.end());
  } else if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
    target.resize(sp);
    for (size_t i = 0; i < sp; ++i) target[i] = in[i] * g->s[i];
  }
  g->pb.assign(sp, 0);
  g->pe.assign(sp, 0);
  g->out.assign(sp, 0);
  core->assign(sp, 0);
  for (size_t i = 0; i < sp; ++i) {
    if (op[i] >= std::max(g->s[i], g->d[i]))
      return NodeError(n, "output_padding must be smaller than the stride or the dilation");
    int64_t dk = (g->k[i] - 1) * g->d[i] + 1;
    int64_t full = g->s[i] * (in[i] - 1) + dk;
    if (!target.empty()) {
      int64_t total = std::max<int64_t>(0, full + op[i] - target[i]);
      if (a.auto_pad == "SAME_UPPER") {
        g->pb[i] = total / 2;
      } else {
        g->pb[i] = total - total / 2;
      }
      g->pe[i] = total - g->pb[i];
      g->out[i] = target[i];
    } else {
      if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
        g->pb[i] = a.pads[i];
        g->pe[i] = a.pads[i + sp];
      }
      g->out[i] = full + op[i] - g->pb[i] - g->pe[i];
    }
    if (g->out[i] < 0)
      return NodeError(
          n, "pads exceed the transposed output size in spatial dim " + std::to_string(i));
    (*core)[i] = std::max<int64_t>(0, std::min(g->out[i], full - g->pb[i]));
  }
  return Status();
}

}  // namespace opscope::engine
