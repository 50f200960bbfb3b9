// Resize (opset 10, 11-21) and Upsample (opset 7-9).
//
// Opset 18 added `axes` (scales, sizes and roi then cover only the listed axes; the others keep
// their size), `keep_aspect_ratio_policy` (with sizes: not_larger / not_smaller use one scale,
// the smallest / largest of sizes[i] / input[i] over those axes, and round each output size to
// the nearest integer, halves up) and `antialias`, which the engine does not implement: it only
// changes linear and cubic downscaling, so a node with antialias=1 runs in nearest mode and when
// upscaling, and fails naming the node when it would downscale. Opset 19 added the
// half_pixel_symmetric coordinate mode.
//
// Every resized axis gets a plan: for each output coordinate, the input taps (1 for nearest, 2
// for linear, 4 for cubic), their weights, and whether the coordinate falls outside the crop
// (tf_crop_and_resize → extrapolation_value). The coordinate arithmetic follows ONNX's reference
// implementation, including its use of output_width = scale * input_width (a non-integer when
// scales are given) in align_corners / pytorch_half_pixel / tf_crop_and_resize, and its
// tie-breaking (an integral source coordinate takes the right tap with weight 1).
//
// Nearest is one N-D gather by element size (any dtype). Linear and cubic are separable and run
// as one pass per resized axis (float32), each pass vectorized over the contiguous inner block;
// this equals the reference's recursive 1-D interpolation up to float rounding.
//
// Upsample and Resize-10 have no coordinate_transformation_mode; like ONNX Runtime we use
// asymmetric coordinates, and for nearest floor when upsampling and ceil when downsampling.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"
#include "engine/ops/region_layout.h"

namespace opscope::engine {
namespace {

constexpr int kNhwc[4] = {0, 2, 3, 1};  // physical axis -> logical axis of channels-last data

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

AxisPlan PlanAxis(const Params& p, int64_t in, int64_t out, double scale, double roi_start,
                  double roi_end) {
  AxisPlan a;
  a.in = in;
  a.out = out;
  a.taps = p.mode == Mode::kNearest ? 1 : p.mode == Mode::kLinear ? 2 : 4;
  a.idx.resize(static_cast<size_t>(out * a.taps));
  a.w.resize(static_cast<size_t>(out * a.taps));
  a.extrap.assign(static_cast<size_t>(out), 0);
  const double out_width = scale * static_cast<double>(in);
  const double A = p.cubic_a;
  bool identity = in == out;
  for (int64_t x = 0; x < out; ++x) {
    const double xr = static_cast<double>(x);
    double xo = 0;
    switch (p.coord) {
      case Coord::kHalfPixel:
        xo = (xr + 0.5) / scale - 0.5;
        break;
      case Coord::kHalfPixelSymmetric: {
        // Half-pixel about the centre of the input: the rounding of out_width to an integer
        // is spread over both ends instead of landing at the far end.
        const double adjustment = static_cast<double>(out) / out_width;
        const double offset = static_cast<double>(in) / 2 * (1 - adjustment);
        xo = offset + (xr + 0.5) / scale - 0.5;
        break;
      }
      case Coord::kPytorchHalfPixel:
        xo = out_width == 1 ? -0.5 : (xr + 0.5) / scale - 0.5;
        break;
      case Coord::kAlignCorners:
        xo = out_width == 1 ? 0 : xr * static_cast<double>(in - 1) / (out_width - 1);
        break;
      case Coord::kAsymmetric:
        xo = xr / scale;
        break;
      case Coord::kTfHalfPixelForNearest:
        xo = (xr + 0.5) / scale;
        break;
      case Coord::kTfCropAndResize:
        xo = out_width == 1
                 ? (roi_end - roi_start) * static_cast<double>(in - 1) / 2
                 : xr * (roi_end - roi_start) * static_cast<double>(in - 1) / (out_width - 1);
        xo += roi_start * static_cast<double>(in - 1);
        if (xo < 0 || xo > static_cast<double>(in - 1)) {
          a.extrap[x] = 1;
          a.any_extrap = true;
          identity = false;
        }
        break;
    }
    double fl = std::floor(xo);
    double ratio = xo - fl;
    int64_t x0 = static_cast<int64_t>(fl);
    if (ratio == 0) {  // the reference takes the left neighbour with ratio 1
      x0 -= 1;
      ratio = 1;
    }
    auto clampi = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    int64_t* ix = &a.idx[x * a.taps];
    float* wx = &a.w[x * a.taps];
    if (p.mode == Mode::kNearest) {
      bool right = false;
      switch (p.nearest) {
        case Nearest::kRoundPreferFloor:
          right = ratio > 0.5;
          break;
        case Nearest::kRoundPreferCeil:
          right = ratio >= 0.5;
          break;
        case Nearest::kFloor:
          right = ratio == 1;
          break;
        case Nearest::kCeil:
          right = true;
          break;
        case Nearest::kLegacy:
          right = scale < 1 ? true : ratio == 1;  // ceil when downsampling, floor otherwise
          break;
      }
      ix[0] = clampi(x0 + (right ? 1 : 0));
      wx[0] = 1;
      if (ix[0] != x) identity = false;
    } else if (p.mode == Mode::kLinear) {
      ix[0] = clampi(x0);
      ix[1] = clampi(x0 + 1);
      wx[0] = static_cast<float>(1 - ratio);
      wx[1] = static_cast<float>(ratio);
      if (!(ratio == 1 && ix[1] == x)) identity = false;
    } else {
      const double r = ratio, s = 1 - ratio;
      double c[4] = {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
                     ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * s - (A + 3)) * s * s + 1,
                     ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
      if (p.exclude_outside) {
        double sum = 0;
        for (int k = 0; k < 4; ++k) {
          const int64_t i = x0 - 1 + k;
          if (i < 0 || i >= in) c[k] = 0;
          sum += c[k];
        }
        if (sum != 0)
          for (double& v : c) v /= sum;
      }
      for (int k = 0; k < 4; ++k) {
        ix[k] = clampi(x0 - 1 + k);
        wx[k] = static_cast<float>(c[k]);
      }
      if (!(ratio == 1 && ix[2] == x && c[0] == 0 && c[1] == 0 && c[3] == 0)) identity = false;
    }
  }
  a.identity = identity;
  return a;
}

// Whether a nearest plan maps every output index to the same input index (nothing extrapolated).
bool KeepsEveryIndex(const AxisPlan& a) { return a.taps == 1 && a.identity && !a.any_extrap; }

// An axis that keeps its size and its values: tap 0 is the same coordinate with weight 1.
AxisPlan IdentityPlan(int64_t n, int taps) {
  AxisPlan a;
  a.in = a.out = n;
  a.taps = taps;
  a.idx.assign(static_cast<size_t>(n * taps), 0);
  a.w.assign(static_cast<size_t>(n * taps), 0.f);
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < taps; ++k) a.idx[i * taps + k] = i;
    a.w[i * taps] = 1.f;
  }
  a.extrap.assign(static_cast<size_t>(n), 0);
  a.identity = true;
  return a;
}

