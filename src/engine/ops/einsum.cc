// Einsum, mapped onto strided gathers (transposes, diagonals, broadcasts), row sums and batched
// matrix multiplication.
//
// The equation is parsed once. At run time every operand becomes a strided view whose axes are
// its distinct labels: a label repeated inside one operand ("ii", a diagonal) gets the sum of
// its strides; a size-1 dim facing a larger one gets stride 0 (broadcast); "..." expands to
// right-aligned anonymous labels shared by all operands. Operands are then contracted left to
// right. For a pair A, B, labels are classified against `keep` (the output's labels plus those
// of operands still to come):
//   batch = in A and B, kept;  m = only in A, kept;  n = only in B, kept;
//   k = in A and B, not kept (contracted); labels in one operand only and not kept are summed
//   out of that operand first.
// A is gathered contiguously as [batch, m, k], B as [batch, k, n], and one batched matmul gives
// [batch, m, n] (oneDNN for float32, a plain loop for float64). A single operand (or the final
// result) is gathered as [output labels, summed labels] and row-summed: this covers transposes
// ("ij->ji"), reductions ("ij->i"), traces and diagonals ("ii->i", "...ii->...i").
//
// Implicit output (no "->"): the broadcast labels, then the labels that occur exactly once, in
// alphabetical order (numpy's rule).
#include <algorithm>
#include <deque>
#include <map>
#include <tuple>
#include <type_traits>

#include "engine/memory_limit.h"
#include "engine/ops/common.h"
#include "engine/ops/dnnl_common.h"

