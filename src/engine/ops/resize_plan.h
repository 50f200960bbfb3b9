// Resize's geometry (resize.cc is the kernel): every resized axis gets a plan: for each output
// coordinate, the input taps (1 for nearest, 2 for linear, 4 for cubic), their weights, and
// whether the coordinate falls outside the crop (tf_crop_and_resize → extrapolation_value). The
// coordinate arithmetic follows ONNX's reference implementation, including its use of
// output_width = scale * input_width (a non-integer when scales are given) in align_corners /
// pytorch_half_pixel / tf_crop_and_resize, and its tie-breaking (an integral source coordinate
// takes the right tap with weight 1). Linear and cubic are separable passes, one per resized
// axis; the bilinear case follows ONNX Runtime's arithmetic bit for bit.
#pragma once

#include <cstdint>
#include <vector>

namespace opscope::engine::resize {

inline constexpr int kNhwc[4] = {0, 2, 3,
                                 1};  // physical axis -> logical axis of channels-last data

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNearest,
  kHalfPixelSymmetric
};
enum class Policy { kStretch, kNotLarger, kNotSmaller };
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };

struct Params {
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  float extrapolation = 0.f;
  std::vector<int64_t> axes;  // opset 18: the axes scales/sizes/roi refer to; empty = all
  Policy policy = Policy::kStretch;
  bool antialias = false;  // linear/cubic only
};

struct AxisPlan {
  int64_t in = 0, out = 0;
  int taps = 1;
  std::vector<int64_t> idx;  // out * taps, clamped into [0, in)
  std::vector<float> w;      // out * taps
  std::vector<uint8_t> extrap;
  bool identity = false;
  bool any_extrap = false;
};

// Bilinear resizing of the last two axes in ONNX Runtime's arithmetic. ORT's kernel, the one
// exported models are checked against, maps output coordinates to the input in float, takes the
// weights as float distances to the two neighbours (0.5 each where both are the same pixel at an
// edge) and sums the four products in one expression; the separable passes round differently in
// the last bit. A model that re-quantizes after a Resize (DynamicQuantizeLinear) turns such a bit
// into a whole quantization step, and 100 layers of that into a different result, so this case
// follows ORT's order exactly.
struct Bilinear1D {
  std::vector<int64_t> i1, i2;
  std::vector<float> d1, d2;  // |x - i1|, |x - i2|
};

// The plan of one axis: `in` to `out` elements at `scale`, with the crop [roi_start, roi_end]
// (tf_crop_and_resize).
AxisPlan PlanAxis(const Params& p, int64_t in, int64_t out, double scale, double roi_start,
                  double roi_end);

// Whether a nearest plan maps every output index to the same input index (nothing extrapolated).
bool KeepsEveryIndex(const AxisPlan& a);

// An axis that keeps its size and its values: tap 0 is the same coordinate with weight 1.
AxisPlan IdentityPlan(int64_t n, int taps);

// One separable pass along axis `ax` of a float tensor of shape `shape`.
void LinearPass(const float* in, float* out, const std::vector<int64_t>& shape, int ax,
                const AxisPlan& plan, float extrap);

// Whether the ORT-exact bilinear path applies: linear mode with half_pixel, asymmetric or
// pytorch_half_pixel coordinates, resizing only the last two axes.
bool BilinearOrtApplies(const Params& p, const std::vector<AxisPlan>& plans);

// `scale` as ORT holds it: the scales input as given, or float(out) / float(in) from sizes.
Bilinear1D PlanBilinearOrt(const Params& p, int64_t in, int64_t out, float scale);

// The four-tap bilinear resize of `planes` h x w planes with the ORT weights `ys`, `xs`.
void BilinearOrt(const float* in, float* out, int64_t planes, int64_t h, int64_t w,
                 const Bilinear1D& ys, const Bilinear1D& xs);

// BilinearOrt on channels-last [N, H, W, C] data: the same weights and the same expression per
// element (so the same bits), vectorized over the C contiguous channels of a pixel.
void BilinearOrtNhwc(const float* in, float* out, int64_t n, int64_t h, int64_t w, int64_t c,
                     const Bilinear1D& ys, const Bilinear1D& xs);

// The order of the separable passes that moves the fewest elements, counting a last-axis pass
// (scalar gathers) three times a vectorized inner-axis pass.
std::vector<int> PassOrder(const std::vector<int64_t>& in_shape,
                           const std::vector<AxisPlan>& plans);

}  // namespace opscope::engine::resize
