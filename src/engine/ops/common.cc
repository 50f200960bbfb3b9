#include "engine/ops/common.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace opscope::engine {

bool BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                     std::vector<int64_t>* out) {
  size_t r = std::max(a.size(), b.size());
  out->assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1)
      (*out)[i] = da;
    else if (da == 1)
      (*out)[i] = db;
    else
      return false;
  }
  return true;
}

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in,
                                      const std::vector<int64_t>& out) {
  std::vector<int64_t> strides(out.size(), 0);
  // An empty tensor is never read, and its dimensions' running product can overflow ([2^56, 0]
  // after a Pad: found by model_struct_fuzz); a non-empty one's partial products are at most its
  // element count.
  if (std::find(in.begin(), in.end(), 0) != in.end()) return strides;
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(in.size()) - 1; i >= 0; --i) {
    size_t o = out.size() - in.size() + static_cast<size_t>(i);
    strides[o] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  return strides;
}

std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (v.empty()) return v;
  if (t.dtype() == DataType::kInt64) {
    std::memcpy(v.data(), t.raw(), v.size() * sizeof(int64_t));
  } else if (t.dtype() == DataType::kInt32) {
    const int32_t* p = t.data<int32_t>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  } else if (t.dtype() == DataType::kFloat32) {
    const float* p = t.data<float>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(p[i]);
  }
  return v;
}

double ReadScalar(const Tensor& t) {
  if (t.numel() == 0) return 0;
  switch (t.dtype()) {
    case DataType::kFloat32:
      return t.data<float>()[0];
    case DataType::kFloat64:
      return t.data<double>()[0];
    case DataType::kInt64:
      return static_cast<double>(t.data<int64_t>()[0]);
    case DataType::kInt32:
      return t.data<int32_t>()[0];
    case DataType::kUint8:
      return t.data<uint8_t>()[0];
    case DataType::kInt8:
      return t.data<int8_t>()[0];
    case DataType::kBool:
      return t.data<uint8_t>()[0];
    default:
      return 0;
  }
}

Isa BestIsa() {
  static const Isa isa = [] {
#if defined(__x86_64__) && defined(__GNUC__)
    const char* cap = std::getenv("OPSCOPE_MAX_ISA");
    const std::string max_isa = cap ? cap : "";
    if (max_isa == "baseline") return Isa::kBaseline;
    if (max_isa != "avx2" && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq"))
      return Isa::kAvx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
#endif
    return Isa::kBaseline;
  }();
  return isa;
}

void CopyTensorData(const Tensor& src, Tensor* dst) {
  if (src.raw() != dst->raw() && src.nbytes() > 0) std::memcpy(dst->raw(), src.raw(), src.nbytes());
}

}  // namespace opscope::engine
