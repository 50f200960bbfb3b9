// Shape-manipulating kernels: Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, Expand, Tile,
// Concat, Split, Slice. All of them move bytes by element size (any dtype); none computes.
#include <algorithm>
#include <cstring>
#include <set>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"
#include "engine/ops/region_layout.h"

namespace opscope::engine {
namespace {

Status RequireInput(const Node& n, const KernelContext& ctx, int i, const char* what) {
  if (!ctx.input(i)) return NodeError(n, std::string("missing required input '") + what + "'");
  return Status::Ok();
}

bool IsIntType(DataType t) { return t == DataType::kInt64 || t == DataType::kInt32; }

// ---------------------------------------------------------------- Reshape / Flatten / Squeeze ...

// Reshape, Flatten, Squeeze and Unsqueeze only compute a new shape and copy the bytes (the
// executor may alias output and input, in which case CopyTensorData is a no-op).
class ReshapeLike : public Kernel {
 public:
  explicit ReshapeLike(const Node& n) : node_(n) {}
  Status Run(KernelContext& ctx) override {
    OPSCOPE_RETURN_IF_ERROR(RequireInput(node_, ctx, 0, "data"));
    const Tensor& x = *ctx.input(0);
    std::vector<int64_t> shape;
    OPSCOPE_RETURN_IF_ERROR(OutShape(ctx, x.shape(), &shape));
    int64_t n = 0;
    if (!CheckedNumel(shape, &n) || n != x.numel())
      return NodeError(node_,
                       "cannot reshape " + ShapeString(x.shape()) + " to " + ShapeString(shape));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), shape));
    CopyTensorData(x, y);
    return Status::Ok();
  }

 protected:
  virtual Status OutShape(const KernelContext& ctx, const std::vector<int64_t>& in,
                          std::vector<int64_t>* out) const = 0;
  Node node_;
};

class ReshapeKernel : public ReshapeLike {
 public:
  using ReshapeLike::ReshapeLike;

 protected:
  Status OutShape(const KernelContext& ctx, const std::vector<int64_t>& in,
                  std::vector<int64_t>* out) const override {
    std::vector<int64_t> spec;
    if (node_.opset < 5) {
      spec = node_.attrs.Ints("shape");
    } else {
      const Tensor* s = ctx.input(1);
      if (!s) return NodeError(node_, "missing required input 'shape'");
      if (!IsIntType(s->dtype()) || s->rank() != 1)
        return NodeError(node_, "input 'shape' must be a 1-D int64 tensor");
      spec = ReadInts(*s);
    }
    const bool allowzero = node_.opset >= 14 && node_.attrs.Int("allowzero", 0) != 0;
    out->assign(spec.size(), 0);
    int infer = -1;
    int64_t known = 1;
    for (size_t i = 0; i < spec.size(); ++i) {
      int64_t d = spec[i];
      if (d == -1) {
        if (infer >= 0)
          return NodeError(node_, "shape " + ShapeString(spec) + " has more than one -1");
        infer = static_cast<int>(i);
        continue;
      }
      if (d == 0 && !allowzero) {
        if (i >= in.size())
          return NodeError(node_, "shape " + ShapeString(spec) + " copies dim " +
                                      std::to_string(i) + " (0) but the input " + ShapeString(in) +
                                      " has no such dim");
        d = in[i];
      }
      if (d < 0) return NodeError(node_, "shape " + ShapeString(spec) + " has a negative dim");
      if (d > 0 && known > INT64_MAX / d)
        return NodeError(node_, "shape " + ShapeString(spec) + " overflows int64");
      (*out)[i] = d;
      known *= d;
    }
    if (infer >= 0) {
      int64_t total = Numel(in);
      if (known == 0 || total % known != 0)
        return NodeError(
            node_, "cannot infer the -1 of " + ShapeString(spec) + " for input " + ShapeString(in));
      (*out)[infer] = total / known;
    }
    return Status::Ok();
  }
};

class FlattenKernel : public ReshapeLike {
 public:
  using ReshapeLike::ReshapeLike;

 protected:
  Status OutShape(const KernelContext&, const std::vector<int64_t>& in,
                  std::vector<int64_t>* out) const override {
    int64_t axis = node_.attrs.Int("axis", 1);
    const int64_t r = static_cast<int64_t>(in.size());
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r)
      return NodeError(node_, "axis " + std::to_string(node_.attrs.Int("axis", 1)) +
                                  " out of range for rank " + std::to_string(r));
    int64_t a = 1, b = 1;
    for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= in[i];
    *out = {a, b};
    return Status::Ok();
  }
};