// Last-axis pass: every output is a T-tap dot product gathered from its input row.
template <int T>
void LastAxisPass(const float* in, float* out, int64_t rows, const AxisPlan& plan, float extrap) {
  const int64_t n_in = plan.in, n_out = plan.out;
  const int64_t* idx = plan.idx.data();
  const float* w = plan.w.data();
  const uint8_t* ex = plan.extrap.data();
  const bool any_ex = plan.any_extrap;
  ParallelFor(rows, n_out * T * 2, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const float* src = in + o * n_in;
      float* dst = out + o * n_out;
      for (int64_t x = 0; x < n_out; ++x) {
        const int64_t* ix = idx + x * T;
        const float* wx = w + x * T;
        float acc = 0;
        for (int k = 0; k < T; ++k) acc += wx[k] * src[ix[k]];
        dst[x] = acc;
      }
      if (any_ex)
        for (int64_t x = 0; x < n_out; ++x)
          if (ex[x]) dst[x] = extrap;
    }
  });
}

// One separable pass along axis `ax` of a float tensor of shape `shape`.
void LinearPass(const float* in, float* out, const std::vector<int64_t>& shape, int ax,
                const AxisPlan& plan, float extrap) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < ax; ++d) outer *= shape[d];
  for (size_t d = ax + 1; d < shape.size(); ++d) inner *= shape[d];
  const int T = plan.taps;
  if (inner == 1) {
    if (T == 2)
      LastAxisPass<2>(in, out, outer, plan, extrap);
    else
      LastAxisPass<4>(in, out, outer, plan, extrap);
    return;
  }
  // Inner axes: each output row is a weighted sum of T contiguous input rows (vectorized).
  const int64_t n_in = plan.in, n_out = plan.out;
  ParallelFor(outer * n_out, inner * T * 2, [&](int64_t b, int64_t e) {
    for (int64_t it = b; it < e; ++it) {
      const int64_t o = it / n_out, x = it - o * n_out;
      float* dst = out + it * inner;
      if (plan.extrap[x]) {
        std::fill_n(dst, inner, extrap);
        continue;
      }
      const float* base = in + o * n_in * inner;
      const int64_t* ix = &plan.idx[x * T];
      const float* wx = &plan.w[x * T];
      const float* s0 = base + ix[0] * inner;
      const float w0 = wx[0];
      for (int64_t j = 0; j < inner; ++j) dst[j] = w0 * s0[j];
      for (int k = 1; k < T; ++k) {
        const float* sk = base + ix[k] * inner;
        const float wk = wx[k];
        if (wk == 0) continue;
        for (int64_t j = 0; j < inner; ++j) dst[j] += wk * sk[j];
      }
    }
  });
}