namespace opscope::engine {
namespace {

constexpr int kEllipsis = -1;
constexpr int kFirstBroadcastLabel = 52;  // labels 0-51 are a-z, A-Z

int LabelOf(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -2;
}

struct Equation {
  std::vector<std::vector<int>> inputs;  // labels, kEllipsis for "..."
  std::vector<int> output;
  bool explicit_output = false;
};

Status ParseTerm(const Node& n, const std::string& eq, const std::string& term,
                 std::vector<int>* labels) {
  for (size_t i = 0; i < term.size();) {
    if (term.compare(i, 3, "...") == 0) {
      if (std::count(labels->begin(), labels->end(), kEllipsis))
        return NodeError(n, "equation '" + eq + "': more than one '...' in a term");
      labels->push_back(kEllipsis);
      i += 3;
      continue;
    }
    int l = LabelOf(term[i]);
    if (l < 0)
      return NodeError(n,
                       "equation '" + eq + "': unexpected character '" + term.substr(i, 1) + "'");
    labels->push_back(l);
    ++i;
  }
  return Status();
}

Status ParseEquation(const Node& n, const std::string& raw, Equation* e) {
  std::string eq;
  for (char c : raw)
    if (c != ' ') eq += c;
  if (eq.empty()) return NodeError(n, "attribute equation is required");
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    e->inputs.emplace_back();
    OPSCOPE_RETURN_IF_ERROR(ParseTerm(n, eq, lhs.substr(start, comma - start), &e->inputs.back()));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    e->explicit_output = true;
    OPSCOPE_RETURN_IF_ERROR(ParseTerm(n, eq, eq.substr(arrow + 2), &e->output));
    std::vector<int> seen;
    for (int l : e->output) {
      if (std::count(seen.begin(), seen.end(), l))
        return NodeError(n, "equation '" + eq + "': output repeats a label");
      seen.push_back(l);
      if (l == kEllipsis) continue;
      bool found = false;
      for (auto& in : e->inputs) found |= std::count(in.begin(), in.end(), l) > 0;
      if (!found)
        return NodeError(n, "equation '" + eq + "': output label '" +
                                std::string(1, l < 26 ? 'a' + l : 'A' + l - 26) +
                                "' does not occur in any input");
    }
  }
  return Status();
}

// Labels with their sizes, after "..." expansion, for concrete input shapes.
struct Resolved {
  std::vector<std::vector<int>> inputs;  // per operand, per dim
  std::vector<int> output;
  std::map<int, int64_t> size;
};

StatusOr<Resolved> Resolve(const Node& n, const std::string& eq_text, const Equation& e,
                           const std::vector<std::vector<int64_t>>& shapes) {
  if (shapes.size() != e.inputs.size())
    return NodeError(n, "equation '" + eq_text + "' has " + std::to_string(e.inputs.size()) +
                            " operands but the node has " + std::to_string(shapes.size()) +
                            " inputs");
  Resolved r;
  int max_ell = 0;
  std::vector<int> ell_rank(shapes.size(), 0);
  for (size_t i = 0; i < shapes.size(); ++i) {
    int named = static_cast<int>(e.inputs[i].size());
    bool has_ell = std::count(e.inputs[i].begin(), e.inputs[i].end(), kEllipsis) > 0;
    if (has_ell) --named;
    int rank = static_cast<int>(shapes[i].size());
    if (has_ell ? rank < named : rank != named)
      return NodeError(n, "equation '" + eq_text + "': operand " + std::to_string(i) +
                              " has rank " + std::to_string(rank) + " but its term has " +
                              std::to_string(named) + " labels");
    ell_rank[i] = has_ell ? rank - named : 0;
    max_ell = std::max(max_ell, ell_rank[i]);
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<int> labels;
    for (int l : e.inputs[i]) {
      if (l != kEllipsis) {
        labels.push_back(l);
        continue;
      }
      for (int j = 0; j < ell_rank[i]; ++j)
        labels.push_back(kFirstBroadcastLabel + max_ell - ell_rank[i] + j);
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      int64_t s = shapes[i][d];
      auto it = r.size.find(labels[d]);
      if (it == r.size.end() || it->second == 1) {
        r.size[labels[d]] = s;
      } else if (s != it->second && s != 1) {
        return NodeError(n, "equation '" + eq_text + "': a label has sizes " +
                                std::to_string(it->second) + " and " + std::to_string(s));
      }
    }
    r.inputs.push_back(std::move(labels));
  }
  if (e.explicit_output) {
    for (int l : e.output) {
      if (l != kEllipsis) {
        r.output.push_back(l);
        continue;
      }
      for (int j = 0; j < max_ell; ++j) r.output.push_back(kFirstBroadcastLabel + j);
    }
  } else {
    for (int j = 0; j < max_ell; ++j) r.output.push_back(kFirstBroadcastLabel + j);
    std::map<int, int> count;
    for (auto& in : e.inputs)
      for (int l : in)
        if (l != kEllipsis) ++count[l];
    for (auto& [l, c] : count)  // map order: a-z then A-Z; numpy sorts by character code
      if (c == 1) r.output.push_back(l);
    std::stable_sort(r.output.begin() + max_ell, r.output.end(), [](int a, int b) {
      auto code = [](int l) { return l < 26 ? 'a' + l : 'A' + (l - 26); };
      return code(a) < code(b);
    });
  }
  return r;
}

template <typename T>
struct View {
  std::vector<int> labels;  // distinct
  std::vector<int64_t> strides;
  const T* data = nullptr;
};

bool Has(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }

template <typename T>
View<T> MakeView(const std::vector<int>& labels, const std::vector<int64_t>& shape, const T* data,
                 const std::map<int, int64_t>& size) {
  View<T> v;
  v.data = data;
  int64_t stride = 1;
  std::vector<int64_t> st(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    st[d] = stride;
    stride *= shape[d];
  }
  for (size_t d = 0; d < labels.size(); ++d) {
    // A size-1 dim against a larger label size broadcasts.
    int64_t s = shape[d] == 1 && size.at(labels[d]) != 1 ? 0 : st[d];
    auto it = std::find(v.labels.begin(), v.labels.end(), labels[d]);
    if (it == v.labels.end()) {
      v.labels.push_back(labels[d]);
      v.strides.push_back(s);
    } else {
      v.strides[it - v.labels.begin()] += s;  // repeated label: diagonal
    }
  }
  return v;
}

// Copies `v` into `out` contiguously in label order `order` (every label of v exactly once).
template <typename T>
void Gather(const View<T>& v, const std::vector<int>& order, const std::map<int, int64_t>& size,
            std::vector<T>* out) {
  const size_t r = order.size();
  std::vector<int64_t> dims(r), st(r);
  for (size_t i = 0; i < r; ++i) {
    dims[i] = size.at(order[i]);
    st[i] = v.strides[std::find(v.labels.begin(), v.labels.end(), order[i]) - v.labels.begin()];
  }
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  out->resize(static_cast<size_t>(total));
  if (total == 0) return;
  if (r == 0) {
    (*out)[0] = v.data[0];
    return;
  }
  const int64_t inner = dims[r - 1], inner_st = st[r - 1];
  const int64_t rows = total / inner;
  T* dst = out->data();
  ParallelFor(rows, inner, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      int64_t rem = row, off = 0;
      for (size_t d = r - 1; d-- > 0;) {
        off += (rem % dims[d]) * st[d];
        rem /= dims[d];
      }
      const T* src = v.data + off;
      T* o = dst + row * inner;
      if (inner_st == 1) {
        std::copy(src, src + inner, o);
      } else {
        for (int64_t i = 0; i < inner; ++i) o[i] = src[i * inner_st];
      }
    }
  });
}

