// Generates the operator registry from ops.def (see kernel.h).
#include <algorithm>

#include "engine/kernel.h"

namespace opscope::engine {

#define OPSCOPE_OP(name) StatusOr<std::unique_ptr<Kernel>> Create_##name(const Node& node);
#include "engine/ops/ops.def"
#undef OPSCOPE_OP

namespace {
struct Entry {
  const char* op_type;
  KernelFactory factory;
};
const Entry kEntries[] = {
#define OPSCOPE_OP(name) {#name, &Create_##name},
#include "engine/ops/ops.def"
#undef OPSCOPE_OP
    {nullptr, nullptr},  // sentinel
};
}  // namespace

KernelFactory FindKernel(const std::string& domain, const std::string& op_type) {
  if (!domain.empty() && domain != "ai.onnx") return nullptr;
  for (const Entry& e : kEntries)
    if (e.op_type && op_type == e.op_type) return e.factory;
  return nullptr;
}

std::vector<std::string> SupportedOperators() {
  std::vector<std::string> v;
  for (const Entry& e : kEntries)
    if (e.op_type) v.push_back(e.op_type);
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace opscope::engine
