// Detection post-processing: NonMaxSuppression (opset 10/11) and RoiAlign (opset 10/16).
//
// NonMaxSuppression: per batch and class, boxes scoring above score_threshold (strictly) are
// taken greedily by score (ties: lower box index first); a box is dropped when its IoU with a
// taken one exceeds iou_threshold; at most max_output_boxes_per_class are taken (0 or absent:
// none). center_point_box 0 reads [y1, x1, y2, x2] with either corner order, 1 reads [xc, yc, w,
// h]. Output rows (batch, class, box), in batch, class, selection order, as ONNX Runtime.
//
// RoiAlign: each output bin averages (or takes the max of) sampling_ratio^2 bilinear samples
// (adaptive ceil(roi/bins) per axis when sampling_ratio is 0). coordinate_transformation_mode
// half_pixel (opset 16's default) shifts by -0.5 pixel; output_half_pixel (opset 10's only
// behaviour) does not and makes ROIs at least 1x1. Samples outside [-1, size] count as 0. Max
// mode takes the largest weighted corner value of each sample, as ONNX's reference and ONNX
// Runtime do.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "engine/ops/common.h"

namespace opscope::engine {
namespace {

struct Box {
  float y1, x1, y2, x2;  // min/max corners
};

class NmsKernel : public Kernel {
 public:
  explicit NmsKernel(const Node& n) : node_(n), center_(n.attrs.Int("center_point_box", 0)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* boxes = ctx.input(0);
    const Tensor* scores = ctx.input(1);
    if (!boxes || !scores) return NodeError(node_, "needs the inputs boxes and scores");
    if (boxes->dtype() != DataType::kFloat32 || scores->dtype() != DataType::kFloat32)
      return NodeError(node_, "boxes and scores must be float32");
    if (boxes->rank() != 3 || boxes->dim(2) != 4)
      return NodeError(
          node_, "boxes must have shape [batches, boxes, 4], got " + ShapeString(boxes->shape()));
    if (scores->rank() != 3 || scores->dim(0) != boxes->dim(0) || scores->dim(2) != boxes->dim(1))
      return NodeError(node_, "scores must have shape [batches, classes, boxes] = [" +
                                  std::to_string(boxes->dim(0)) + ", C, " +
                                  std::to_string(boxes->dim(1)) + "], got " +
                                  ShapeString(scores->shape()));
    int64_t max_out = 0;
    float iou_th = 0, score_th = -std::numeric_limits<float>::infinity();
    bool has_score_th = false;
    if (const Tensor* t = ctx.input(2); t && t->numel() > 0) {
      if (t->numel() != 1 || (t->dtype() != DataType::kInt64 && t->dtype() != DataType::kInt32))
        return NodeError(node_, "max_output_boxes_per_class must be one int64 value");
      max_out = ReadInts(*t)[0];
    }
    if (const Tensor* t = ctx.input(3); t && t->numel() > 0) {
      if (t->numel() != 1 || t->dtype() != DataType::kFloat32)
        return NodeError(node_, "iou_threshold must be one float32 value");
      iou_th = t->data<float>()[0];
      if (!(iou_th >= 0 && iou_th <= 1))
        return NodeError(node_, "iou_threshold " + std::to_string(iou_th) + " is outside [0, 1]");
    }
    if (const Tensor* t = ctx.input(4); t && t->numel() > 0) {
      if (t->numel() != 1 || t->dtype() != DataType::kFloat32)
        return NodeError(node_, "score_threshold must be one float32 value");
      score_th = t->data<float>()[0];
      has_score_th = true;
    }
    const int64_t nb = boxes->dim(0), n = boxes->dim(1), nc = scores->dim(1);
    std::vector<int64_t> sel;
    std::vector<Box> bx(static_cast<size_t>(n));
    std::vector<int64_t> order;
    std::vector<int64_t> taken;
    for (int64_t b = 0; b < nb && max_out > 0; ++b) {
      const float* bp = boxes->data<float>() + b * n * 4;
      for (int64_t i = 0; i < n; ++i) {
        const float* p = bp + i * 4;
        if (center_) {
          bx[i] = {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
        } else {
          bx[i] = {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]),
                   std::max(p[1], p[3])};
        }
      }
      for (int64_t c = 0; c < nc; ++c) {
        const float* sp = scores->data<float>() + (b * nc + c) * n;
        order.clear();
        for (int64_t i = 0; i < n; ++i)
          if (!has_score_th || sp[i] > score_th) order.push_back(i);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t z) { return sp[a] > sp[z]; });
        taken.clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(taken.size()) >= max_out) break;
          bool keep = true;
          for (int64_t j : taken)
            if (Iou(bx[i], bx[j]) > iou_th) {
              keep = false;
              break;
            }
          if (!keep) continue;
          taken.push_back(i);
          sel.insert(sel.end(), {b, c, i});
        }
      }
    }
    const int64_t rows = static_cast<int64_t>(sel.size() / 3);
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, DataType::kInt64, {rows, 3}));
    std::copy(sel.begin(), sel.end(), out->data<int64_t>());
    return Status::Ok();
  }

  static float Iou(const Box& a, const Box& b) {
    const float area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
    if (area_a <= 0 || area_b <= 0) return 0;
    const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
    const float iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
    if (ih <= 0 || iw <= 0) return 0;
    const float inter = ih * iw;
    return inter / (area_a + area_b - inter);
  }

  // Every pair of candidates of a class may be compared: boxes^2 IoUs per class (an upper
  // bound; the greedy loop stops at max_output_boxes_per_class), ~12 operations each.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (in.size() >= 2 && in[1].shape.size() == 3) {
      const double n = static_cast<double>(in[1].shape[2]);
      c.flops =
          static_cast<double>(in[1].shape[0] * in[1].shape[1]) * (n * std::log2(n + 1) + 12 * n);
    }
    return c;
  }

 private:
  Node node_;
  int64_t center_;
};

