#include "engine/ops/resize_plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/ops/common.h"

namespace opscope::engine::resize {

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

}  // namespace opscope::engine::resize