// Sums `v` over every label not in `keep_order`; result contiguous in keep_order.
template <typename T>
View<T> Reduce(const View<T>& v, const std::vector<int>& keep_order,
               const std::map<int, int64_t>& size, std::deque<std::vector<T>>* store) {
  std::vector<int> order = keep_order;
  int64_t inner = 1;
  for (int l : v.labels)
    if (!Has(keep_order, l)) {
      order.push_back(l);
      inner *= size.at(l);
    }
  store->emplace_back();
  std::vector<T>& g = store->back();
  Gather(v, order, size, &g);
  if (order.size() != keep_order.size()) {
    int64_t rows = 1;
    for (int l : keep_order) rows *= size.at(l);
    std::vector<T> sums(static_cast<size_t>(rows), T(0));
    const T* src = g.data();
    ParallelFor(rows, inner, [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        T s = 0;
        for (int64_t i = 0; i < inner; ++i) s += src[row * inner + i];
        sums[row] = s;
      }
    });
    g = std::move(sums);
  }
  View<T> out;
  out.labels = keep_order;
  out.data = g.data();
  int64_t stride = 1;
  out.strides.resize(keep_order.size());
  for (size_t d = keep_order.size(); d-- > 0;) {
    out.strides[d] = stride;
    stride *= size.at(keep_order[d]);
  }
  return out;
}

class EinsumKernel : public Kernel {
 public:
  EinsumKernel(const Node& node, std::string eq, Equation e)
      : node_(node), eq_text_(std::move(eq)), eq_(std::move(e)) {}

