// MatMul and Gemm on oneDNN's matmul primitive.
//
// MatMul: numpy semantics. A 1-D A is [1,K] and a 1-D B is [K,1], the inserted dim dropped from
// the output; batch dims broadcast. Operands are padded with leading 1s to a common rank and
// passed to one batched primitive (oneDNN broadcasts size-1 batch dims itself). A fused kBiasAdd
// becomes the primitive's bias ([1,..,1,N]); fused activations are eltwise post-ops, applied
// after the bias.
//
// Gemm: Y = alpha * A' B' + beta * C, A' = transA ? A^T : A (likewise B). Transposition is a
// strided memory descriptor, alpha an output scale, and beta * C a binary-add post-op whose
// src1 keeps C's broadcast shape ((1,1), (1,N), (M,1) or (M,N)); C is only copied when beta != 1
// or oneDNN refuses the broadcast shape (then it is expanded to (M,N)). Fused activations follow
// the add, as the separate ops would.
//
// Constant B (a model weight, KernelContext::input_is_constant) is handed to oneDNN as `any`
// layout and reordered once into the layout the primitive prefers (DnnlWeightCache), so
// oneDNN's brgemm matmul need not re-pack a plain or transposed B on every call. Measured on
// the MobileNet-style classifier Gemm (1x1280 by 1280x1000, transB; memory-bound): 0.45 ->
// 0.42 ms at 1 thread, 0.265 -> 0.245 ms at 2 threads. For batched 3-D weights oneDNN keeps
// the plain layout and nothing is copied.
//
// Primitives are cached by operand shapes (and B's constness) and rebuilt when they change.
#include <algorithm>
#include <cstring>

#include "engine/ops/common.h"
#include "engine/ops/dnnl_common.h"

namespace opscope::engine {
namespace {

constexpr int kMaxDnnlRank = 12;  // DNNL_MAX_NDIMS in oneDNN 2.6

// The A, B and Y memories of a matmul primitive (MatMul and Gemm), with a constant B kept
// prepacked in the primitive's preferred layout.
struct MatmulOperands {
  dnnl::memory a, b, y;
  dnnl::memory::desc b_plain, b_prim;  // B as given, and as the primitive wants a constant B
  DnnlWeightCache b_cache;