// Axes from the attribute (opset < 13) or the optional input 1 (opset >= 13).
Status ReadAxes(const Node& n, const KernelContext& ctx, bool* given, std::vector<int64_t>* axes) {
  *given = false;
  if (n.opset < 13) {
    if (n.attrs.Has("axes")) {
      *given = true;
      *axes = n.attrs.Ints("axes");
    }
    return Status::Ok();
  }
  if (const Tensor* t = ctx.input(1); t && t->numel() > 0) {  // empty = not given
    if (!IsIntType(t->dtype())) return NodeError(n, "input 'axes' must be int64");
    *given = true;
    *axes = ReadInts(*t);
  }
  return Status::Ok();
}

class SqueezeKernel : public ReshapeLike {
 public:
  using ReshapeLike::ReshapeLike;

 protected:
  Status OutShape(const KernelContext& ctx, const std::vector<int64_t>& in,
                  std::vector<int64_t>* out) const override {
    bool given;
    std::vector<int64_t> axes;
    OPSCOPE_RETURN_IF_ERROR(ReadAxes(node_, ctx, &given, &axes));
    const int64_t r = static_cast<int64_t>(in.size());
    std::vector<bool> drop(in.size(), false);
    if (!given) {
      for (int64_t i = 0; i < r; ++i) drop[i] = in[i] == 1;
    } else {
      for (int64_t a : axes) {
        int64_t ax = a;
        if (!NormalizeAxis(&ax, r))
          return NodeError(
              node_, "axis " + std::to_string(a) + " out of range for rank " + std::to_string(r));
        if (in[ax] != 1)
          return NodeError(node_, "cannot squeeze axis " + std::to_string(a) + " of size " +
                                      std::to_string(in[ax]) + " (input " + ShapeString(in) + ")");
        drop[ax] = true;
      }
    }
    out->clear();
    for (int64_t i = 0; i < r; ++i)
      if (!drop[i]) out->push_back(in[i]);
    return Status::Ok();
  }
};

class UnsqueezeKernel : public ReshapeLike {
 public:
  using ReshapeLike::ReshapeLike;

 protected:
  Status OutShape(const KernelContext& ctx, const std::vector<int64_t>& in,
                  std::vector<int64_t>* out) const override {
    bool given;
    std::vector<int64_t> axes;
    OPSCOPE_RETURN_IF_ERROR(ReadAxes(node_, ctx, &given, &axes));
    if (!given) return NodeError(node_, "'axes' is required");
    const int64_t r = static_cast<int64_t>(in.size() + axes.size());
    std::vector<bool> ins(static_cast<size_t>(r), false);
    for (int64_t a : axes) {
      int64_t ax = a;
      if (!NormalizeAxis(&ax, r))
        return NodeError(node_, "axis " + std::to_string(a) + " out of range for output rank " +
                                    std::to_string(r));
      if (ins[ax]) return NodeError(node_, "axis " + std::to_string(a) + " given twice");
      ins[ax] = true;
    }
    out->clear();
    size_t k = 0;
    for (int64_t i = 0; i < r; ++i) out->push_back(ins[i] ? 1 : in[k++]);
    return Status::Ok();
  }
};

// ---------------------------------------------------------------- Shape / Size

class ShapeKernel : public Kernel {
 public:
  explicit ShapeKernel(const Node& n) : node_(n) {}
  Status Run(KernelContext& ctx) override {
    OPSCOPE_RETURN_IF_ERROR(RequireInput(node_, ctx, 0, "data"));
    const std::vector<int64_t>& s = ctx.input(0)->shape();
    const int64_t r = static_cast<int64_t>(s.size());
    int64_t start = 0, end = r;
    if (node_.opset >= 15) {
      start = node_.attrs.Int("start", 0);
      end = node_.attrs.Int("end", r);
      if (start < 0) start += r;
      if (end < 0) end += r;
      start = std::clamp<int64_t>(start, 0, r);
      end = std::clamp<int64_t>(end, 0, r);
    }
    const int64_t n = std::max<int64_t>(end - start, 0);
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kInt64, {n}));
    for (int64_t i = 0; i < n; ++i) y->data<int64_t>()[i] = s[start + i];
    return Status::Ok();
  }
  Cost EstimateCost(const std::vector<TensorDesc>&,
                    const std::vector<TensorDesc>& out) const override {
    return {0, CompulsoryBytes({}, out)};  // only the shape is read, not the data
  }

 private:
  Node node_;
};