  Status Run(KernelContext& ctx) override {
    std::vector<std::vector<int64_t>> shapes;
    DataType dt = DataType::kFloat32;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor* t = ctx.input(i);
      if (!t) return NodeError(node_, "input " + std::to_string(i) + " is missing");
      if (i == 0) dt = t->dtype();
      if (t->dtype() != dt || (dt != DataType::kFloat32 && dt != DataType::kFloat64))
        return NodeError(node_, "inputs must all be float32 or all float64");
      shapes.push_back(t->shape());
    }
    OPSCOPE_ASSIGN_OR_RETURN(Resolved r, Resolve(node_, eq_text_, eq_, shapes));
    std::vector<int64_t> out_shape;
    for (int l : r.output) out_shape.push_back(r.size.at(l));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, dt, out_shape));
    if (dt == DataType::kFloat32) return Compute<float>(ctx, r, y);
    return Compute<double>(ctx, r, y);
  }

  // FLOPs: one operand: one add per element of the label space (prod of all label sizes);
  // two or more: 2 * prod of all label sizes per pairwise contraction (exact for the batched
  // matmul forms; an upper bound when a contraction's pre-reduction shrinks the space).
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    std::vector<std::vector<int64_t>> shapes;
    for (const TensorDesc& d : in) shapes.push_back(d.shape);
    auto r = Resolve(node_, eq_text_, eq_, shapes);
    if (!r.ok()) return c;
    double space = 1;
    for (auto& [l, s] : r->size) space *= static_cast<double>(s);
    c.flops = in.size() <= 1 ? space : 2 * space * static_cast<double>(in.size() - 1);
    return c;
  }

 private:
  template <typename T>
  Status Compute(KernelContext& ctx, const Resolved& r, Tensor* y) {
    if (y->numel() == 0) return Status();
    for (auto& [l, s] : r.size)
      if (s == 0) {  // an empty summed label: the sum is zero
        std::fill(y->data<T>(), y->data<T>() + y->numel(), T(0));
        return Status();
      }
    std::deque<std::vector<T>> store;
    const int n = ctx.num_inputs();
    View<T> cur = MakeView(r.inputs[0], ctx.input(0)->shape(), ctx.input(0)->data<T>(), r.size);
    for (int i = 1; i < n; ++i) {
      std::vector<int> keep = r.output;
      for (int j = i + 1; j < n; ++j)
        for (int l : r.inputs[j])
          if (!Has(keep, l)) keep.push_back(l);
      View<T> b = MakeView(r.inputs[i], ctx.input(i)->shape(), ctx.input(i)->data<T>(), r.size);
      OPSCOPE_ASSIGN_OR_RETURN(cur, Contract(cur, b, keep, r.size, &store));
    }
    View<T> fin = Reduce(cur, r.output, r.size, &store);
    std::copy(fin.data, fin.data + y->numel(), y->data<T>());
    return Status();
  }

  template <typename T>
  StatusOr<View<T>> Contract(const View<T>& a_in, const View<T>& b_in, const std::vector<int>& keep,
                             const std::map<int, int64_t>& size,
                             std::deque<std::vector<T>>* store) {
    // Sum out labels private to one side and not needed later.
    auto private_keep = [&](const View<T>& x, const View<T>& other) {
      std::vector<int> k;
      for (int l : x.labels)
        if (Has(keep, l) || Has(other.labels, l)) k.push_back(l);
      return k;
    };
    std::vector<int> ka = private_keep(a_in, b_in), kb = private_keep(b_in, a_in);
    View<T> a = ka.size() == a_in.labels.size() ? a_in : Reduce(a_in, ka, size, store);
    View<T> b = kb.size() == b_in.labels.size() ? b_in : Reduce(b_in, kb, size, store);
    std::vector<int> batch, m, nn, k;
    for (int l : a.labels) {
      bool in_b = Has(b.labels, l), kept = Has(keep, l);
      if (in_b && kept)
        batch.push_back(l);
      else if (in_b)
        k.push_back(l);
      else
        m.push_back(l);
    }
    for (int l : b.labels)
      if (!Has(a.labels, l)) nn.push_back(l);
    auto prod = [&](const std::vector<int>& ls) {
      int64_t p = 1;
      for (int l : ls) p *= size.at(l);
      return p;
    };
    // The pairwise product can be far larger than the inputs and the output ("i,j,k->" makes
    // an i*j intermediate): sized and checked against the tensor memory limit before it exists.
    std::vector<int64_t> c_dims;
    for (const auto* ls : {&batch, &m, &nn})
      for (int l : *ls) c_dims.push_back(size.at(l));
    int64_t c_numel = 0;
    if (!CheckedNumel(c_dims, &c_numel) || static_cast<uint64_t>(c_numel) > SIZE_MAX / sizeof(T))
      return NodeError(node_, "an intermediate product of shape " + ShapeString(c_dims) +
                                  " overflows a 64-bit size");
    if (std::string why = TensorMemoryError(static_cast<size_t>(c_numel) * sizeof(T)); !why.empty())
      return ResourceExhausted("node '" + node_.name +
                               "' (Einsum): an intermediate product of "
                               "shape " +
                               ShapeString(c_dims) + " " + why);
    const int64_t B = prod(batch), M = prod(m), N = prod(nn), K = prod(k);
    std::vector<int> ao = batch, bo = batch;
    ao.insert(ao.end(), m.begin(), m.end());
    ao.insert(ao.end(), k.begin(), k.end());
    bo.insert(bo.end(), k.begin(), k.end());
    bo.insert(bo.end(), nn.begin(), nn.end());
    store->emplace_back(static_cast<size_t>(B * M * N));
    std::vector<T>& c = store->back();
    bool done = false;
    if constexpr (std::is_same_v<T, float>) {
      // Operands whose label groups are already laid out as [batch][m][k] / [batch][k][n] with
      // one stride per group (e.g. "bhqd,bhkd->bhqk": B is read transposed) go to oneDNN as
      // strided descriptors, without a copy.
      int64_t sa[3], sb[3];
      if (GroupStrides(a, {batch, m, k}, size, sa) && GroupStrides(b, {batch, k, nn}, size, sb)) {
        OPSCOPE_ASSIGN_OR_RETURN(done, StridedMatMul(B, M, K, N, a.data, sa, b.data, sb, c.data()));
      }
    }
    if (!done) {
      std::vector<T> ga, gb;
      Gather(a, ao, size, &ga);
      Gather(b, bo, size, &gb);
      OPSCOPE_RETURN_IF_ERROR(BatchedMatMul(B, M, K, N, ga.data(), gb.data(), c.data()));
    }
    View<T> out;
    out.labels = batch;
    out.labels.insert(out.labels.end(), m.begin(), m.end());
    out.labels.insert(out.labels.end(), nn.begin(), nn.end());
    out.data = c.data();
    out.strides.resize(out.labels.size());
    int64_t stride = 1;
    for (size_t d = out.labels.size(); d-- > 0;) {
      out.strides[d] = stride;
      stride *= size.at(out.labels[d]);
    }
    return out;
  }

  Status BatchedMatMul(int64_t B, int64_t M, int64_t K, int64_t N, const double* a, const double* b,
                       double* c) {
    ParallelFor(B * M, K * N, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t bi = r / M;
        double* row = c + r * N;
        std::fill(row, row + N, 0.0);
        for (int64_t kk = 0; kk < K; ++kk) {
          const double av = a[r * K + kk];
          const double* brow = b + (bi * K + kk) * N;
          for (int64_t j = 0; j < N; ++j) row[j] += av * brow[j];
        }
      }
    });
    return Status();
  }

  Status BatchedMatMul(int64_t B, int64_t M, int64_t K, int64_t N, const float* a, const float* b,
                       float* c) {
    auto key = std::make_tuple(B, M, K, N);
    auto it = prims_.find(key);
    if (it == prims_.end()) {
      Prim p;
      OPSCOPE_RETURN_IF_ERROR(DnnlCall(node_, "create the einsum matmul", [&] {
        auto a_md = DnnlPlainDesc({B, M, K}), b_md = DnnlPlainDesc({B, K, N}),
             c_md = DnnlPlainDesc({B, M, N});
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), DnnlEngine());
        p.prim = dnnl::matmul(pd);
        p.a = dnnl::memory(a_md, DnnlEngine(), nullptr);
        p.b = dnnl::memory(b_md, DnnlEngine(), nullptr);
        p.c = dnnl::memory(c_md, DnnlEngine(), nullptr);
      }));
      it = prims_.emplace(key, std::move(p)).first;
    }
    Prim& p = it->second;
    return DnnlCall(node_, "run the einsum matmul", [&] {
      p.a.set_data_handle(const_cast<float*>(a));
      p.b.set_data_handle(const_cast<float*>(b));
      p.c.set_data_handle(c);
      p.prim.execute(DnnlStream(),
                     {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}});
      DnnlStream().wait();
    });
  }

  // Stride of each label group of `v` viewed as one dim; false if a group's labels are not
  // nested (stride[i] == stride[i+1] * size[i+1]) or broadcast (stride 0).
  static bool GroupStrides(const View<float>& v, const std::vector<std::vector<int>>& groups,
                           const std::map<int, int64_t>& size, int64_t* out) {
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::vector<int>& ls = groups[g];
      if (ls.empty()) {
        out[g] = 1;
        continue;
      }
      auto stride_of = [&](int l) {
        return v.strides[std::find(v.labels.begin(), v.labels.end(), l) - v.labels.begin()];
      };
      for (size_t i = 0; i + 1 < ls.size(); ++i)
        if (stride_of(ls[i]) != stride_of(ls[i + 1]) * size.at(ls[i + 1])) return false;
      out[g] = stride_of(ls.back());
      if (out[g] == 0) return false;
    }
    return true;
  }

  // Runs C = A x B on strided operands; false (not an error) when oneDNN has no kernel for the
  // strides, so the caller gathers instead.
  StatusOr<bool> StridedMatMul(int64_t B, int64_t M, int64_t K, int64_t N, const float* a,
                               const int64_t* sa, const float* b, const int64_t* sb, float* c) {
    std::vector<int64_t> key = {B, M, K, N, sa[0], sa[1], sa[2], sb[0], sb[1], sb[2]};
    auto it = strided_.find(key);
    if (it == strided_.end()) {
      Prim p;
      Status st = DnnlCall(node_, "create the strided einsum matmul", [&] {
        dnnl::memory::desc a_md({B, M, K}, dnnl::memory::data_type::f32, {sa[0], sa[1], sa[2]});
        dnnl::memory::desc b_md({B, K, N}, dnnl::memory::data_type::f32, {sb[0], sb[1], sb[2]});
        auto c_md = DnnlPlainDesc({B, M, N});
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), DnnlEngine());
        p.prim = dnnl::matmul(pd);
        p.a = dnnl::memory(a_md, DnnlEngine(), nullptr);
        p.b = dnnl::memory(b_md, DnnlEngine(), nullptr);
        p.c = dnnl::memory(c_md, DnnlEngine(), nullptr);
      });
      if (!st.ok()) p.prim = dnnl::primitive();  // remembered as "gather instead"
      it = strided_.emplace(key, std::move(p)).first;
    }
    Prim& p = it->second;
    if (!p.prim) return false;
    OPSCOPE_RETURN_IF_ERROR(DnnlCall(node_, "run the strided einsum matmul", [&] {
      p.a.set_data_handle(const_cast<float*>(a));
      p.b.set_data_handle(const_cast<float*>(b));
      p.c.set_data_handle(c);
      p.prim.execute(DnnlStream(),
                     {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}});
      DnnlStream().wait();
    }));
    return true;
  }

  struct Prim {
    dnnl::primitive prim;
    dnnl::memory a, b, c;
  };

  Node node_;
  std::string eq_text_;
  Equation eq_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, Prim> prims_;
  std::map<std::vector<int64_t>, Prim> strided_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Einsum(const Node& node) {
  std::string eq = node.attrs.String("equation", "");
  Equation e;
  OPSCOPE_RETURN_IF_ERROR(ParseEquation(node, eq, &e));
  if (!node.inputs.empty() && node.inputs.size() != e.inputs.size())
    return NodeError(node, "equation '" + eq + "' has " + std::to_string(e.inputs.size()) +
                               " operands but the node has " + std::to_string(node.inputs.size()) +
                               " inputs");
  return std::unique_ptr<Kernel>(new EinsumKernel(node, eq, std::move(e)));
}

}  // namespace opscope::engine