  // B's descriptor for creating the primitive: `any` for a constant B, else B as given.
  dnnl::memory::desc BDesc(bool b_const) const {
    return b_const ? dnnl::memory::desc(b_plain.dims(), dnnl::memory::data_type::f32,
                                        dnnl::memory::format_tag::any)
                   : b_plain;
  }
  // After creating the primitive (inside DnnlCall).
  void Create(const dnnl::memory::desc& a_md, const dnnl::memory::desc& y_md,
              const dnnl::matmul::primitive_desc& pd) {
    a = dnnl::memory(a_md, DnnlEngine(), nullptr);
    b = dnnl::memory(b_plain, DnnlEngine(), nullptr);
    y = dnnl::memory(y_md, DnnlEngine(), nullptr);
    b_prim = pd.weights_desc();
    b_cache.Clear();
  }
  // SRC/WEIGHTS/DST arguments for one execution.
  StatusOr<std::unordered_map<int, dnnl::memory>> Args(const Node& node, const Tensor* ta,
                                                       const Tensor* tb, bool b_const, Tensor* ty) {
    dnnl::memory w = b;
    if (b_const) {
      OPSCOPE_ASSIGN_OR_RETURN(w, b_cache.Get(node, tb->data<float>(), b_plain, b_prim, true));
    }
    OPSCOPE_RETURN_IF_ERROR(DnnlCall(node, "bind the operands", [&] {
      a.set_data_handle(const_cast<float*>(ta->data<float>()));
      if (!b_const) b.set_data_handle(const_cast<float*>(tb->data<float>()));
      y.set_data_handle(ty->data<float>());
    }));
    return std::unordered_map<int, dnnl::memory>{
        {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}};
  }
};

class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const Node& node) : node_(node) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* a = ctx.input(0);
    const Tensor* b = ctx.input(1);
    if (!a || !b) return NodeError(node_, "inputs A and B are required");
    if (a->dtype() != DataType::kFloat32 || b->dtype() != DataType::kFloat32)
      return NodeError(node_, std::string("only float32 is supported, got ") +
                                  DataTypeName(a->dtype()) + " x " + DataTypeName(b->dtype()));
    if (a->rank() == 0 || b->rank() == 0)
      return NodeError(node_, "scalar operands are not allowed");
    std::vector<int64_t> as = a->shape(), bs = b->shape();
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    if (bs[bs.size() - 2] != K)
      return NodeError(node_, "inner dimensions differ: A is [..," + std::to_string(M) + "," +
                                  std::to_string(K) + "], B is [.." +
                                  std::to_string(bs[bs.size() - 2]) + "," + std::to_string(N) +
                                  "]");
    std::vector<int64_t> abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2), batch;
    if (!BroadcastShapes(abatch, bbatch, &batch))
      return NodeError(node_, "batch dimensions of A and B do not broadcast");
    if (bias_.numel() > 0 && bias_.numel() != N)
      return NodeError(node_, "fused bias has " + std::to_string(bias_.numel()) +
                                  " elements but the output's last dim is " + std::to_string(N));
    std::vector<int64_t> out = batch;
    if (a->rank() > 1) out.push_back(M);
    if (b->rank() > 1) out.push_back(N);
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, out));
    if (y->numel() == 0) return Status();
    if (K == 0) {
      float* py = y->data<float>();
      for (int64_t i = 0; i < y->numel(); ++i)
        py[i] = ApplyPostOpsScalar(post_ops_, bias_.numel() ? bias_.data<float>()[i % N] : 0.f);
      return Status();
    }
    const size_t r = batch.size() + 2;
    if (r > kMaxDnnlRank)
      return NodeError(node_, "rank " + std::to_string(r) + " exceeds oneDNN's limit of 12");
    as.insert(as.begin(), r - as.size(), 1);
    bs.insert(bs.begin(), r - bs.size(), 1);
    std::vector<int64_t> ys = batch;
    ys.push_back(M);
    ys.push_back(N);

    const bool b_const = ctx.input_is_constant(1);
    std::vector<int64_t> key = as;
    key.insert(key.end(), bs.begin(), bs.end());
    key.push_back(b_const);
    if (key != key_) {
      key_.clear();
      OPSCOPE_RETURN_IF_ERROR(Build(as, bs, ys, b_const));
      key_ = key;
    }
    OPSCOPE_ASSIGN_OR_RETURN(auto args, io_.Args(node_, a, b, b_const, y));
    return DnnlCall(node_, "run the matmul", [&] {
      if (bias_.numel()) args[DNNL_ARG_BIAS] = bias_mem_;
      prim_.execute(DnnlStream(), args);
      DnnlStream().wait();
    });
  }

  // FLOPs: 2 * batch * M * N * K (= 2 * output elements * K), plus one add per output element
  // for a fused bias and one op per output element per fused activation.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (in.size() < 2 || out.empty() || in[0].shape.empty()) return c;
    double y = static_cast<double>(out[0].numel());
    c.flops = 2 * y * static_cast<double>(in[0].shape.back());
    if (bias_.numel()) {
      c.flops += y;
      c.bytes += static_cast<double>(bias_.nbytes());
    }
    c.flops += y * static_cast<double>(post_ops_.size());
    return c;
  }

  bool AddPostOp(const PostOp& op) override {
    if (op.kind == PostOpKind::kBiasAdd) {
      // The bias must come before any activation, and there is only one.
      // Accepts [N] and [1, .., 1, N].
      if (!post_ops_.empty() || bias_.numel() || !op.bias ||
          op.bias->dtype() != DataType::kFloat32 || op.bias->rank() < 1 || op.bias->numel() == 0 ||
          op.bias->numel() != op.bias->dim(-1))
        return false;
      bias_ = Tensor(DataType::kFloat32, {op.bias->numel()});
      CopyTensorData(*op.bias, &bias_);
    } else {
      if (!DnnlPostOpFits(post_ops_, op)) return false;
      post_ops_ = WithPostOp(post_ops_, op);
    }
    key_.clear();
    return true;
  }

 private:
  Status Build(const std::vector<int64_t>& as, const std::vector<int64_t>& bs,
               const std::vector<int64_t>& ys, bool b_const) {
    using dnnl::memory;
    return DnnlCall(node_, "create the matmul primitive", [&] {
      memory::desc a_md = DnnlPlainDesc(as), y_md = DnnlPlainDesc(ys);
      io_.b_plain = DnnlPlainDesc(bs);
      memory::desc b_md = io_.BDesc(b_const);
      memory::desc bias_md;
      if (bias_.numel()) {
        std::vector<int64_t> bsh(ys.size(), 1);
        bsh.back() = bias_.numel();
        bias_md = DnnlPlainDesc(bsh);
      }
      dnnl::matmul::desc d = bias_.numel() ? dnnl::matmul::desc(a_md, b_md, bias_md, y_md)
                                           : dnnl::matmul::desc(a_md, b_md, y_md);
      dnnl::primitive_attr attr;
      if (!post_ops_.empty()) {
        dnnl::post_ops ops;
        for (const PostOp& op : post_ops_) AppendEltwisePostOp(op, &ops);
        attr.set_post_ops(ops);
      }
      dnnl::matmul::primitive_desc pd(d, attr, DnnlEngine());
      prim_ = dnnl::matmul(pd);
      io_.Create(a_md, y_md, pd);
      if (bias_.numel()) bias_mem_ = memory(bias_md, DnnlEngine(), bias_.data<float>());
    });
  }

  MemoryUse Memory() const override { return {0, io_.b_cache.Bytes()}; }

  Node node_;
  std::vector<PostOp> post_ops_;
  Tensor bias_;
  std::vector<int64_t> key_;
  dnnl::primitive prim_;
  MatmulOperands io_;
  dnnl::memory bias_mem_;
};

