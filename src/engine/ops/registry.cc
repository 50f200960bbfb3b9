// Generates the operator registry and the operator traits from ops.def (see kernel.h and
// op_traits.h).
#include <algorithm>
#include <unordered_map>

#include "engine/kernel.h"
#include "engine/op_traits.h"

namespace opscope::engine {

#define OPSCOPE_OP(name, traits, activation) \
  StatusOr<std::unique_ptr<Kernel>> Create_##name(const Node& node);
#include "engine/ops/ops.def"
#undef OPSCOPE_OP

namespace {

using namespace op_trait;  // the trait column names its bits without the namespace

// The activation column: a PostOpKind without its k, or None.
#define OPSCOPE_ACTIVATION_None std::nullopt
#define OPSCOPE_ACTIVATION_Relu PostOpKind::kRelu
#define OPSCOPE_ACTIVATION_LeakyRelu PostOpKind::kLeakyRelu
#define OPSCOPE_ACTIVATION_Clip PostOpKind::kClip
#define OPSCOPE_ACTIVATION_Sigmoid PostOpKind::kSigmoid
#define OPSCOPE_ACTIVATION_Tanh PostOpKind::kTanh
#define OPSCOPE_ACTIVATION_HardSigmoid PostOpKind::kHardSigmoid
#define OPSCOPE_ACTIVATION_HardSwish PostOpKind::kHardSwish

struct Entry {
  const char* op_type;
  KernelFactory factory;
  uint32_t traits;
  std::optional<PostOpKind> activation;
};
const Entry kEntries[] = {
#define OPSCOPE_OP(name, traits, activation) \
  {#name, &Create_##name, (traits), OPSCOPE_ACTIVATION_##activation},
#include "engine/ops/ops.def"
#undef OPSCOPE_OP
    {nullptr, nullptr, 0, std::nullopt},  // sentinel
};

OpTraits FromBits(uint32_t b, std::optional<PostOpKind> activation) {
  OpTraits t;
  t.shape_from_shapes = b & kShapeFromShapes;
  t.shape_only = b & kShapeOnly;
  t.data_dependent_shape = b & kDataDependentShape;
  t.view = b & kView;
  t.elementwise = b & kElementwise;
  t.arithmetic = b & kArithmetic;
  t.post_op_anchor = b & kPostOpAnchor;
  t.follows_layout = b & kFollowsLayout;
  t.reads_any_layout = b & kReadsAnyLayout;
  t.activation = activation;
  return t;
}

}  // namespace

KernelFactory FindKernel(const std::string& domain, const std::string& op_type) {
  if (!domain.empty() && domain != "ai.onnx") return nullptr;
  // Looked up for every node at load, twice (CheckSupported, BuildNodes): a hash lookup rather
  // than string compares over the whole table (6% of the instrumented model fuzzer's time).
  static const std::unordered_map<std::string, KernelFactory> by_name = [] {
    std::unordered_map<std::string, KernelFactory> m;
    for (const Entry& e : kEntries)
      if (e.op_type) m.emplace(e.op_type, e.factory);
    return m;
  }();
  auto it = by_name.find(op_type);
  return it == by_name.end() ? nullptr : it->second;
}

std::vector<std::string> SupportedOperators() {
  std::vector<std::string> v;
  for (const Entry& e : kEntries)
    if (e.op_type) v.push_back(e.op_type);
  std::sort(v.begin(), v.end());
  return v;
}

const std::vector<OpTraitsRow>& AllOpTraits() {
  static const std::vector<OpTraitsRow> rows = [] {
    std::vector<OpTraitsRow> r;
    for (const Entry& e : kEntries)
      if (e.op_type) r.push_back({e.op_type, FromBits(e.traits, e.activation)});
    return r;
  }();
  return rows;
}

const OpTraits& TraitsOf(const std::string& op_type) {
  static const std::unordered_map<std::string, OpTraits> by_name = [] {
    std::unordered_map<std::string, OpTraits> m;
    for (const OpTraitsRow& row : AllOpTraits()) m[row.op_type] = row.traits;
    return m;
  }();
  static const OpTraits kNone;
  auto it = by_name.find(op_type);
  return it == by_name.end() ? kNone : it->second;
}

}  // namespace opscope::engine
