// BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization (float32),
// hand-written.
//
// BatchNormalization (opsets 7-15): inference folds the four per-channel vectors into
// y = a[c] * x + b[c] with a = scale / sqrt(var + eps), b = B - mean * a. Opset < 9 `spatial = 0`
// takes per-element parameters of shape [C, D1, ...]. Opset >= 14 `training_mode = 1` normalises
// with the batch statistics (population variance over N and the spatial dims) and writes the
// updated running statistics (outputs 1 and 2: running * momentum + batch * (1 - momentum)).
// Before opset 14 the extra outputs only exist in training graphs; an inference engine has no
// statistics to update, so when such outputs are requested they receive the unchanged input
// mean/var (outputs 1 and 3: mean; 2 and 4: var).
//
// InstanceNormalization normalises each (n, c) plane; LayerNormalization (opset 17) each row of
// the [prod(d[:axis]), prod(d[axis:])] view, with Scale/B broadcast onto the normalised shape and
// the optional Mean and InvStdDev outputs (shape d[:axis] + [1] * (rank - axis)). Statistics
// are accumulated in double, two passes (mean, then centred squares), so large planes with a
// large mean do not lose the variance to cancellation.
//
// GroupNormalization (opsets 18 and 21) normalises each (n, group) block: the C / num_groups
// consecutive channels of the group with all their spatial elements, then applies scale and
// bias per channel. Opset 21 gives scale and bias one value per channel; opset 18's schema says
// one per group (channel c takes entry c / (C / num_groups)), but exporters also wrote
// per-channel tensors under opset 18, so there a [C] tensor is read per channel and a
// [num_groups] one per group. stash_type (21) only allows float32 statistics, which is what the
// engine computes with anyway (double accumulation).
//
// Work splits over channels/planes/rows with ParallelFor; the normalisation loop itself is a
// contiguous multiply-add the compiler vectorises.
#include <cmath>
#include <limits>

#include "engine/ops/common.h"

namespace opscope::engine {
namespace {

Status CheckFloat(const Node& n, const Tensor* t, const char* what) {
  if (!t) return NodeError(n, std::string("input ") + what + " is required");
  if (t->dtype() != DataType::kFloat32)
    return NodeError(
        n, std::string("input ") + what + " must be float32, got " + DataTypeName(t->dtype()));
  return Status();
}

// Mean and population variance of v[0..n), two-pass in double. Eight independent accumulator
// lanes let the compiler vectorise without reassociating (no -ffast-math needed).
inline void MeanVar(const float* v, int64_t n, double* mean, double* var) {
  constexpr int kLanes = 8;
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += v[i + j];
  double s = 0;
  for (; i < n; ++i) s += v[i];
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  const double m = n ? s / static_cast<double>(n) : 0;
  double sq[kLanes] = {};
  for (i = 0; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      double d = v[i + j] - m;
      sq[j] += d * d;
    }
  double q = 0;
  for (; i < n; ++i) q += (v[i] - m) * (v[i] - m);
  for (int j = 0; j < kLanes; ++j) q += sq[j];
  *mean = m;
  *var = n ? q / static_cast<double>(n) : 0;
}

class BatchNormKernel : public Kernel {
 public:
  BatchNormKernel(const Node& node, float eps, float momentum, bool spatial, bool training)
      : node_(node), eps_(eps), momentum_(momentum), spatial_(spatial), training_(training) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (int i = 0; i < 5; ++i) OPSCOPE_RETURN_IF_ERROR(CheckFloat(node_, ctx.input(i), names[i]));
    if (x->rank() < 2)
      return NodeError(node_, "input X has rank " + std::to_string(x->rank()) + ", expected >= 2");
    const int64_t N = x->dim(0), C = x->dim(1);
    const int64_t S = (N * C != 0) ? x->numel() / (N * C) : 0;
    // Parameters per channel, or (spatial = 0) per channel and spatial position.
    const int64_t P = spatial_ ? C : C * S;
    for (int i = 1; i < 5; ++i)
      if (ctx.input(i)->numel() != P)
        return NodeError(node_, std::string("input ") + names[i] + " has " +
                                    std::to_string(ctx.input(i)->numel()) + " elements, expected " +
                                    std::to_string(P) + (spatial_ ? " (one per channel)" : ""));
    const float* scale = ctx.input(1)->data<float>();
    const float* bias = ctx.input(2)->data<float>();
    const float* mean = ctx.input(3)->data<float>();
    const float* var = ctx.input(4)->data<float>();
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, x->shape()));
    // An empty X has nothing to normalise and zero batch statistics, however many (n, c)
    // planes its outer dimensions hold (a [2147483647, 4, 0, 0] X walked 8.6e9 of them).
    if (x->numel() == 0) {
      if (!training_) return WriteStatistics(ctx, nullptr, nullptr);
      const std::vector<float> zeros(static_cast<size_t>(P), 0.f);
      return WriteStatistics(ctx, zeros.data(), zeros.data());
    }