class GemmKernel : public Kernel {
 public:
  GemmKernel(const Node& node, bool ta, bool tb, float alpha, float beta)
      : node_(node), trans_a_(ta), trans_b_(tb), alpha_(alpha), beta_(beta) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* a = ctx.input(0);
    const Tensor* b = ctx.input(1);
    const Tensor* c = ctx.input(2);
    if (!a || !b) return NodeError(node_, "inputs A and B are required");
    if (a->dtype() != DataType::kFloat32 || b->dtype() != DataType::kFloat32 ||
        (c && c->dtype() != DataType::kFloat32))
      return NodeError(node_, "only float32 is supported");
    if (a->rank() != 2 || b->rank() != 2)
      return NodeError(node_, "A and B must be 2-D, got ranks " + std::to_string(a->rank()) +
                                  " and " + std::to_string(b->rank()));
    const int64_t M = trans_a_ ? a->dim(1) : a->dim(0), K = trans_a_ ? a->dim(0) : a->dim(1);
    const int64_t KB = trans_b_ ? b->dim(1) : b->dim(0), N = trans_b_ ? b->dim(0) : b->dim(1);
    if (K != KB)
      return NodeError(node_, "inner dimensions differ: op(A) is " + std::to_string(M) + "x" +
                                  std::to_string(K) + ", op(B) is " + std::to_string(KB) + "x" +
                                  std::to_string(N));
    int64_t cm = 1, cn = 1;
    bool use_c = c && beta_ != 0.f && c->numel() > 0;
    if (c) {
      if (c->rank() > 2) return NodeError(node_, "C must have rank <= 2");
      if (c->rank() == 2) cm = c->dim(0);
      if (c->rank() >= 1) cn = c->dim(-1);
      if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
        return NodeError(node_, "C of shape [" + std::to_string(cm) + "," + std::to_string(cn) +
                                    "] does not broadcast to [" + std::to_string(M) + "," +
                                    std::to_string(N) + "]");
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, {M, N}));
    if (y->numel() == 0) return Status();
    if (K == 0) {
      float* py = y->data<float>();
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          float v =
              use_c ? beta_ * c->data<float>()[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)] : 0.f;
          py[i * N + j] = ApplyPostOpsScalar(post_ops_, v);
        }
      return Status();
    }
    // src1 of the add post-op: C itself, or beta * C (possibly expanded to [M, N]).
    const float* c_data = nullptr;
    if (use_c) {
      if (beta_ == 1.f && !expand_c_) {
        c_data = c->data<float>();
      } else {
        int64_t em = expand_c_ ? M : cm, en = expand_c_ ? N : cn;
        c_buf_.resize(static_cast<size_t>(em * en));
        const float* pc = c->data<float>();
        for (int64_t i = 0; i < em; ++i)
          for (int64_t j = 0; j < en; ++j)
            c_buf_[i * en + j] = beta_ * pc[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
        c_data = c_buf_.data();
        if (expand_c_) cm = M, cn = N;
      }
    }
    const bool b_const = ctx.input_is_constant(1);
    std::vector<int64_t> key = {a->dim(0),       a->dim(1),       b->dim(0), b->dim(1),
                                use_c ? cm : -1, use_c ? cn : -1, b_const};
    if (key != key_) {
      key_.clear();
      Status st = Build(M, K, N, use_c, cm, cn, b_const);
      if (!st.ok() && use_c && !expand_c_ && (cm != M || cn != N)) {
        // oneDNN refused this broadcast of src1: expand C to [M, N] from now on.
        expand_c_ = true;
        return Run(ctx);
      }
      OPSCOPE_RETURN_IF_ERROR(st);
      key_ = key;
    }
    OPSCOPE_ASSIGN_OR_RETURN(auto args, io_.Args(node_, a, b, b_const, y));
    return DnnlCall(node_, "run the gemm", [&] {
      if (use_c) {
        c_mem_.set_data_handle(const_cast<float*>(c_data));
        args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = c_mem_;
      }
      prim_.execute(DnnlStream(), args);
      DnnlStream().wait();
    });
  }

  // FLOPs: 2*M*N*K, plus M*N for alpha != 1, M*N for adding C and M*N more when beta != 1
  // scales it, plus M*N per fused activation.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (in.size() < 2 || out.empty() || in[0].shape.size() != 2) return c;
    double mn = static_cast<double>(out[0].numel());
    double k = static_cast<double>(trans_a_ ? in[0].shape[0] : in[0].shape[1]);
    c.flops = 2 * mn * k;
    if (alpha_ != 1.f) c.flops += mn;
    if (in.size() > 2 && in[2].numel() > 0 && beta_ != 0.f) c.flops += beta_ != 1.f ? 2 * mn : mn;
    c.flops += mn * static_cast<double>(post_ops_.size());
    return c;
  }

  bool AddPostOp(const PostOp& op) override {
    if (!DnnlPostOpFits(post_ops_, op)) return false;
    post_ops_ = WithPostOp(post_ops_, op);
    key_.clear();
    return true;
  }

 private:
  Status Build(int64_t M, int64_t K, int64_t N, bool use_c, int64_t cm, int64_t cn, bool b_const) {
    using dnnl::memory;
    return DnnlCall(node_, "create the gemm primitive", [&] {
      memory::desc a_md({M, K}, memory::data_type::f32,
                        trans_a_ ? memory::dims{1, M} : memory::dims{K, 1});
      io_.b_plain = memory::desc({K, N}, memory::data_type::f32,
                                 trans_b_ ? memory::dims{1, K} : memory::dims{N, 1});
      memory::desc b_md = io_.BDesc(b_const);
      memory::desc y_md = DnnlPlainDesc({M, N});
      dnnl::matmul::desc d(a_md, b_md, y_md);
      dnnl::primitive_attr attr;
      if (alpha_ != 1.f) attr.set_output_scales(0, {alpha_});
      dnnl::post_ops ops;
      memory::desc c_md;
      if (use_c) {
        c_md = DnnlPlainDesc({cm, cn});
        ops.append_binary(dnnl::algorithm::binary_add, c_md);
      }
      for (const PostOp& op : post_ops_) AppendEltwisePostOp(op, &ops);
      attr.set_post_ops(ops);
      dnnl::matmul::primitive_desc pd(d, attr, DnnlEngine());
      prim_ = dnnl::matmul(pd);
      io_.Create(a_md, y_md, pd);
      if (use_c) c_mem_ = memory(c_md, DnnlEngine(), nullptr);
    });
  }

  MemoryUse Memory() const override { return {c_buf_.size() * sizeof(float), io_.b_cache.Bytes()}; }

  Node node_;
  bool trans_a_, trans_b_;
  float alpha_, beta_;
  bool expand_c_ = false;
  std::vector<PostOp> post_ops_;
  std::vector<float> c_buf_;
  std::vector<int64_t> key_;
  dnnl::primitive prim_;
  MatmulOperands io_;
  dnnl::memory c_mem_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_MatMul(const Node& node) {
  return std::unique_ptr<Kernel>(new MatMulKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_Gemm(const Node& node) {
  int64_t ta = node.attrs.Int("transA", 0), tb = node.attrs.Int("transB", 0);
  if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
    return NodeError(node, "transA/transB must be 0 or 1");
  return std::unique_ptr<Kernel>(new GemmKernel(
      node, ta == 1, tb == 1, node.attrs.Float("alpha", 1.f), node.attrs.Float("beta", 1.f)));
}

}  // namespace opscope::engine