class SizeKernel : public Kernel {
 public:
  explicit SizeKernel(const Node& n) : node_(n) {}
  Status Run(KernelContext& ctx) override {
    OPSCOPE_RETURN_IF_ERROR(RequireInput(node_, ctx, 0, "data"));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kInt64, {}));
    y->data<int64_t>()[0] = ctx.input(0)->numel();
    return Status::Ok();
  }
  Cost EstimateCost(const std::vector<TensorDesc>&,
                    const std::vector<TensorDesc>& out) const override {
    return {0, CompulsoryBytes({}, out)};
  }

 private:
  Node node_;
};

// ---------------------------------------------------------------- Expand / Tile

class ExpandKernel : public Kernel {
 public:
  explicit ExpandKernel(const Node& n) : node_(n) {}
  Status Run(KernelContext& ctx) override {
    OPSCOPE_RETURN_IF_ERROR(RequireInput(node_, ctx, 0, "input"));
    OPSCOPE_RETURN_IF_ERROR(RequireInput(node_, ctx, 1, "shape"));
    const Tensor& x = *ctx.input(0);
    const Tensor& s = *ctx.input(1);
    if (!IsIntType(s.dtype()) || s.rank() != 1)
      return NodeError(node_, "input 'shape' must be a 1-D int64 tensor");
    std::vector<int64_t> target = ReadInts(s), out_shape;
    for (int64_t d : target)
      if (d < 0) return NodeError(node_, "shape " + ShapeString(target) + " has a negative dim");
    if (!BroadcastShapes(x.shape(), target, &out_shape))
      return NodeError(node_, "cannot broadcast input " + ShapeString(x.shape()) + " to shape " +
                                  ShapeString(target));
    int64_t n;
    if (!CheckedNumel(out_shape, &n)) return NodeError(node_, "output size overflows");
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out_shape));
    BroadcastCopy(x.raw(), x.shape(), y->raw(), out_shape, DataTypeSize(x.dtype()));
    return Status::Ok();
  }

 private:
  Node node_;
};

class TileKernel : public Kernel {
 public:
  explicit TileKernel(const Node& n) : node_(n) {}
  Status Run(KernelContext& ctx) override {
    OPSCOPE_RETURN_IF_ERROR(RequireInput(node_, ctx, 0, "input"));
    OPSCOPE_RETURN_IF_ERROR(RequireInput(node_, ctx, 1, "repeats"));
    const Tensor& x = *ctx.input(0);
    const Tensor& rt = *ctx.input(1);
    if (!IsIntType(rt.dtype()) || rt.rank() != 1)
      return NodeError(node_, "input 'repeats' must be a 1-D int64 tensor");
    std::vector<int64_t> rep = ReadInts(rt);
    if (static_cast<int>(rep.size()) != x.rank())
      return NodeError(node_, "'repeats' has " + std::to_string(rep.size()) +
                                  " values for an input of rank " + std::to_string(x.rank()));
    // Tile = broadcast of in viewed as [1,d0,1,d1,...] to [r0,d0,r1,d1,...]; the row-major
    // layout of the latter is exactly the tiled output.
    std::vector<int64_t> view_in, view_out, out_shape;
    for (int i = 0; i < x.rank(); ++i) {
      if (rep[i] < 0) return NodeError(node_, "negative repeat " + std::to_string(rep[i]));
      view_in.insert(view_in.end(), {1, x.dim(i)});
      view_out.insert(view_out.end(), {rep[i], x.dim(i)});
    }
    int64_t n;
    if (!CheckedNumel(view_out, &n)) return NodeError(node_, "output size overflows");
    for (int i = 0; i < x.rank(); ++i) out_shape.push_back(rep[i] * x.dim(i));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out_shape));
    if (n == 0) return Status::Ok();
    BroadcastCopy(x.raw(), view_in, y->raw(), view_out, DataTypeSize(x.dtype()));
    return Status::Ok();
  }

 private:
  Node node_;
};