    std::vector<float> batch_mean, batch_var;
    if (training_) {
      batch_mean.assign(static_cast<size_t>(P), 0.f);
      batch_var.assign(static_cast<size_t>(P), 0.f);
      const int64_t per = spatial_ ? S : 1;  // elements per (n, param)
      const float* px = x->data<float>();
      ParallelFor(P, N * per * 3, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
          int64_t c = spatial_ ? p : p / S, s0 = spatial_ ? 0 : p % S;
          double s = 0, cnt = static_cast<double>(N * per);
          for (int64_t n = 0; n < N; ++n) {
            const float* v = px + (n * C + c) * S + s0;
            for (int64_t i = 0; i < per; ++i) s += v[i];
          }
          double m = cnt ? s / cnt : 0, q = 0;
          for (int64_t n = 0; n < N; ++n) {
            const float* v = px + (n * C + c) * S + s0;
            for (int64_t i = 0; i < per; ++i) q += (v[i] - m) * (v[i] - m);
          }
          batch_mean[p] = static_cast<float>(m);
          batch_var[p] = static_cast<float>(cnt ? q / cnt : 0);
        }
      });
      mean = batch_mean.data();
      var = batch_var.data();
    }
    std::vector<float> a(static_cast<size_t>(P)), b(static_cast<size_t>(P));
    for (int64_t p = 0; p < P; ++p) {
      a[p] = scale[p] / std::sqrt(var[p] + eps_);
      b[p] = bias[p] - mean[p] * a[p];
    }
    const float* px = x->data<float>();
    float* py = y->data<float>();
    if (spatial_) {
      ParallelFor(N * C, S * 2, [&](int64_t q0, int64_t q1) {
        for (int64_t q = q0; q < q1; ++q) {
          const float ac = a[q % C], bc = b[q % C];
          const float* v = px + q * S;
          float* o = py + q * S;
          for (int64_t i = 0; i < S; ++i) o[i] = ac * v[i] + bc;
        }
      });
    } else {
      ParallelFor(N, P * 2, [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n)
          for (int64_t i = 0; i < P; ++i) py[n * P + i] = a[i] * px[n * P + i] + b[i];
      });
    }
    return WriteStatistics(ctx, training_ ? mean : nullptr, training_ ? var : nullptr);
  }

  // FLOPs: 2 per element (the folded multiply-add); training mode adds 3 per element for the
  // batch statistics (sum, centred square and its sum). Per-channel folding is not counted.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (!in.empty()) c.flops = static_cast<double>(in[0].numel()) * (training_ ? 5 : 2);
    return c;
  }

 private:
  Status WriteStatistics(KernelContext& ctx, const float* batch_mean, const float* batch_var) {
    const Tensor* mean = ctx.input(3);
    const Tensor* var = ctx.input(4);
    const int64_t P = mean->numel();
    for (int i = 1; i < ctx.num_outputs() && i < 5; ++i) {
      if (!ctx.output_wanted(i)) continue;
      const Tensor* src = (i % 2 == 1) ? mean : var;
      const float* batch = (i % 2 == 1) ? batch_mean : batch_var;
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * o, ctx.Output(i, DataType::kFloat32, src->shape()));
      float* po = o->data<float>();
      const float* ps = src->data<float>();
      for (int64_t p = 0; p < P; ++p)
        po[p] = batch && i <= 2 ? ps[p] * momentum_ + batch[p] * (1 - momentum_)
                                : (batch ? batch[p] : ps[p]);
    }
    return Status();
  }

  Node node_;
  float eps_, momentum_;
  bool spatial_, training_;
};

