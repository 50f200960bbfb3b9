// GridSample (opset 16, 4-D NCHW input, grid [N, Ho, Wo, 2] with (x, y) in [-1, 1]). Follows
// PyTorch's grid_sampler_2d, from which ONNX's expected outputs come: coordinates are
// unnormalized with or without align_corners, border/reflection padding moves the sample point
// for bilinear and nearest, bicubic pads each of its 16 taps instead, nearest rounds half to even.
// The per-pixel weights are computed once per output pixel and reused across channels.
#include <cmath>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"

namespace opscope::engine {
namespace {

enum class GsMode { kBilinear, kNearest, kBicubic };
enum class GsPad { kZeros, kBorder, kReflection };

double Unnormalize(double c, int64_t size, bool align) {
  return align ? (c + 1) / 2 * static_cast<double>(size - 1)
               : ((c + 1) * static_cast<double>(size) - 1) / 2;
}

double Reflect(double x, double twice_low, double twice_high) {
  if (twice_low == twice_high) return 0;
  const double mn = twice_low / 2, span = (twice_high - twice_low) / 2;
  x = std::fabs(x - mn);
  const double extra = std::fmod(x, span);
  const int64_t flips = static_cast<int64_t>(std::floor(x / span));
  return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

double ApplyPadding(double x, int64_t size, GsPad pad, bool align) {
  const double hi = static_cast<double>(size - 1);
  if (pad == GsPad::kBorder) return std::clamp(x, 0.0, hi);
  if (pad == GsPad::kReflection) {
    x = align ? Reflect(x, 0, 2 * hi) : Reflect(x, -1, 2 * static_cast<double>(size) - 1);
    return std::clamp(x, 0.0, hi);
  }
  return x;
}

void CubicCoeffs(double t, double c[4]) {
  const double A = -0.75;
  auto c1 = [&](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  auto c2 = [&](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  c[0] = c2(t + 1);
  c[1] = c1(t);
  c[2] = c1(1 - t);
  c[3] = c2(2 - t);
}

class GridSampleKernel : public Kernel {
 public:
  GridSampleKernel(const Node& n, GsMode m, GsPad p, bool align)
      : node_(n), mode_(m), pad_(p), align_(align) {}
  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    const Tensor* g = ctx.input(1);
    if (!x || !g) return NodeError(node_, "needs inputs X and grid");
    if (x->rank() != 4) return NodeError(node_, "X must be 4-D NCHW, got " + ShapeString(x->shape()));
    if (g->rank() != 4 || g->dim(0) != x->dim(0) || g->dim(3) != 2)
      return NodeError(node_, "grid must be [N, H_out, W_out, 2] with N = " +
                                  std::to_string(x->dim(0)) + ", got " + ShapeString(g->shape()));
    if (x->dtype() != DataType::kFloat32 || g->dtype() != DataType::kFloat32)
      return NodeError(node_, "supports float32 X and grid only");
    const int64_t N = x->dim(0), C = x->dim(1), H = x->dim(2), W = x->dim(3);
    const int64_t Ho = g->dim(1), Wo = g->dim(2);
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, {N, C, Ho, Wo}));
    if (y->numel() == 0) return Status::Ok();
    const float* xs = x->data<float>();
    const float* gs = g->data<float>();
    float* ys = y->data<float>();
    const int64_t plane = H * W, oplane = Ho * Wo;
    const int taps = mode_ == GsMode::kNearest ? 1 : mode_ == GsMode::kBilinear ? 4 : 16;
    ParallelFor(N * Ho, Wo * C * taps * 2, [&](int64_t b, int64_t e) {
      std::vector<int64_t> off(static_cast<size_t>(taps));
      std::vector<float> wt(static_cast<size_t>(taps));
      for (int64_t nh = b; nh < e; ++nh) {
        const int64_t n = nh / Ho, ho = nh - n * Ho;
        for (int64_t wo = 0; wo < Wo; ++wo) {
          const float* gp = gs + ((n * Ho + ho) * Wo + wo) * 2;
          const int used = Weights(gp[0], gp[1], H, W, off.data(), wt.data());
          const float* xn = xs + n * C * plane;
          float* yp = ys + n * C * oplane + ho * Wo + wo;
          for (int64_t c = 0; c < C; ++c) {
            const float* xc = xn + c * plane;
            float acc = 0;
            for (int k = 0; k < used; ++k) acc += wt[k] * xc[off[k]];
            yp[c * oplane] = acc;
          }
        }
      }
    });
    return Status::Ok();
  }
  Cost EstimateCost(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) const override {
    // A multiply-add per tap per output element (4 bilinear, 16 bicubic, 0 nearest).
    const int taps = mode_ == GsMode::kNearest ? 0 : mode_ == GsMode::kBilinear ? 4 : 16;
    return {out.empty() ? 0 : static_cast<double>(out[0].numel()) * 2 * taps, CompulsoryBytes(in, out)};
  }

 private:
  // Fills the in-bounds taps (plane offsets and weights) for one sample point; returns how many.
  int Weights(float gx, float gy, int64_t H, int64_t W, int64_t* off, float* wt) const {
    double ix = Unnormalize(gx, W, align_), iy = Unnormalize(gy, H, align_);
    int n = 0;
    // Non-finite or absurdly far points sample nothing (keeps the integer casts defined).
    if (!(std::fabs(ix) < 1e9) || !(std::fabs(iy) < 1e9)) return 0;
    auto add = [&](int64_t yy, int64_t xx, double w) {
      if (xx >= 0 && xx < W && yy >= 0 && yy < H && w != 0) {
        off[n] = yy * W + xx;
        wt[n] = static_cast<float>(w);
        ++n;
      }
    };
    if (mode_ == GsMode::kBicubic) {
      const double fx = std::floor(ix), fy = std::floor(iy);
      double cx[4], cy[4];
      CubicCoeffs(ix - fx, cx);
      CubicCoeffs(iy - fy, cy);
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) {
          // Each tap is padded on its own (PyTorch get_value_bounded).
          double tx = ApplyPadding(fx - 1 + i, W, pad_, align_);
          double ty = ApplyPadding(fy - 1 + j, H, pad_, align_);
          add(static_cast<int64_t>(ty), static_cast<int64_t>(tx), cx[i] * cy[j]);
        }
      // Taps that pad to the same pixel were added separately; that is still a correct sum.
      return n;
    }
    ix = ApplyPadding(ix, W, pad_, align_);
    iy = ApplyPadding(iy, H, pad_, align_);
    if (mode_ == GsMode::kNearest) {
      add(static_cast<int64_t>(std::nearbyint(iy)), static_cast<int64_t>(std::nearbyint(ix)), 1);
      return n;
    }
    const double x0 = std::floor(ix), y0 = std::floor(iy);
    const double tx = ix - x0, ty = iy - y0;
    const int64_t xi = static_cast<int64_t>(x0), yi = static_cast<int64_t>(y0);
    add(yi, xi, (1 - tx) * (1 - ty));
    add(yi, xi + 1, tx * (1 - ty));
    add(yi + 1, xi, (1 - tx) * ty);
    add(yi + 1, xi + 1, tx * ty);
    return n;
  }

  Node node_;
  GsMode mode_;
  GsPad pad_;
  bool align_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_GridSample(const Node& node) {
  const std::string m = node.attrs.String("mode", "bilinear");
  const std::string p = node.attrs.String("padding_mode", "zeros");
  GsMode mode;
  if (m == "bilinear" || m == "linear") mode = GsMode::kBilinear;
  else if (m == "nearest") mode = GsMode::kNearest;
  else if (m == "bicubic" || m == "cubic") mode = GsMode::kBicubic;
  else return NodeError(node, "unknown mode '" + m + "' (bilinear, nearest, bicubic)");
  GsPad pad;
  if (p == "zeros") pad = GsPad::kZeros;
  else if (p == "border") pad = GsPad::kBorder;
  else if (p == "reflection") pad = GsPad::kReflection;
  else return NodeError(node, "unknown padding_mode '" + p + "' (zeros, border, reflection)");
  return std::unique_ptr<Kernel>(
      new GridSampleKernel(node, mode, pad, node.attrs.Int("align_corners", 0) != 0));
}

}  // namespace opscope::engine
