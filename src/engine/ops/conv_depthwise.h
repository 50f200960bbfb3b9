// Depthwise 1-D and 2-D convolutions (group == C == OC, kernel up to 7x7, stride 1 or 2, no
// dilation; a 1-D one is a plane of one row)
// bypass oneDNN: its depthwise kernels need nhwc/blocked activations, and the two reorders
// around every call cost more than the convolution itself. A direct NCHW stencil per (n, c)
// plane runs instead, in two variants: row by row (out-of-range rows read a zero row, only the
// border columns check bounds), or, for narrow unit-stride planes, one flat loop over a padded
// copy of the plane, which keeps the 14x14 and 7x7 planes of late MobileNet stages in full
// vectors (see DwPlaneGeo::Flat). ConvKernel (conv.cc) picks this path and runs one plane per
// (n, c) through SelectDepthwisePlane's function.
#pragma once

#include <cstdint>

namespace opscope::engine {

constexpr int64_t kMaxDepthwiseKernel = 7;

// Geometry of one depthwise plane: input H x W, output OH x OW, kernel KH x KW, strides, top and
// left pads (the bottom/right pads only show in OH/OW).
struct DwPlaneGeo {
  int64_t H, W, OH, OW, KH, KW, SH, SW, pt, pl;

  // Unit-stride planes up to this output width take the flat path (DepthwisePlaneFlat); wider
  // ones and strided ones go row by row (DepthwisePlaneRows). On the MobileNet-style benchmark
  // model the flat path is 1.3-1.4x faster on 7x7 to 56x56 planes and 1.2x slower on 112x112.
  static constexpr int64_t kFlatMaxWidth = 64;
  bool Flat() const { return SH == 1 && SW == 1 && OW <= kFlatMaxWidth; }
  // Flat path: the plane with its padding made explicit is Hp x Wp; the stencil computes
  // FlatOutputs() outputs (a multiple of 8, so no vector remainder loop runs with 4 or 8
  // lanes), reading at most 8 floats past the padded plane.
  int64_t Hp() const { return OH + KH - 1; }
  int64_t Wp() const { return OW + KW - 1; }
  int64_t FlatOutputs() const { return ((OH - 1) * Wp() + OW + 7) / 8 * 8; }
  int64_t StageFloats() const { return Flat() ? Hp() * Wp() + 8 : 0; }
  int64_t OutFloats() const { return Flat() ? FlatOutputs() : 0; }
};

// One output plane: y = bias + stencil(x, w), through the flat or the row-by-row path as
// `g` says. `zeros` is a zero row of width g.W; `stage` and `obuf` are g.StageFloats() and
// g.OutFloats() floats of per-thread scratch (the stage zeroed once per call).
using DepthwisePlaneFn = void (*)(const float* x, const float* w, float bias, const float* zeros,
                                  const DwPlaneGeo& g, float* stage, float* obuf, float* y);

// The plane function for this CPU (AVX-512, AVX2+FMA or baseline; the flat path never uses
// AVX-512, see conv_depthwise.cc).
DepthwisePlaneFn SelectDepthwisePlane(bool flat);

}  // namespace opscope::engine