class InstanceNormKernel : public Kernel {
 public:
  InstanceNormKernel(const Node& node, float eps) : node_(node), eps_(eps) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    OPSCOPE_RETURN_IF_ERROR(CheckFloat(node_, x, "input"));
    OPSCOPE_RETURN_IF_ERROR(CheckFloat(node_, ctx.input(1), "scale"));
    OPSCOPE_RETURN_IF_ERROR(CheckFloat(node_, ctx.input(2), "B"));
    if (x->rank() < 2)
      return NodeError(node_, "input has rank " + std::to_string(x->rank()) + ", expected >= 2");
    const int64_t N = x->dim(0), C = x->dim(1);
    if (ctx.input(1)->numel() != C || ctx.input(2)->numel() != C)
      return NodeError(
          node_, "scale and B must have " + std::to_string(C) + " elements (one per channel)");
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, x->shape()));
    if (N * C == 0) return Status();
    const int64_t S = x->numel() / (N * C);
    const float* px = x->data<float>();
    const float* scale = ctx.input(1)->data<float>();
    const float* bias = ctx.input(2)->data<float>();
    float* py = y->data<float>();
    const float eps = eps_;
    ParallelFor(N * C, S * 5, [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q) {
        double m, v;
        MeanVar(px + q * S, S, &m, &v);
        const float a = scale[q % C] / static_cast<float>(std::sqrt(v + eps));
        const float b = bias[q % C] - static_cast<float>(m) * a;
        const float* in = px + q * S;
        float* o = py + q * S;
        for (int64_t i = 0; i < S; ++i) o[i] = a * in[i] + b;
      }
    });
    return Status();
  }

  // FLOPs: 7 per element: mean (1 add), variance (subtract, square, add), normalise (the
  // folded multiply-add counts 2) plus 1 for the centring the fold absorbs.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (!in.empty()) c.flops = 7.0 * static_cast<double>(in[0].numel());
    return c;
  }

 private:
  Node node_;
  float eps_;
};

