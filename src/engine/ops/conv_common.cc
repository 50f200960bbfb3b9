#include "engine/ops/conv_common.h"

#include "engine/ops/common.h"

namespace opscope::engine {

void AppendPostOps(const std::vector<PostOp>& post_ops, dnnl::primitive_attr* attr) {
  if (post_ops.empty()) return;
  dnnl::post_ops ops;
  for (const PostOp& op : post_ops) AppendEltwisePostOp(op, &ops);
  attr->set_post_ops(ops);
}

dnnl::memory::format_tag BlockedActivationTag(size_t rank) {
  using tag = dnnl::memory::format_tag;
  static const bool wide_vectors = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core || isa == dnnl::cpu_isa::avx512_core_vnni ||
           isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  }();
  if (rank == 3) return wide_vectors ? tag::nCw16c : tag::nCw8c;
  if (rank == 4) return wide_vectors ? tag::nChw16c : tag::nChw8c;
  return wide_vectors ? tag::nCdhw16c : tag::nCdhw8c;
}

Status CheckConvInputs(const Node& n, const Tensor* x, const Tensor* w, const Tensor* b) {
  if (!x || !w) return NodeError(n, "inputs X and W are required");
  if (x->dtype() != DataType::kFloat32 || w->dtype() != DataType::kFloat32)
    return NodeError(n, std::string("only float32 is supported, got ") + DataTypeName(x->dtype()) +
                            " input and " + DataTypeName(w->dtype()) + " weights");
  if (x->rank() < 3 || x->rank() > 5)
    return NodeError(n, "input X has rank " + std::to_string(x->rank()) +
                            "; 1-D, 2-D and 3-D convolutions (rank 3-5) are supported");
  if (w->rank() != x->rank())
    return NodeError(n, "weight W has rank " + std::to_string(w->rank()) + ", expected " +
                            std::to_string(x->rank()) + " like X");
  if (b && (b->dtype() != DataType::kFloat32 || b->rank() != 1))
    return NodeError(n, "bias B must be a 1-D float32 tensor");
  return Status();
}

}  // namespace opscope::engine