// ---------------------------------------------------------------- Concat / Split

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const Node& n, int64_t axis) : node_(n), axis_(axis) {}
  Status Run(KernelContext& ctx) override {
    std::vector<const Tensor*> ins;
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (ctx.input(i)) ins.push_back(ctx.input(i));
    if (ins.empty()) return NodeError(node_, "needs at least one input");
    const Tensor& first = *ins[0];
    const int64_t r = first.rank();
    int64_t axis = axis_;
    if (!NormalizeAxis(&axis, r))
      return NodeError(
          node_, "axis " + std::to_string(axis_) + " out of range for rank " + std::to_string(r));
    std::vector<int64_t> out_shape = first.shape();
    out_shape[axis] = 0;
    for (const Tensor* t : ins) {
      if (t->dtype() != first.dtype()) return NodeError(node_, "inputs have different types");
      if (t->rank() != r)
        return NodeError(node_, "input shapes " + ShapeString(first.shape()) + " and " +
                                    ShapeString(t->shape()) + " have different ranks");
      for (int64_t d = 0; d < r; ++d)
        if (d != axis && t->dim(static_cast<int>(d)) != first.dim(static_cast<int>(d)))
          return NodeError(node_, "input shapes " + ShapeString(first.shape()) + " and " +
                                      ShapeString(t->shape()) + " differ outside axis " +
                                      std::to_string(axis));
      out_shape[axis] += t->dim(static_cast<int>(axis));
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, first.dtype(), out_shape));
    // Nothing to copy; the row loop below would still walk `outer`, billions long for empty
    // inputs with huge leading dimensions ([1, 4, 2^32, 0], found by model_struct_fuzz).
    if (y->numel() == 0) return Status::Ok();
    const size_t es = DataTypeSize(first.dtype());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out_shape[d];
    for (int64_t d = axis + 1; d < r; ++d) inner *= out_shape[d];
    if (cl_) {
      // A channels-last region's concatenation over channels (SetChannelsLast). nChw8c with
      // every C a multiple of 8 (the layout pass checks) is [C/8, H, W, 8] blocks per image:
      // the same bytes as NCHW's [C, H, W], so the NCHW copy stands. NHWC interleaves the
      // inputs' channels per pixel: N * H * W rows of C_k channels each.
      if (r != 4 || axis != 1)
        return NodeError(node_,
                         "channels-last concatenation is only planned over the channels of "
                         "4-D inputs");
      if (RegionLayoutFor(out_shape[1]) == RegionLayout::kNhwc) {
        outer = out_shape[0] * out_shape[2] * out_shape[3];
        inner = 1;
      }
    }
    const int64_t out_row = out_shape[axis] * inner * static_cast<int64_t>(es);
    char* dst = static_cast<char*>(y->raw());
    std::vector<int64_t> offs, widths;
    int64_t off = 0;
    for (const Tensor* t : ins) {
      int64_t w = t->dim(static_cast<int>(axis)) * inner * static_cast<int64_t>(es);
      offs.push_back(off);
      widths.push_back(w);
      off += w;
    }
    ParallelFor(outer, out_row / 4 + 1, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        for (size_t k = 0; k < ins.size(); ++k)
          if (widths[k])
            std::memcpy(dst + o * out_row + offs[k],
                        static_cast<const char*>(ins[k]->raw()) + o * widths[k],
                        static_cast<size_t>(widths[k]));
    });
    return Status::Ok();
  }

  // Inside a channels-last region the inputs and the output are all NHWC or all nChw8c; the
  // session asks only for 4-D float concatenations over the channels.
  bool SetChannelsLast(bool input, bool output) override {
    if (input != output) return false;
    cl_ = input;
    return true;
  }

 private:
  Node node_;
  int64_t axis_;
  bool cl_ = false;
};

