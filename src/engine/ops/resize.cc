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
// The axis plans and the passes are resize_plan.h's. Nearest is one N-D gather by element size
// (any dtype); linear and cubic run one separable pass per resized axis (float32), each
// vectorized over the contiguous inner block, equal to the reference's recursive 1-D
// interpolation up to float rounding.
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
#include "engine/ops/resize_plan.h"

namespace opscope::engine {
namespace {

using namespace resize;  // NOLINT: the kernel is written in the plans' terms

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