class LayerNormKernel : public Kernel {
 public:
  LayerNormKernel(const Node& node, int64_t axis, float eps)
      : node_(node), axis_(axis), eps_(eps) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    OPSCOPE_RETURN_IF_ERROR(CheckFloat(node_, x, "X"));
    OPSCOPE_RETURN_IF_ERROR(CheckFloat(node_, ctx.input(1), "Scale"));
    const Tensor* bias = ctx.input(2);
    if (bias) OPSCOPE_RETURN_IF_ERROR(CheckFloat(node_, bias, "B"));
    int64_t axis = axis_;
    if (!NormalizeAxis(&axis, x->rank()))
      return NodeError(node_, "axis " + std::to_string(axis_) + " is out of range for rank " +
                                  std::to_string(x->rank()));
    std::vector<int64_t> norm_shape(x->shape().begin() + axis, x->shape().end());
    const int64_t inner = Numel(norm_shape);
    const int64_t rows = inner ? x->numel() / inner : 0;
    std::vector<float> scale, shift;
    // An empty X needs no expanded Scale/B, and its normalised shape may still be huge
    // ([0, 65536, 65536] with axis 1: 16 GiB of scratch for nothing).
    const bool any = x->numel() > 0;
    OPSCOPE_RETURN_IF_ERROR(Expand(*ctx.input(1), norm_shape, "Scale", any ? &scale : nullptr));
    if (bias) OPSCOPE_RETURN_IF_ERROR(Expand(*bias, norm_shape, "B", any ? &shift : nullptr));

    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, x->shape()));
    std::vector<int64_t> stat_shape(x->shape().begin(), x->shape().begin() + axis);
    stat_shape.resize(x->shape().size(), 1);
    float* mean_out = nullptr;
    float* inv_out = nullptr;
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(1, DataType::kFloat32, stat_shape));
      mean_out = t->data<float>();
    }
    if (ctx.num_outputs() > 2 && ctx.output_wanted(2)) {
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(2, DataType::kFloat32, stat_shape));
      inv_out = t->data<float>();
    }
    if (inner == 0) {  // rows of no elements: their mean and deviation are undefined
      const int64_t stats = Numel(stat_shape);
      if (mean_out) std::fill_n(mean_out, stats, std::numeric_limits<float>::quiet_NaN());
      if (inv_out) std::fill_n(inv_out, stats, std::numeric_limits<float>::quiet_NaN());
      return Status();
    }
    const float* px = x->data<float>();
    float* py = y->data<float>();
    const float* sc = scale.data();
    const float* sh = bias ? shift.data() : nullptr;
    const float eps = eps_;
    ParallelFor(rows, inner * 7, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        double m, v;
        MeanVar(px + r * inner, inner, &m, &v);
        const float inv = static_cast<float>(1.0 / std::sqrt(v + eps));
        const float mf = static_cast<float>(m);
        if (mean_out) mean_out[r] = mf;
        if (inv_out) inv_out[r] = inv;
        const float* in = px + r * inner;
        float* o = py + r * inner;
        if (sh) {
          for (int64_t i = 0; i < inner; ++i) o[i] = (in[i] - mf) * inv * sc[i] + sh[i];
        } else {
          for (int64_t i = 0; i < inner; ++i) o[i] = (in[i] - mf) * inv * sc[i];
        }
      }
    });
    return Status();
  }

  // FLOPs: 7 per element (see InstanceNormalization: mean 1, variance 3, normalise 3).
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (!in.empty()) c.flops = 7.0 * static_cast<double>(in[0].numel());
    return c;
  }

 private:
  // Broadcasts a Scale/B tensor onto the normalised shape (numpy rules, one direction); with
  // `out` null only checks that it broadcasts.
  Status Expand(const Tensor& t, const std::vector<int64_t>& norm_shape, const char* what,
                std::vector<float>* out) {
    std::vector<int64_t> b;
    if (t.rank() > static_cast<int>(norm_shape.size()) ||
        !BroadcastShapes(norm_shape, t.shape(), &b) || b != norm_shape)
      return NodeError(node_, std::string(what) + " does not broadcast to the normalised shape");
    if (!out) return Status();  // checked only
    int64_t n = Numel(norm_shape);
    out->resize(static_cast<size_t>(n));
    if (t.numel() == n) {
      std::copy(t.data<float>(), t.data<float>() + n, out->begin());
      return Status();
    }
    std::vector<int64_t> str = BroadcastStrides(t.shape(), norm_shape);
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, off = 0;
      for (int d = static_cast<int>(norm_shape.size()) - 1; d >= 0; --d) {
        off += (rem % norm_shape[d]) * str[d];
        rem /= norm_shape[d];
      }
      (*out)[i] = t.data<float>()[off];
    }
    return Status();
  }

  Node node_;
  int64_t axis_;
  float eps_;
};