// Bilinear resizing of the last two axes in ONNX Runtime's arithmetic. ORT's kernel, the one
// exported models are checked against, maps output coordinates to the input in float, takes the
// weights as float distances to the two neighbours (0.5 each where both are the same pixel at an
// edge) and sums the four products in one expression; the separable passes above round
// differently in the last bit. A model that re-quantizes after a Resize (DynamicQuantizeLinear)
// turns such a bit into a whole quantization step, and 100 layers of that into a different
// result, so this case follows ORT's order exactly.
struct Bilinear1D {
  std::vector<int64_t> i1, i2;
  std::vector<float> d1, d2;  // |x - i1|, |x - i2|
};

bool BilinearOrtApplies(const Params& p, const std::vector<AxisPlan>& plans) {
  const size_t r = plans.size();
  // antialias=1 changes nothing when upscaling (downscaling with it is refused before this).
  if (p.mode != Mode::kLinear || r < 2) return false;
  // align_corners stays on the reference's mapping: with `scales` ONNX divides by the fractional
  // output width (conformance data), ORT by the integral one.
  if (p.coord != Coord::kHalfPixel && p.coord != Coord::kAsymmetric &&
      p.coord != Coord::kPytorchHalfPixel)
    return false;
  for (size_t d = 0; d + 2 < r; ++d)
    if (!plans[d].identity || plans[d].in != plans[d].out) return false;
  return !plans[r - 1].identity || !plans[r - 2].identity;
}

// `scale` as ORT holds it: the scales input as given, or float(out) / float(in) from sizes.
Bilinear1D PlanBilinearOrt(const Params& p, int64_t in, int64_t out, float scale) {
  Bilinear1D b;
  b.i1.resize(out);
  b.i2.resize(out);
  b.d1.resize(out);
  b.d2.resize(out);
  const float fin = static_cast<float>(in), fout = static_cast<float>(out);
  for (int64_t x = 0; x < out; ++x) {
    const float xr = static_cast<float>(x);
    float xo = xr;
    if (scale != 1.0f) {
      switch (p.coord) {
        case Coord::kHalfPixel:
          xo = ((xr + 0.5f) / scale) - 0.5f;
          break;
        case Coord::kAsymmetric:
          xo = xr / scale;
          break;
        default:
          xo = fout > 1 ? (xr + 0.5f) / scale - 0.5f : 0.0f;
          break;  // pytorch_half_pixel
      }
    }
    xo = std::max(0.0f, std::min(xo, fin - 1));
    const int64_t i1 = std::min(static_cast<int64_t>(xo), in - 1);
    const int64_t i2 = std::min(i1 + 1, in - 1);
    b.i1[x] = i1;
    b.i2[x] = i2;
    b.d1[x] = i1 == i2 ? 0.5f : std::fabs(xo - static_cast<float>(i1));
    b.d2[x] = i1 == i2 ? 0.5f : std::fabs(xo - static_cast<float>(i2));
  }
  return b;
}

void BilinearOrt(const float* in, float* out, int64_t planes, int64_t h, int64_t w,
                 const Bilinear1D& ys, const Bilinear1D& xs) {
  const int64_t oh = static_cast<int64_t>(ys.i1.size()), ow = static_cast<int64_t>(xs.i1.size());
  ParallelFor(planes * oh, ow * 8, [&](int64_t b, int64_t e) {
    for (int64_t it = b; it < e; ++it) {
      const int64_t plane = it / oh, y = it - plane * oh;
      const float* row1 = in + (plane * h + ys.i1[y]) * w;
      const float* row2 = in + (plane * h + ys.i2[y]) * w;
      const float dy1 = ys.d1[y], dy2 = ys.d2[y];
      float* dst = out + it * ow;
      for (int64_t x = 0; x < ow; ++x) {
        const float dx1 = xs.d1[x], dx2 = xs.d2[x];
        const float x11 = row1[xs.i1[x]], x21 = row1[xs.i2[x]];
        const float x12 = row2[xs.i1[x]], x22 = row2[xs.i2[x]];
        dst[x] = dx2 * dy2 * x11 + dx1 * dy2 * x21 + dx2 * dy1 * x12 + dx1 * dy1 * x22;
      }
    }
  });
}