class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(const Node& n) : node_(n) {}
  Status Run(KernelContext& ctx) override {
    OPSCOPE_RETURN_IF_ERROR(RequireInput(node_, ctx, 0, "input"));
    const Tensor& x = *ctx.input(0);
    int64_t axis = node_.attrs.Int("axis", 0);
    if (!NormalizeAxis(&axis, x.rank()))
      return NodeError(node_, "axis " + std::to_string(node_.attrs.Int("axis", 0)) +
                                  " out of range for rank " + std::to_string(x.rank()));
    const int64_t len = x.dim(static_cast<int>(axis));
    const int nout = ctx.num_outputs();
    std::vector<int64_t> split;
    if (node_.opset < 13) {
      split = node_.attrs.Ints("split");
    } else if (const Tensor* s = ctx.input(1)) {
      if (!IsIntType(s->dtype())) return NodeError(node_, "input 'split' must be int64");
      split = ReadInts(*s);
    }
    if (split.empty()) {
      const int64_t parts =
          node_.attrs.Has("num_outputs") ? node_.attrs.Int("num_outputs", nout) : nout;
      if (parts <= 0) return NodeError(node_, "no outputs to split into");
      if (node_.attrs.Has("num_outputs")) {
        // opset 18 semantics: ceil-sized chunks, the last one smaller.
        const int64_t chunk = (len + parts - 1) / parts;
        for (int64_t i = 0; i < parts; ++i)
          split.push_back(std::max<int64_t>(0, std::min(chunk, len - i * chunk)));
      } else {
        if (len % parts != 0)
          return NodeError(node_, "axis length " + std::to_string(len) + " is not divisible into " +
                                      std::to_string(parts) + " equal parts; give 'split'");
        split.assign(static_cast<size_t>(parts), len / parts);
      }
    }
    if (static_cast<int>(split.size()) != nout)
      return NodeError(node_, "'split' has " + std::to_string(split.size()) + " entries for " +
                                  std::to_string(nout) + " outputs");
    int64_t sum = 0;
    for (int64_t s : split) {
      if (s < 0) return NodeError(node_, "negative split size");
      if (s > len - sum)  // also keeps the sum from overflowing
        return NodeError(node_,
                         "split sizes sum to more than the axis length " + std::to_string(len));
      sum += s;
    }
    if (sum != len)
      return NodeError(node_, "split sizes sum to " + std::to_string(sum) + " but axis length is " +
                                  std::to_string(len));
    const size_t es = DataTypeSize(x.dtype());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<int>(d));
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(static_cast<int>(d));
    const int64_t in_row = len * inner * static_cast<int64_t>(es);
    int64_t off = 0;
    for (int k = 0; k < nout; ++k) {
      const int64_t w = split[k] * inner * static_cast<int64_t>(es);
      if (ctx.output_wanted(k)) {
        std::vector<int64_t> shape = x.shape();
        shape[axis] = split[k];
        OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(k, x.dtype(), shape));
        char* dst = static_cast<char*>(y->raw());
        const char* src = static_cast<const char*>(x.raw()) + off;
        if (w > 0)
          ParallelFor(outer, w / 4 + 1, [&](int64_t b, int64_t e) {
            for (int64_t o = b; o < e; ++o)
              std::memcpy(dst + o * w, src + o * in_row, static_cast<size_t>(w));
          });
      }
      off += w;
    }
    return Status::Ok();
  }

 private:
  Node node_;
};

// ---------------------------------------------------------------- Slice