class GroupNormKernel : public Kernel {
 public:
  GroupNormKernel(const Node& node, int64_t groups, float eps)
      : node_(node), groups_(groups), eps_(eps) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    OPSCOPE_RETURN_IF_ERROR(CheckFloat(node_, x, "X"));
    OPSCOPE_RETURN_IF_ERROR(CheckFloat(node_, ctx.input(1), "scale"));
    OPSCOPE_RETURN_IF_ERROR(CheckFloat(node_, ctx.input(2), "bias"));
    if (x->rank() < 2)
      return NodeError(node_,
                       "X must have rank >= 2 (N, C, ...), got shape " + ShapeString(x->shape()));
    const int64_t N = x->dim(0), C = x->dim(1), G = groups_;
    if (C % G != 0)
      return NodeError(node_, "num_groups " + std::to_string(G) + " does not divide the " +
                                  std::to_string(C) + " channels");
    const int64_t cpg = C / G;  // channels per group
    std::vector<float> scale(static_cast<size_t>(C)), shift(static_cast<size_t>(C));
    for (int i = 1; i <= 2; ++i) {
      const Tensor& t = *ctx.input(i);
      std::vector<float>& v = i == 1 ? scale : shift;
      const float* p = t.data<float>();
      if (t.numel() == C && t.rank() == 1) {
        std::copy(p, p + C, v.begin());
      } else if (node_.opset < 21 && t.numel() == G && t.rank() == 1) {
        for (int64_t c = 0; c < C; ++c) v[c] = p[c / cpg];
      } else {
        const std::string per_group = node_.opset < 21 ? " or [" + std::to_string(G) + "]" : "";
        return NodeError(node_, std::string(i == 1 ? "scale" : "bias") + " has shape " +
                                    ShapeString(t.shape()) + ", expected [" + std::to_string(C) +
                                    "]" + per_group);
      }
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, x->shape()));
    int64_t S = 1;  // spatial elements per channel
    for (int d = 2; d < x->rank(); ++d) S *= x->dim(d);
    const int64_t block = cpg * S;
    if (x->numel() == 0) return Status();
    const float* px = x->data<float>();
    float* py = y->data<float>();
    const float eps = eps_;
    ParallelFor(N * G, block * 7, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        double m, v;
        MeanVar(px + b * block, block, &m, &v);
        const double inv = 1.0 / std::sqrt(v + eps);
        for (int64_t k = 0; k < cpg; ++k) {
          const int64_t c = (b % G) * cpg + k;
          // Folded: y = a * x + s with a = scale * inv, s = bias - mean * a.
          const float a = static_cast<float>(scale[c] * inv);
          const float sh = static_cast<float>(shift[c] - m * scale[c] * inv);
          const float* in = px + b * block + k * S;
          float* o = py + b * block + k * S;
          for (int64_t i = 0; i < S; ++i) o[i] = a * in[i] + sh;
        }
      }
    });
    return Status();
  }

  // FLOPs: 7 per element, as InstanceNormalization.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (!in.empty()) c.flops = 7.0 * static_cast<double>(in[0].numel());
    return c;
  }

 private:
  Node node_;
  int64_t groups_;
  float eps_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_GroupNormalization(const Node& node) {
  if (!node.attrs.Has("num_groups")) return NodeError(node, "attribute num_groups is required");
  const int64_t groups = node.attrs.Int("num_groups", 0);
  if (groups <= 0)
    return NodeError(node, "num_groups must be positive, got " + std::to_string(groups));
  const float eps = node.attrs.Float("epsilon", 1e-5f);
  if (!(eps >= 0)) return NodeError(node, "epsilon must be >= 0");
  if (node.attrs.Int("stash_type", 1) != 1)
    return NodeError(node, "stash_type " + std::to_string(node.attrs.Int("stash_type", 1)) +
                               " is not supported (the engine keeps float32 or wider statistics)");
  return std::unique_ptr<Kernel>(new GroupNormKernel(node, groups, eps));
}

StatusOr<std::unique_ptr<Kernel>> Create_BatchNormalization(const Node& node) {
  bool spatial = node.opset >= 9 || node.attrs.Int("spatial", 1) != 0;
  bool training = node.opset >= 14 && node.attrs.Int("training_mode", 0) != 0;
  float eps = node.attrs.Float("epsilon", 1e-5f);
  if (!(eps >= 0)) return NodeError(node, "epsilon must be >= 0");
  return std::unique_ptr<Kernel>(
      new BatchNormKernel(node, eps, node.attrs.Float("momentum", 0.9f), spatial, training));
}

StatusOr<std::unique_ptr<Kernel>> Create_InstanceNormalization(const Node& node) {
  float eps = node.attrs.Float("epsilon", 1e-5f);
  if (!(eps >= 0)) return NodeError(node, "epsilon must be >= 0");
  return std::unique_ptr<Kernel>(new InstanceNormKernel(node, eps));
}

StatusOr<std::unique_ptr<Kernel>> Create_LayerNormalization(const Node& node) {
  float eps = node.attrs.Float("epsilon", 1e-5f);
  if (!(eps >= 0)) return NodeError(node, "epsilon must be >= 0");
  return std::unique_ptr<Kernel>(new LayerNormKernel(node, node.attrs.Int("axis", -1), eps));
}

}  // namespace opscope::engine