// BilinearOrt on channels-last [N, H, W, C] data: the same weights and the same expression per
// element (so the same bits), vectorized over the C contiguous channels of a pixel.
void BilinearOrtNhwc(const float* in, float* out, int64_t n, int64_t h, int64_t w, int64_t c,
                     const Bilinear1D& ys, const Bilinear1D& xs) {
  const int64_t oh = static_cast<int64_t>(ys.i1.size()), ow = static_cast<int64_t>(xs.i1.size());
  ParallelFor(n * oh, ow * c * 8, [&](int64_t b, int64_t e) {
    for (int64_t it = b; it < e; ++it) {
      const int64_t img = it / oh, y = it - img * oh;
      const float* row1 = in + (img * h + ys.i1[y]) * w * c;
      const float* row2 = in + (img * h + ys.i2[y]) * w * c;
      const float dy1 = ys.d1[y], dy2 = ys.d2[y];
      float* dst = out + it * ow * c;
      for (int64_t x = 0; x < ow; ++x, dst += c) {
        const float dx1 = xs.d1[x], dx2 = xs.d2[x];
        const float w11 = dx2 * dy2, w21 = dx1 * dy2, w12 = dx2 * dy1, w22 = dx1 * dy1;
        const float* x11 = row1 + xs.i1[x] * c;
        const float* x21 = row1 + xs.i2[x] * c;
        const float* x12 = row2 + xs.i1[x] * c;
        const float* x22 = row2 + xs.i2[x] * c;
        for (int64_t k = 0; k < c; ++k)
          dst[k] = w11 * x11[k] + w21 * x21[k] + w12 * x12[k] + w22 * x22[k];
      }
    }
  });
}

