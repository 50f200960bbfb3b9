// GridSample (opset 16, 4-D NCHW input, grid [N, Ho, Wo, 2] with (x, y) in [-1, 1]). Follows
// PyTorch's grid_sampler_2d, from which ONNX's expected outputs come: coordinates are
// unnormalized with or without align_corners, border/reflection padding moves the sample point
// for bilinear and nearest, bicubic pads each of its 16 taps instead, nearest rounds half to even.
// The per-pixel weights are computed once per output pixel and reused across channels.
// 5-D (opset 20, volumetric): X [N, C, D, H, W], grid [N, Do, Ho, Wo, 3] with (x, y, z);
// linear (8 taps, trilinear) and nearest, every padding mode; cubic is 4-D only (as in ONNX).
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
    if (x->rank() == 5) return Run3d(ctx, *x, *g);
    if (x->rank() != 4)
      return NodeError(node_, "X must be 4-D NCHW or 5-D NCDHW, got " + ShapeString(x->shape()));
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
    // Per output row: taps (plane offset, weight) of every pixel once, then channel by channel so
    // reads stay in one input plane and writes are contiguous. Out-of-bounds taps carry weight 0
    // at offset 0, which keeps the inner loop branch-free with a fixed tap count.
    ParallelFor(N * Ho, Wo * C * taps * 2, [&](int64_t b, int64_t e) {
      std::vector<int64_t> off(static_cast<size_t>(Wo * taps));
      std::vector<float> wt(static_cast<size_t>(Wo * taps));
      for (int64_t nh = b; nh < e; ++nh) {
        const int64_t n = nh / Ho, ho = nh - n * Ho;
        const float* gp = gs + (n * Ho + ho) * Wo * 2;
        for (int64_t wo = 0; wo < Wo; ++wo) {
          const int used =
              Weights(gp[2 * wo], gp[2 * wo + 1], H, W, &off[wo * taps], &wt[wo * taps]);
          for (int k = used; k < taps; ++k) {
            off[wo * taps + k] = 0;
            wt[wo * taps + k] = 0;
          }
        }
        const float* xn = xs + n * C * plane;
        float* yrow = ys + n * C * oplane + ho * Wo;
        for (int64_t c = 0; c < C; ++c) {
          const float* xc = xn + c * plane;
          float* yc = yrow + c * oplane;
          if (taps == 4) {
            for (int64_t wo = 0; wo < Wo; ++wo) {
              const int64_t* o = &off[wo * 4];
              const float* w = &wt[wo * 4];
              yc[wo] = w[0] * xc[o[0]] + w[1] * xc[o[1]] + w[2] * xc[o[2]] + w[3] * xc[o[3]];
            }
          } else {
            for (int64_t wo = 0; wo < Wo; ++wo) {
              const int64_t* o = &off[wo * taps];
              const float* w = &wt[wo * taps];
              float acc = 0;
              for (int k = 0; k < taps; ++k) acc += w[k] * xc[o[k]];
              yc[wo] = acc;
            }
          }
        }
      }
    });
    return Status::Ok();
  }
  Status Run3d(KernelContext& ctx, const Tensor& x, const Tensor& g) {
    if (g.rank() != 5 || g.dim(0) != x.dim(0) || g.dim(4) != 3)
      return NodeError(node_, "for a 5-D X, grid must be [N, D_out, H_out, W_out, 3] with N = " +
                                  std::to_string(x.dim(0)) + ", got " + ShapeString(g.shape()));
    if (x.dtype() != DataType::kFloat32 || g.dtype() != DataType::kFloat32)
      return NodeError(node_, "supports float32 X and grid only");
    if (mode_ == GsMode::kBicubic)
      return NodeError(node_, "mode cubic is defined for 4-D inputs only; this X is 5-D");
    const int64_t N = x.dim(0), C = x.dim(1), D = x.dim(2), H = x.dim(3), W = x.dim(4);
    const int64_t Do = g.dim(1), Ho = g.dim(2), Wo = g.dim(3);
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, {N, C, Do, Ho, Wo}));
    if (y->numel() == 0) return Status::Ok();
    const int64_t vol = D * H * W, ovol = Do * Ho * Wo;
    const int taps = mode_ == GsMode::kNearest ? 1 : 8;
    const float* xs = x.data<float>();
    const float* gs = g.data<float>();
    float* ys = y->data<float>();
    ParallelFor(N * Do * Ho, Wo * C * taps * 2, [&](int64_t b, int64_t e) {
      std::vector<int64_t> off(static_cast<size_t>(Wo * taps));
      std::vector<float> wt(static_cast<size_t>(Wo * taps));
      for (int64_t row = b; row < e; ++row) {
        const int64_t n = row / (Do * Ho), dh = row - n * Do * Ho;
        const float* gp = gs + (n * Do * Ho + dh) * Wo * 3;
        for (int64_t wo = 0; wo < Wo; ++wo) {
          const int used = Weights3(gp + 3 * wo, D, H, W, &off[wo * taps], &wt[wo * taps]);
          for (int k = used; k < taps; ++k) off[wo * taps + k] = 0, wt[wo * taps + k] = 0;
        }
        for (int64_t c = 0; c < C; ++c) {
          const float* xc = xs + (n * C + c) * vol;
          float* yc = ys + (n * C + c) * ovol + dh * Wo;
          for (int64_t wo = 0; wo < Wo; ++wo) {
            float acc = 0;
            for (int k = 0; k < taps; ++k) acc += wt[wo * taps + k] * xc[off[wo * taps + k]];
            yc[wo] = acc;
          }
        }
      }
    });
    return Status::Ok();
  }

  // Trilinear (8 taps) or nearest (1) for one (x, y, z) sample point; returns the taps used.
  int Weights3(const float* p, int64_t D, int64_t H, int64_t W, int64_t* off, float* wt) const {
    double ix = Unnormalize(p[0], W, align_), iy = Unnormalize(p[1], H, align_),
           iz = Unnormalize(p[2], D, align_);
    if (!(std::fabs(ix) < 1e9) || !(std::fabs(iy) < 1e9) || !(std::fabs(iz) < 1e9)) return 0;
    ix = ApplyPadding(ix, W, pad_, align_);
    iy = ApplyPadding(iy, H, pad_, align_);
    iz = ApplyPadding(iz, D, pad_, align_);
    int n = 0;
    auto add = [&](int64_t zz, int64_t yy, int64_t xx, double w) {
      if (xx >= 0 && xx < W && yy >= 0 && yy < H && zz >= 0 && zz < D && w != 0) {
        off[n] = (zz * H + yy) * W + xx;
        wt[n] = static_cast<float>(w);
        ++n;
      }
    };
    if (mode_ == GsMode::kNearest) {
      add(static_cast<int64_t>(std::nearbyint(iz)), static_cast<int64_t>(std::nearbyint(iy)),
          static_cast<int64_t>(std::nearbyint(ix)), 1);
      return n;
    }
    const double x0 = std::floor(ix), y0 = std::floor(iy), z0 = std::floor(iz);
    const double tx = ix - x0, ty = iy - y0, tz = iz - z0;
    const int64_t xi = static_cast<int64_t>(x0), yi = static_cast<int64_t>(y0),
                  zi = static_cast<int64_t>(z0);
    for (int dz = 0; dz < 2; ++dz)
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx)
          add(zi + dz, yi + dy, xi + dx,
              (dx ? tx : 1 - tx) * (dy ? ty : 1 - ty) * (dz ? tz : 1 - tz));
    return n;
  }

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    // A multiply-add per tap per output element (4 bilinear, 8 trilinear, 16 bicubic, 0 nearest).
    const bool vol = !in.empty() && in[0].shape.size() == 5;
    const int taps = mode_ == GsMode::kNearest    ? 0
                     : mode_ == GsMode::kBilinear ? (vol ? 8 : 4)
                                                  : 16;
    return {out.empty() ? 0 : static_cast<double>(out[0].numel()) * 2 * taps,
            CompulsoryBytes(in, out)};
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
  if (m == "bilinear" || m == "linear")
    mode = GsMode::kBilinear;
  else if (m == "nearest")
    mode = GsMode::kNearest;
  else if (m == "bicubic" || m == "cubic")
    mode = GsMode::kBicubic;
  else
    return NodeError(node, "unknown mode '" + m + "' (bilinear, nearest, bicubic)");
  GsPad pad;
  if (p == "zeros")
    pad = GsPad::kZeros;
  else if (p == "border")
    pad = GsPad::kBorder;
  else if (p == "reflection")
    pad = GsPad::kReflection;
  else
    return NodeError(node, "unknown padding_mode '" + p + "' (zeros, border, reflection)");
  return std::unique_ptr<Kernel>(
      new GridSampleKernel(node, mode, pad, node.attrs.Int("align_corners", 0) != 0));
}

}  // namespace opscope::engine