class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const Node& n) : node_(n) {}
  Status Run(KernelContext& ctx) override {
    OPSCOPE_RETURN_IF_ERROR(RequireInput(node_, ctx, 0, "data"));
    const Tensor& x = *ctx.input(0);
    const int64_t r = x.rank();
    std::vector<int64_t> starts, ends, axes, steps;
    bool have_axes = false, have_steps = false;
    if (node_.opset < 10) {
      starts = node_.attrs.Ints("starts");
      ends = node_.attrs.Ints("ends");
      have_axes = node_.attrs.Has("axes");
      axes = node_.attrs.Ints("axes");
    } else {
      OPSCOPE_RETURN_IF_ERROR(RequireInput(node_, ctx, 1, "starts"));
      OPSCOPE_RETURN_IF_ERROR(RequireInput(node_, ctx, 2, "ends"));
      for (int i = 1; i <= 4; ++i)
        if (ctx.input(i) && !IsIntType(ctx.input(i)->dtype()))
          return NodeError(node_, "starts/ends/axes/steps must be int32 or int64");
      starts = ReadInts(*ctx.input(1));
      ends = ReadInts(*ctx.input(2));
      if (ctx.input(3)) {
        have_axes = true;
        axes = ReadInts(*ctx.input(3));
      }
      if (ctx.input(4)) {
        have_steps = true;
        steps = ReadInts(*ctx.input(4));
      }
    }
    if (starts.size() != ends.size())
      return NodeError(node_, "'starts' and 'ends' have different lengths");
    if (!have_axes) {
      axes.resize(starts.size());
      for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
    }
    if (!have_steps) steps.assign(starts.size(), 1);
    if (axes.size() != starts.size() || steps.size() != starts.size())
      return NodeError(node_, "'starts', 'ends', 'axes' and 'steps' must have the same length");
    std::vector<int64_t> out_shape = x.shape(), begin(static_cast<size_t>(r), 0),
                         step(static_cast<size_t>(r), 1);
    std::vector<bool> seen(static_cast<size_t>(r), false);
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t ax = axes[i];
      if (!NormalizeAxis(&ax, r))
        return NodeError(node_, "axis " + std::to_string(axes[i]) + " out of range for rank " +
                                    std::to_string(r));
      if (seen[ax]) return NodeError(node_, "axis " + std::to_string(axes[i]) + " repeated");
      seen[ax] = true;
      const int64_t dim = x.dim(static_cast<int>(ax));
      int64_t st = steps[i];
      if (st == 0) return NodeError(node_, "step 0 on axis " + std::to_string(axes[i]));
      if (st == INT64_MIN) st = -INT64_MAX;  // same selection, and -st stays representable
      int64_t s = starts[i], e = ends[i];
      if (s < 0) s += dim;
      if (e < 0 && e > INT64_MIN / 2) e += dim;
      int64_t count;
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        count = e > s ? (e - s - 1) / st + 1 : 0;
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        count = s > e ? (s - e - 1) / (-st) + 1 : 0;
      }
      out_shape[ax] = count;
      begin[ax] = s;
      step[ax] = count > 1 ? st : 1;  // a huge step selecting one element must not overflow strides
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out_shape));
    if (y->numel() == 0) return Status::Ok();
    const std::vector<int64_t> cs = ContiguousStrides(x.shape());
    std::vector<int64_t> strides(static_cast<size_t>(r));
    int64_t off = 0;
    for (int64_t d = 0; d < r; ++d) {
      strides[d] = cs[d] * step[d];
      off += begin[d] * cs[d];
    }
    const size_t es = DataTypeSize(x.dtype());
    StridedCopy(static_cast<const char*>(x.raw()) + off * static_cast<int64_t>(es), strides,
                y->raw(), out_shape, es);
    return Status::Ok();
  }
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    // Only the selected elements are read: output bytes twice (read + write).
    double b = 0;
    for (const TensorDesc& d : out) b += 2 * d.nbytes();
    for (size_t i = 1; i < in.size(); ++i) b += in[i].nbytes();
    return {0, b};
  }

 private:
  Node node_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Reshape(const Node& node) {
  if (node.opset < 5 && !node.attrs.Has("shape"))
    return NodeError(node, "missing 'shape' attribute");
  return std::unique_ptr<Kernel>(new ReshapeKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_Flatten(const Node& node) {
  return std::unique_ptr<Kernel>(new FlattenKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_Squeeze(const Node& node) {
  return std::unique_ptr<Kernel>(new SqueezeKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_Unsqueeze(const Node& node) {
  if (node.opset < 13 && !node.attrs.Has("axes"))
    return NodeError(node, "missing 'axes' attribute");
  return std::unique_ptr<Kernel>(new UnsqueezeKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_Shape(const Node& node) {
  return std::unique_ptr<Kernel>(new ShapeKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_Size(const Node& node) {
  return std::unique_ptr<Kernel>(new SizeKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_Expand(const Node& node) {
  return std::unique_ptr<Kernel>(new ExpandKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_Tile(const Node& node) {
  return std::unique_ptr<Kernel>(new TileKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_Concat(const Node& node) {
  if (!node.attrs.Has("axis")) return NodeError(node, "missing required attribute 'axis'");
  return std::unique_ptr<Kernel>(new ConcatKernel(node, node.attrs.Int("axis", 0)));
}

StatusOr<std::unique_ptr<Kernel>> Create_Split(const Node& node) {
  if (node.outputs.empty()) return NodeError(node, "has no outputs");
  return std::unique_ptr<Kernel>(new SplitKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_Slice(const Node& node) {
  if (node.opset < 10 && (!node.attrs.Has("starts") || !node.attrs.Has("ends")))
    return NodeError(node, "missing 'starts'/'ends' attributes");
  return std::unique_ptr<Kernel>(new SliceKernel(node));
}

}  // namespace opscope::engine