// The order of the separable passes that moves the fewest elements, counting a last-axis pass
// (scalar gathers) three times a vectorized inner-axis pass.
std::vector<int> PassOrder(const std::vector<int64_t>& in_shape,
                           const std::vector<AxisPlan>& plans) {
  std::vector<int> axes;
  for (size_t d = 0; d < plans.size(); ++d)
    if (!plans[d].identity) axes.push_back(static_cast<int>(d));
  std::vector<int> best = axes, perm = axes;
  double best_cost = -1;
  const int last = static_cast<int>(in_shape.size()) - 1;
  do {
    std::vector<int64_t> s = in_shape;
    double cost = 0;
    for (int a : perm) {
      s[a] = plans[a].out;
      cost += static_cast<double>(Numel(s)) * (a == last ? 3 : 1);
    }
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best = perm;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

class ResizeKernel : public Kernel {
 public:
  ResizeKernel(const Node& n, Params p, bool legacy) : node_(n), p_(p), legacy_(legacy) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "missing required input 'X'");
    const int r = x->rank();
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    std::vector<double> roi;
    OPSCOPE_RETURN_IF_ERROR(ReadScalesSizes(ctx, x->shape(), &scales, &sizes, &roi));
    std::vector<int64_t> out_shape(r);
    for (int d = 0; d < r; ++d) {
      if (!sizes.empty()) {
        out_shape[d] = sizes[d];  // scales[d] set by ReadScalesSizes
      } else {
        const double o = std::floor(scales[d] * static_cast<double>(x->dim(d)));
        if (o > 1e12) return NodeError(node_, "output size overflows");
        out_shape[d] = static_cast<int64_t>(o);
      }
    }
    int64_t total;
    if (!CheckedNumel(out_shape, &total)) return NodeError(node_, "output size overflows");
    for (int d = 0; d < r && p_.antialias; ++d)
      if (scales[d] < 1)
        return Unsupported("node '" + node_.name + "' (" + node_.op_type +
                           "): antialias=1 downscaling (axis " + std::to_string(d) + ", scale " +
                           std::to_string(scales[d]) +
                           ") is not supported by the engine; re-export with antialias=0 "
                           "(e.g. torch's interpolate(..., antialias=False))");
    if (p_.mode != Mode::kNearest && x->dtype() != DataType::kFloat32)
      return NodeError(node_, std::string("linear and cubic modes support float32 only, got ") +
                                  DataTypeName(x->dtype()));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x->dtype(), out_shape));
    if (total == 0) return Status::Ok();
    if (x->numel() == 0)
      return NodeError(node_, "cannot resize an empty input to a non-empty output");
    std::vector<AxisPlan> plans(r);
    for (int d = 0; d < r; ++d)
      plans[d] = PlanAxis(p_, x->dim(d), out_shape[d], scales[d], roi.empty() ? 0 : roi[d],
                          roi.empty() ? 1 : roi[d + r]);
    // Channels-last (SetChannelsLast): the bytes of X and Y are [N, H, W, C]. Resizing is
    // separable per axis, so the same gather and passes run on the physical axis order.
    // nChw8c (region_layout.h) is N * C/8 NHWC images of 8 channels: the same, over the
    // physical shape [N * C/8, H, W, 8] (the layout pass plans only resizes that keep N and C).
    const bool blocked = cl_ && r == 4 && RegionLayoutFor(x->dim(1)) == RegionLayout::kNChw8c;
    // (A crop of the batch or channel axis by roi, sizes unchanged, would need NHWC.)
    if (blocked &&
        !(plans[0].identity && plans[1].identity && !plans[0].any_extrap && !plans[1].any_extrap))
      return NodeError(node_,
                       "a resize inside an nChw8c region must keep the batch and channel "
                       "axes as they are (run with OPSCOPE_REGION_LAYOUT=nhwc)");
    std::vector<int64_t> in_phys = x->shape(), out_phys = out_shape;
    std::vector<AxisPlan> plans_phys = plans;
    if (cl_ && r == 4)
      for (int d = 0; d < 4; ++d) {
        in_phys[d] = x->dim(kNhwc[d]);
        out_phys[d] = out_shape[kNhwc[d]];
        plans_phys[d] = plans[kNhwc[d]];
      }
    if (blocked) {
      in_phys[0] = out_phys[0] = x->dim(0) * x->dim(1) / 8;
      in_phys[3] = out_phys[3] = 8;
      plans_phys[0] = IdentityPlan(in_phys[0], plans[0].taps);
      plans_phys[3] = IdentityPlan(8, plans[1].taps);
    }
    if (p_.mode == Mode::kNearest) {
      if (r == 0) {
        CopyTensorData(*x, y);
        return Status::Ok();
      }
      // Trailing axes that keep their size (the channels of channels-last data) join the axis
      // before them, so each gathered row is W * C elements long instead of C.
      while (in_phys.size() > 1 && KeepsEveryIndex(plans_phys.back())) {
        const int64_t c = in_phys.back();
        in_phys.pop_back();
        out_phys.pop_back();
        plans_phys.pop_back();
        AxisPlan& prev = plans_phys.back();
        AxisPlan merged;
        merged.in = prev.in * c;
        merged.out = prev.out * c;
        merged.idx.resize(static_cast<size_t>(merged.out));
        merged.extrap.resize(static_cast<size_t>(merged.out));
        for (int64_t o = 0; o < prev.out; ++o)
          for (int64_t k = 0; k < c; ++k) {
            merged.idx[o * c + k] = prev.idx[o] * c + k;
            merged.extrap[o * c + k] = prev.extrap[o];
          }
        merged.any_extrap = prev.any_extrap;
        prev = std::move(merged);
        in_phys.back() *= c;
        out_phys.back() *= c;
      }
      NearestGather(x->raw(), in_phys, y->raw(), out_phys, x->dtype(), plans_phys);
      return Status::Ok();
    }
    if (BilinearOrtApplies(p_, plans)) {
      const int64_t h = x->dim(r - 2), w = x->dim(r - 1);
      const int64_t oh = out_shape[r - 2], ow = out_shape[r - 1];
      auto ort_scale = [&](int d, int64_t in, int64_t out) {
        return sizes.empty() || p_.policy != Policy::kStretch
                   ? static_cast<float>(scales[d])
                   : static_cast<float>(out) / static_cast<float>(in);
      };
      const Bilinear1D ys = PlanBilinearOrt(p_, h, oh, ort_scale(r - 2, h, oh));
      const Bilinear1D xs = PlanBilinearOrt(p_, w, ow, ort_scale(r - 1, w, ow));
      if (cl_ && r == 4)
        BilinearOrtNhwc(x->data<float>(), y->data<float>(), in_phys[0], h, w, in_phys[3], ys, xs);
      else
        BilinearOrt(x->data<float>(), y->data<float>(), x->numel() / (h * w), h, w, ys, xs);
      return Status::Ok();
    }
    std::vector<int> axes = PassOrder(in_phys, plans_phys);
    if (axes.empty()) {
      CopyTensorData(*x, y);
      return Status::Ok();
    }
    std::vector<int64_t> shape = in_phys;
    const float* src = x->data<float>();
    std::unique_ptr<float[]> buf[2];
    for (size_t k = 0; k < axes.size(); ++k) {
      const int ax = axes[k];
      std::vector<int64_t> next = shape;
      next[ax] = plans_phys[ax].out;
      float* dst;
      if (k + 1 == axes.size()) {
        dst = y->data<float>();
      } else {
        buf[k % 2].reset(new float[static_cast<size_t>(Numel(next))]);
        dst = buf[k % 2].get();
      }
      LinearPass(src, dst, shape, ax, plans_phys[ax], p_.extrapolation);
      src = dst;
      shape = next;
    }
    return Status::Ok();
  }

  // Inside a channels-last region X and Y are both NHWC or nChw8c (4-D float inputs only: the
  // session asks for nothing else); the output follows the input's layout.
  bool SetChannelsLast(bool input, bool output) override {
    // tf_crop_and_resize may crop any axis by roi (the channels too): it stays NCHW.
    if (input != output || (input && p_.coord == Coord::kTfCropAndResize)) return false;
    cl_ = input;
    return true;
  }

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    // Linear/cubic: a multiply-add (2 FLOPs) per tap per output element of each resized axis's
    // pass, counted on the final output size. Nearest: no arithmetic.
    Cost c{0, CompulsoryBytes(in, out)};
    if (in.empty() || out.empty() || p_.mode == Mode::kNearest) return c;
    const int taps = p_.mode == Mode::kLinear ? 2 : 4;
    int resized = 0;
    for (size_t d = 0; d < in[0].shape.size() && d < out[0].shape.size(); ++d)
      resized += in[0].shape[d] != out[0].shape[d];
    c.flops = static_cast<double>(out[0].numel()) * 2.0 * taps * resized;
    return c;
  }

 private:
  // Reads scales or sizes (and roi) as full-rank vectors. With sizes, scales are the factors the
  // coordinate mapping uses: sizes[d] / input[d], or the aspect-keeping policy's one scale.
  Status ReadScalesSizes(const KernelContext& ctx, const std::vector<int64_t>& in_shape,
                         std::vector<double>* scales, std::vector<int64_t>* sizes,
                         std::vector<double>* roi) const {
    const int rank = static_cast<int>(in_shape.size());
    // Opset 18 axes: the inputs hold one value per listed axis (roi: starts then ends).
    std::vector<int> axes;
    for (int64_t a : p_.axes) {
      int64_t ax = a;
      if (!NormalizeAxis(&ax, rank))
        return NodeError(node_, "axis " + std::to_string(a) + " is out of range for rank " +
                                    std::to_string(rank));
      for (int b : axes)
        if (b == ax)
          return NodeError(node_, "axis " + std::to_string(a) + " is repeated in 'axes'");
      axes.push_back(static_cast<int>(ax));
    }
    if (axes.empty())
      for (int d = 0; d < rank; ++d) axes.push_back(d);
    const int r = static_cast<int>(axes.size());
    const Tensor* st = nullptr;
    const Tensor* zt = nullptr;
    if (legacy_) {
      if (node_.op_type == "Upsample" && node_.opset < 9) {
        std::vector<float> f = node_.attrs.Floats("scales");
        scales->assign(f.begin(), f.end());
      } else {
        st = ctx.input(1);
        if (!st) return NodeError(node_, "missing required input 'scales'");
      }
    } else {
      if (const Tensor* rt = ctx.input(1); rt && rt->numel() > 0) {
        if (rt->dtype() == DataType::kFloat32) {
          for (int64_t i = 0; i < rt->numel(); ++i) roi->push_back(rt->data<float>()[i]);
        } else if (rt->dtype() == DataType::kFloat64) {
          for (int64_t i = 0; i < rt->numel(); ++i) roi->push_back(rt->data<double>()[i]);
        } else {
          return NodeError(node_, "roi must be float");
        }
      }
      st = ctx.input(2);
      zt = ctx.input(3);
      if (zt && zt->numel() == 0) zt = nullptr;
      if (st && st->numel() == 0) st = nullptr;
      if (st && zt) return NodeError(node_, "give either 'scales' or 'sizes', not both");
      if (!st && !zt) return NodeError(node_, "needs a non-empty 'scales' or 'sizes' input");
      if (p_.coord == Coord::kTfCropAndResize && static_cast<int>(roi->size()) != 2 * r)
        return NodeError(node_, "tf_crop_and_resize needs 'roi' with " + std::to_string(2 * r) +
                                    " values, got " + std::to_string(roi->size()));
    }
    if (st) {
      if (st->dtype() != DataType::kFloat32) return NodeError(node_, "scales must be float32");
      for (int64_t i = 0; i < st->numel(); ++i) scales->push_back(st->data<float>()[i]);
    }
    if (zt) {
      if (zt->dtype() != DataType::kInt64) return NodeError(node_, "sizes must be int64");
      *sizes = ReadInts(*zt);
      if (static_cast<int>(sizes->size()) != r)
        return NodeError(node_, "'sizes' has " + std::to_string(sizes->size()) + " values for " +
                                    AxesText(r, rank));
      for (int64_t s : *sizes)
        if (s < 0) return NodeError(node_, "negative output size " + std::to_string(s));
      std::vector<double> ratio(static_cast<size_t>(r), 1.0);
      for (int k = 0; k < r; ++k) {
        const int64_t in = in_shape[axes[k]];
        ratio[k] = in > 0 ? static_cast<double>((*sizes)[k]) / static_cast<double>(in) : 1.0;
      }
      if (p_.policy != Policy::kStretch && r > 0) {
        const double keep = p_.policy == Policy::kNotLarger
                                ? *std::min_element(ratio.begin(), ratio.end())
                                : *std::max_element(ratio.begin(), ratio.end());
        for (int k = 0; k < r; ++k) {
          ratio[k] = keep;
          (*sizes)[k] = static_cast<int64_t>(keep * static_cast<double>(in_shape[axes[k]]) + 0.5);
        }
      }
      std::vector<int64_t> full_sizes = in_shape;
      scales->assign(static_cast<size_t>(rank), 1.0);
      for (int k = 0; k < r; ++k) {
        full_sizes[axes[k]] = (*sizes)[k];
        (*scales)[axes[k]] = ratio[k];
      }
      *sizes = std::move(full_sizes);
      return ExpandRoi(axes, rank, roi);
    }
    if (static_cast<int>(scales->size()) != r)
      return NodeError(node_, "'scales' has " + std::to_string(scales->size()) + " values for " +
                                  AxesText(r, rank));
    for (double s : *scales)
      if (!(s > 0)) return NodeError(node_, "scales must be positive, got " + std::to_string(s));
    std::vector<double> full(static_cast<size_t>(rank), 1.0);
    for (int k = 0; k < r; ++k) full[axes[k]] = (*scales)[k];
    *scales = std::move(full);
    return ExpandRoi(axes, rank, roi);
  }

  std::string AxesText(int r, int rank) const {
    return p_.axes.empty() ? "an input of rank " + std::to_string(rank)
                           : std::to_string(r) + " axes in 'axes'";
  }

  // roi over the listed axes ([starts, ends]) to the full rank (0 and 1 elsewhere).
  Status ExpandRoi(const std::vector<int>& axes, int rank, std::vector<double>* roi) const {
    if (roi->empty() || p_.axes.empty()) return Status::Ok();
    const size_t r = axes.size();
    if (roi->size() != 2 * r)
      return NodeError(node_, "'roi' has " + std::to_string(roi->size()) + " values, expected " +
                                  std::to_string(2 * r) + " (starts and ends of 'axes')");
    std::vector<double> full(2 * static_cast<size_t>(rank), 0.0);
    for (int d = 0; d < rank; ++d) full[rank + d] = 1.0;
    for (size_t k = 0; k < r; ++k) {
      full[axes[k]] = (*roi)[k];
      full[rank + axes[k]] = (*roi)[r + k];
    }
    *roi = std::move(full);
    return Status::Ok();
  }

  // Y[i] = X[idx[i]] per axis over tensors of shapes `is` -> `os` (rank >= 1, any element
  // size), the last axis gathered in the inner loop.
  void NearestGather(const void* x, const std::vector<int64_t>& is, void* y,
                     const std::vector<int64_t>& os, DataType dtype,
                     const std::vector<AxisPlan>& plans) const {
    const int r = static_cast<int>(is.size());
    const std::vector<int64_t> ds = ContiguousStrides(is);
    const int64_t inner = os[r - 1], rows = inner > 0 ? Numel(os) / inner : 0;
    const uint64_t ebits = EncodeScalar(dtype, p_.extrapolation);
    const AxisPlan& last = plans[r - 1];
    DispatchBySize(DataTypeSize(dtype), [&](auto tag) {
      using T = decltype(tag);
      T ev;
      std::memcpy(&ev, &ebits, sizeof(T));
      const T* src = static_cast<const T*>(x);
      T* dst = static_cast<T*>(y);
      ParallelFor(rows, inner, [&](int64_t b, int64_t e) {
        std::vector<int64_t> c(static_cast<size_t>(r), 0);
        int64_t rem = b;
        for (int d = r - 2; d >= 0; --d) {
          c[d] = rem % os[d];
          rem /= os[d];
        }
        for (int64_t row = b; row < e; ++row) {
          T* o = dst + row * inner;
          int64_t base = 0;
          bool ex = false;
          for (int d = 0; d < r - 1; ++d) {
            ex = ex || plans[d].extrap[c[d]];
            base += plans[d].idx[c[d]] * ds[d];
          }
          if (ex) {
            std::fill_n(o, inner, ev);
          } else {
            const T* s = src + base;
            const int64_t* li = last.idx.data();
            if (last.any_extrap) {
              for (int64_t j = 0; j < inner; ++j) o[j] = last.extrap[j] ? ev : s[li[j]];
            } else {
              for (int64_t j = 0; j < inner; ++j) o[j] = s[li[j]];
            }
          }
          for (int d = r - 2; d >= 0; --d) {
            if (++c[d] < os[d]) break;
            c[d] = 0;
          }
        }
      });
    });
  }

  Node node_;
  Params p_;
  bool legacy_;
  bool cl_ = false;  // X and Y stored channels-last (SetChannelsLast)
};

