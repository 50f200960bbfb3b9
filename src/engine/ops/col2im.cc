// Col2Im (opset 18): the inverse of im2col. Input [N, C * prod(block_shape), L] holds, for each
// of the L block positions (row-major over the sliding grid), the C blocks' elements (channel
// major, then row-major over block_shape); each element is added into the image pixel it came
// from. Output [N, C, *image_shape]; positions that fall into the padding are dropped.
//
// Each (n, c) image plane is produced by one thread (no write races): for every block element
// and every grid position, one add. N-D (any number of spatial dims), float32 and float64.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#include "engine/ops/common.h"
#include "engine/ops/elementwise_common.h"

namespace opscope::engine {
namespace {

class Col2ImKernel : public Kernel {
 public:
  explicit Col2ImKernel(const Node& node) : node_(node) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    const Tensor* img = ctx.input(1);
    const Tensor* blk = ctx.input(2);
    if (!x || !img || !blk)
      return NodeError(node_, "expects 3 inputs (input, image_shape, block_shape)");
    if (!IsFloatType(x->dtype()))
      return NodeError(
          node_, std::string("input must be float32 or float64, got ") + DataTypeName(x->dtype()));
    if (x->rank() != 3)
      return NodeError(node_, "input must be [N, C * prod(block_shape), L], got shape " +
                                  ShapeString(x->shape()));
    const std::vector<int64_t> image = ReadInts(*img), block = ReadInts(*blk);
    const size_t nd = image.size();
    if (nd == 0 || block.size() != nd)
      return NodeError(node_,
                       "image_shape and block_shape must have the same non-zero length, got " +
                           ShapeString(image) + " and " + ShapeString(block));
    auto attr = [&](const char* name, int64_t def, size_t n) {
      std::vector<int64_t> v = node_.attrs.Ints(name);
      if (v.empty()) v.assign(n, def);
      return v;
    };
    const std::vector<int64_t> dil = attr("dilations", 1, nd), str = attr("strides", 1, nd);
    const std::vector<int64_t> pads = attr("pads", 0, 2 * nd);
    if (dil.size() != nd || str.size() != nd || pads.size() != 2 * nd)
      return NodeError(node_, "dilations/strides need " + std::to_string(nd) + " values and pads " +
                                  std::to_string(2 * nd));
    int64_t kprod = 1, L = 1;
    std::vector<int64_t> grid(nd);
    for (size_t d = 0; d < nd; ++d) {
      if (image[d] <= 0 || block[d] <= 0 || dil[d] <= 0 || str[d] <= 0 || pads[d] < 0 ||
          pads[d + nd] < 0)
        return NodeError(node_,
                         "image_shape, block_shape, dilations and strides must be positive "
                         "and pads non-negative");
      if (image[d] > kMaxGeometrySize || block[d] > kMaxGeometrySize || dil[d] > kMaxGeometrySize ||
          pads[d] > kMaxGeometrySize || pads[d + nd] > kMaxGeometrySize)
        return NodeError(node_, "image_shape, block_shape, dilations or pads of spatial dim " +
                                    std::to_string(d) + " out of range");
      const int64_t span = dil[d] * (block[d] - 1) + 1;
      const int64_t padded = image[d] + pads[d] + pads[d + nd];
      if (padded < span)
        return NodeError(node_, "block (span " + std::to_string(span) +
                                    ") does not fit the padded image (" + std::to_string(padded) +
                                    ") in spatial dim " + std::to_string(d));
      grid[d] = (padded - span) / str[d] + 1;
      if (kprod > std::numeric_limits<int64_t>::max() / block[d] ||
          L > std::numeric_limits<int64_t>::max() / grid[d])
        return NodeError(node_, "the product of block_shape or of the block grid overflows");
      kprod *= block[d];
      L *= grid[d];
    }
    if (x->dim(1) % kprod != 0)
      return NodeError(node_,
                       "input dim 1 (" + std::to_string(x->dim(1)) +
                           ") is not a multiple of prod(block_shape) = " + std::to_string(kprod));
    if (x->dim(2) != L)
      return NodeError(node_, "input dim 2 (" + std::to_string(x->dim(2)) + ") should be the " +
                                  std::to_string(L) + " block positions of the sliding grid");
    const int64_t N = x->dim(0), C = x->dim(1) / kprod;
    std::vector<int64_t> out_shape = {N, C};
    out_shape.insert(out_shape.end(), image.begin(), image.end());
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x->dtype(), out_shape));
    const int64_t plane = Numel(image);
    VisitFloat(x->dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = x->data<T>();
      T* dst = y->data<T>();
      ParallelFor(N * C, kprod * L, [&](int64_t b, int64_t e) {
        std::vector<int64_t> k(nd), g(nd);
        for (int64_t nc = b; nc < e; ++nc) {
          T* im = dst + nc * plane;
          for (int64_t i = 0; i < plane; ++i) im[i] = T(0);
          const T* col = src + nc * kprod * L;
          std::fill(k.begin(), k.end(), 0);
          for (int64_t kk = 0; kk < kprod; ++kk) {
            std::fill(g.begin(), g.end(), 0);
            for (int64_t l = 0; l < L; ++l) {
              int64_t off = 0;
              bool inside = true;
              for (size_t d = 0; d < nd && inside; ++d) {
                const int64_t p = g[d] * str[d] - pads[d] + k[d] * dil[d];
                inside = p >= 0 && p < image[d];
                off = off * image[d] + p;
              }
              if (inside) im[off] += col[kk * L + l];
              for (size_t d = nd; d-- > 0;) {
                if (++g[d] < grid[d]) break;
                g[d] = 0;
              }
            }
            for (size_t d = nd; d-- > 0;) {
              if (++k[d] < block[d]) break;
              k[d] = 0;
            }
          }
        }
      });
    });
    return Status::Ok();
  }

  // One add per input element.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (!in.empty()) c.flops = static_cast<double>(in[0].numel());
    return c;
  }

 private:
  Node node_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Col2Im(const Node& n) {
  return std::unique_ptr<Kernel>(std::make_unique<Col2ImKernel>(n));
}

}  // namespace opscope::engine
