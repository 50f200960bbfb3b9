// Transpose, DepthToSpace and SpaceToDepth: all three are permutations (PermuteCopy), the last
// two of a 6-D view of the NCHW tensor.
#include <string>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"

namespace opscope::engine {
namespace {

class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(const Node& n)
      : node_(n), perm_(n.attrs.Ints("perm")), has_perm_(n.attrs.Has("perm")) {}
  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "missing required input 'data'");
    const int r = x->rank();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_) {
      perm.resize(r);
      for (int i = 0; i < r; ++i) perm[i] = r - 1 - i;
    }
    if (static_cast<int>(perm.size()) != r)
      return NodeError(node_, "'perm' has " + std::to_string(perm.size()) +
                                  " entries for an input of rank " + std::to_string(r));
    std::vector<bool> seen(r, false);
    for (int64_t& p : perm) {
      int64_t q = p;
      if (!NormalizeAxis(&q, r) || seen[q])
        return NodeError(node_, "'perm' is not a permutation of 0.." + std::to_string(r - 1));
      seen[q] = true;
      p = q;
    }
    std::vector<int64_t> out_shape(r);
    for (int i = 0; i < r; ++i) out_shape[i] = x->dim(static_cast<int>(perm[i]));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x->dtype(), out_shape));
    PermuteCopy(x->raw(), x->shape(), perm, y->raw(), DataTypeSize(x->dtype()));
    return Status::Ok();
  }

 private:
  Node node_;
  std::vector<int64_t> perm_;
  bool has_perm_;
};

// DepthToSpace (to_space = true) and SpaceToDepth.
class SpaceDepthKernel : public Kernel {
 public:
  SpaceDepthKernel(const Node& n, bool to_space, int64_t bs, bool crd)
      : node_(n), to_space_(to_space), bs_(bs), crd_(crd) {}
  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "missing required input 'input'");
    if (x->rank() != 4)
      return NodeError(node_, "input must be 4-D NCHW, got rank " + std::to_string(x->rank()));
    const int64_t n = x->dim(0), c = x->dim(1), h = x->dim(2), w = x->dim(3), b = bs_;
    std::vector<int64_t> view, perm, out_shape;
    if (to_space_) {
      if (c % (b * b) != 0)
        return NodeError(node_, "channels " + std::to_string(c) + " not divisible by blocksize^2 " +
                                    std::to_string(b * b));
      const int64_t oc = c / (b * b);
      if (crd_) {
        view = {n, oc, b, b, h, w};
        perm = {0, 1, 4, 2, 5, 3};
      } else {
        view = {n, b, b, oc, h, w};
        perm = {0, 3, 4, 1, 5, 2};
      }
      out_shape = {n, oc, h * b, w * b};
    } else {
      if (h % b != 0 || w % b != 0)
        return NodeError(node_, "spatial size " + std::to_string(h) + "x" + std::to_string(w) +
                                    " not divisible by blocksize " + std::to_string(b));
      view = {n, c, h / b, b, w / b, b};
      perm = {0, 3, 5, 1, 2, 4};
      out_shape = {n, c * b * b, h / b, w / b};
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x->dtype(), out_shape));
    PermuteCopy(x->raw(), view, perm, y->raw(), DataTypeSize(x->dtype()));
    return Status::Ok();
  }

 private:
  Node node_;
  bool to_space_;
  int64_t bs_;
  bool crd_;
};

StatusOr<int64_t> BlockSize(const Node& node) {
  if (!node.attrs.Has("blocksize"))
    return NodeError(node, "missing required attribute 'blocksize'");
  int64_t b = node.attrs.Int("blocksize", 0);
  if (b <= 0 || b > (1 << 20))
    return NodeError(node, "blocksize must be in [1, 2^20], got " + std::to_string(b));
  return b;
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Transpose(const Node& node) {
  return std::unique_ptr<Kernel>(new TransposeKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_DepthToSpace(const Node& node) {
  OPSCOPE_ASSIGN_OR_RETURN(int64_t b, BlockSize(node));
  std::string mode = node.attrs.String("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    return NodeError(node, "mode must be DCR or CRD, got '" + mode + "'");
  return std::unique_ptr<Kernel>(new SpaceDepthKernel(node, true, b, mode == "CRD"));
}

StatusOr<std::unique_ptr<Kernel>> Create_SpaceToDepth(const Node& node) {
  OPSCOPE_ASSIGN_OR_RETURN(int64_t b, BlockSize(node));
  return std::unique_ptr<Kernel>(new SpaceDepthKernel(node, false, b, false));
}

}  // namespace opscope::engine