StatusOr<Mode> ParseMode(const Node& n) {
  const std::string m = n.attrs.String("mode", "nearest");
  if (m == "nearest") return Mode::kNearest;
  if (m == "linear" || m == "bilinear") return Mode::kLinear;
  if (m == "cubic" && n.op_type == "Resize" && n.opset >= 11) return Mode::kCubic;
  return NodeError(n, "unsupported mode '" + m + "' for opset " + std::to_string(n.opset));
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Resize(const Node& node) {
  Params p;
  OPSCOPE_ASSIGN_OR_RETURN(p.mode, ParseMode(node));
  if (node.opset < 11) {
    p.coord = Coord::kAsymmetric;
    p.nearest = Nearest::kLegacy;
    return std::unique_ptr<Kernel>(new ResizeKernel(node, p, true));
  }
  p.antialias = node.attrs.Int("antialias", 0) != 0 && p.mode != Mode::kNearest;
  p.axes = node.attrs.Ints("axes");
  const std::string policy = node.attrs.String("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch")
    p.policy = Policy::kStretch;
  else if (policy == "not_larger")
    p.policy = Policy::kNotLarger;
  else if (policy == "not_smaller")
    p.policy = Policy::kNotSmaller;
  else
    return NodeError(node, "unknown keep_aspect_ratio_policy '" + policy +
                               "' (stretch, not_larger, not_smaller)");
  const std::string c = node.attrs.String("coordinate_transformation_mode", "half_pixel");
  if (c == "half_pixel")
    p.coord = Coord::kHalfPixel;
  else if (c == "pytorch_half_pixel")
    p.coord = Coord::kPytorchHalfPixel;
  else if (c == "align_corners")
    p.coord = Coord::kAlignCorners;
  else if (c == "asymmetric")
    p.coord = Coord::kAsymmetric;
  else if (c == "half_pixel_symmetric")
    p.coord = Coord::kHalfPixelSymmetric;
  else if (c == "tf_crop_and_resize")
    p.coord = Coord::kTfCropAndResize;
  else if (c == "tf_half_pixel_for_nearest" || c == "tf_half_pixel_for_nn")  // opset-11 spelling
    p.coord = Coord::kTfHalfPixelForNearest;
  else
    return NodeError(node, "unknown coordinate_transformation_mode '" + c + "'");
  const std::string nm = node.attrs.String("nearest_mode", "round_prefer_floor");
  if (nm == "round_prefer_floor")
    p.nearest = Nearest::kRoundPreferFloor;
  else if (nm == "round_prefer_ceil")
    p.nearest = Nearest::kRoundPreferCeil;
  else if (nm == "floor")
    p.nearest = Nearest::kFloor;
  else if (nm == "ceil")
    p.nearest = Nearest::kCeil;
  else
    return NodeError(node, "unknown nearest_mode '" + nm + "'");
  p.cubic_a = node.attrs.Float("cubic_coeff_a", -0.75f);
  p.exclude_outside = node.attrs.Int("exclude_outside", 0) != 0;
  p.extrapolation = node.attrs.Float("extrapolation_value", 0.f);
  return std::unique_ptr<Kernel>(new ResizeKernel(node, p, false));
}

StatusOr<std::unique_ptr<Kernel>> Create_Upsample(const Node& node) {
  Params p;
  OPSCOPE_ASSIGN_OR_RETURN(p.mode, ParseMode(node));
  p.coord = Coord::kAsymmetric;
  p.nearest = Nearest::kLegacy;
  if (node.opset < 9 && !node.attrs.Has("scales"))
    return NodeError(node, "missing 'scales' attribute");
  return std::unique_ptr<Kernel>(new ResizeKernel(node, p, true));
}

}  // namespace opscope::engine