class RoiAlignKernel : public Kernel {
 public:
  RoiAlignKernel(const Node& n, bool max_mode, bool half_pixel)
      : node_(n), max_(max_mode), half_pixel_(half_pixel) {
    oh_ = n.attrs.Int("output_height", 1);
    ow_ = n.attrs.Int("output_width", 1);
    ratio_ = n.attrs.Int("sampling_ratio", 0);
    scale_ = n.attrs.Float("spatial_scale", 1.f);
  }

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    const Tensor* rois = ctx.input(1);
    const Tensor* idx = ctx.input(2);
    if (!x || !rois || !idx) return NodeError(node_, "needs the inputs X, rois and batch_indices");
    if (x->dtype() != DataType::kFloat32 || rois->dtype() != DataType::kFloat32)
      return NodeError(node_, "X and rois must be float32");
    if (x->rank() != 4)
      return NodeError(node_, "X must be [N, C, H, W], got " + ShapeString(x->shape()));
    if (rois->rank() != 2 || rois->dim(1) != 4)
      return NodeError(node_, "rois must be [num_rois, 4], got " + ShapeString(rois->shape()));
    if (idx->rank() != 1 || idx->dim(0) != rois->dim(0))
      return NodeError(node_, "batch_indices must be [" + std::to_string(rois->dim(0)) + "], got " +
                                  ShapeString(idx->shape()));
    const int64_t N = x->dim(0), C = x->dim(1), H = x->dim(2), W = x->dim(3), R = rois->dim(0);
    std::vector<int64_t> bi = ReadInts(*idx);
    for (int64_t b : bi)
      if (b < 0 || b >= N)
        return NodeError(node_, "batch index " + std::to_string(b) + " is outside [0, " +
                                    std::to_string(N) + ")");
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, DataType::kFloat32, {R, C, oh_, ow_}));
    const float* xp = x->data<float>();
    float* yp = out->data<float>();
    const float off = half_pixel_ ? 0.5f : 0.f;
    ParallelFor(R * C, oh_ * ow_ * 16, [&](int64_t b0, int64_t e0) {
      for (int64_t rc = b0; rc < e0; ++rc) {
        const int64_t r = rc / C, c = rc % C;
        const float* roi = rois->data<float>() + r * 4;
        const float sx = roi[0] * scale_ - off, sy = roi[1] * scale_ - off;
        float rw = roi[2] * scale_ - off - sx, rh = roi[3] * scale_ - off - sy;
        if (!half_pixel_) rw = std::max(rw, 1.f), rh = std::max(rh, 1.f);
        const float bh = rh / static_cast<float>(oh_), bw = rw / static_cast<float>(ow_);
        const int64_t gh = ratio_ > 0 ? ratio_ : static_cast<int64_t>(std::ceil(rh / oh_));
        const int64_t gw = ratio_ > 0 ? ratio_ : static_cast<int64_t>(std::ceil(rw / ow_));
        const float count = static_cast<float>(std::max<int64_t>(gh * gw, 1));
        const float* plane = xp + (bi[r] * C + c) * H * W;
        float* o = yp + rc * oh_ * ow_;
        for (int64_t ph = 0; ph < oh_; ++ph)
          for (int64_t pw = 0; pw < ow_; ++pw) {
            float acc = max_ ? -std::numeric_limits<float>::infinity() : 0.f;
            bool any = false;
            for (int64_t iy = 0; iy < gh; ++iy) {
              float y = sy + ph * bh + (iy + 0.5f) * bh / static_cast<float>(gh);
              for (int64_t ix = 0; ix < gw; ++ix) {
                float xx = sx + pw * bw + (ix + 0.5f) * bw / static_cast<float>(gw);
                float v = 0;
                if (!(y < -1.f || y > H || xx < -1.f || xx > W)) {
                  float yy = std::max(y, 0.f), xc = std::max(xx, 0.f);
                  int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xc), yh, xh;
                  if (yl >= H - 1)
                    yh = yl = H - 1, yy = static_cast<float>(yl);
                  else
                    yh = yl + 1;
                  if (xl >= W - 1)
                    xh = xl = W - 1, xc = static_cast<float>(xl);
                  else
                    xh = xl + 1;
                  const float ly = yy - yl, lx = xc - xl, hy = 1 - ly, hx = 1 - lx;
                  const float v1 = hy * hx * plane[yl * W + xl], v2 = hy * lx * plane[yl * W + xh];
                  const float v3 = ly * hx * plane[yh * W + xl], v4 = ly * lx * plane[yh * W + xh];
                  v = max_ ? std::max(std::max(v1, v2), std::max(v3, v4)) : v1 + v2 + v3 + v4;
                }
                if (max_)
                  acc = any ? std::max(acc, v) : v;
                else
                  acc += v;
                any = true;
              }
            }
            o[ph * ow_ + pw] = max_ ? (any ? acc : 0.f) : acc / count;
          }
      }
    });
    return Status::Ok();
  }

  // ~4 taps x 3 operations per sample; samples per bin from the ROI size are unknown before
  // the data, so sampling_ratio (or 2 when adaptive) per axis is assumed.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (!out.empty()) {
      const double s = static_cast<double>(ratio_ > 0 ? ratio_ : 2);
      c.flops = static_cast<double>(out[0].numel()) * s * s * 12;
    }
    return c;
  }

 private:
  Node node_;
  bool max_, half_pixel_;
  int64_t oh_ = 1, ow_ = 1, ratio_ = 0;
  float scale_ = 1;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_NonMaxSuppression(const Node& node) {
  const int64_t cpb = node.attrs.Int("center_point_box", 0);
  if (cpb != 0 && cpb != 1) return NodeError(node, "center_point_box must be 0 or 1");
  return std::unique_ptr<Kernel>(new NmsKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_RoiAlign(const Node& node) {
  const std::string mode = node.attrs.String("mode", "avg");
  if (mode != "avg" && mode != "max")
    return NodeError(node, "mode '" + mode + "' must be avg or max");
  std::string ctm = node.opset >= 16 ? "half_pixel" : "output_half_pixel";
  if (node.opset >= 16) ctm = node.attrs.String("coordinate_transformation_mode", ctm);
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return NodeError(node, "coordinate_transformation_mode '" + ctm +
                               "' must be half_pixel or output_half_pixel");
  for (const char* a : {"output_height", "output_width"})
    if (node.attrs.Int(a, 1) < 1) return NodeError(node, std::string(a) + " must be at least 1");
  if (node.attrs.Int("sampling_ratio", 0) < 0)
    return NodeError(node, "sampling_ratio must be >= 0");
  return std::unique_ptr<Kernel>(new RoiAlignKernel(node, mode == "max", ctm == "half_pixel"));
}

}  // namespace opscope::engine
