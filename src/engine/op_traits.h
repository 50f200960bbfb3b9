// Operator traits: what the graph passes (fusion, folding, layout, the planner) need to know
// about an operator without running it. They are declared beside the operator in the single
// op list, ops/*.def, one row per operator:
//
//   OPSCOPE_OP(Relu, kShapeFromShapes | kElementwise, Relu)
//              name  traits (op_trait bits, or 0)      activation (a PostOpKind without its k,
//                                                       or None)
//
// so adding an operator with the usual behaviour (an elementwise activation that runs on
// channels-last data and fuses after a Conv, say) is that one row plus its kernel. The passes
// ask TraitsOf(op_type) instead of keeping sets of operator names. Operator-specific rewrites
// (Conv + BatchNormalization, the QDQ and Gelu patterns) still name their operators: they are
// patterns, not traits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/kernel.h"

namespace opscope::engine {

namespace op_trait {
enum Bits : uint32_t {
  // The output shapes follow from the input shapes alone, whatever the values (the values of
  // inputs after the first matter not even when they are not constant): after the planning run
  // an output of static-shaped inputs has a static shape. Other ops have a static output shape
  // only when every input but the first is constant.
  kShapeFromShapes = 1u << 0,
  // The outputs depend only on input 0's shape (Shape, Size): folded after the planning run
  // once that shape is static.
  kShapeOnly = 1u << 1,
  // The output shape depends on input values (NonZero, NonMaxSuppression): never static.
  kDataDependentShape = 1u << 2,
  // Output 0 is input 0's bytes under a new shape (Reshape, Flatten, Squeeze, Unsqueeze,
  // Identity): after the planning run such a step shares its input's memory.
  kView = 1u << 3,
  // Each output element is computed from the input elements at the same (broadcast) index:
  // layout-agnostic, so on inputs of the output's shape and scalar constants it runs unchanged on
  // channels-last data; fused after an anchor it keeps the anchor's output shape.
  kElementwise = 1u << 4,
  // Add, Sub, Mul, Div: a scalar or per-channel constant operand folds into a Conv's weights and
  // bias; a per-channel [N|1, C, 1, 1] operand broadcasts over channels-last data.
  kArithmetic = 1u << 5,
  // The kernel takes fused post-ops (Kernel::AddPostOp): the fusion pass starts a chain here.
  kPostOpAnchor = 1u << 6,
  // Spatial pooling or resizing whose output follows its input's layout (NHWC in, NHWC out).
  kFollowsLayout = 1u << 7,
  // Reads a channels-last input, writes [N, C, 1, 1] (the same bytes in either layout).
  kReadsAnyLayout = 1u << 8,
};
}  // namespace op_trait

struct OpTraits {
  bool shape_from_shapes = false;
  bool shape_only = false;
  bool data_dependent_shape = false;
  bool view = false;
  bool elementwise = false;  // implies layout-agnostic
  bool arithmetic = false;
  bool post_op_anchor = false;
  bool follows_layout = false;
  bool reads_any_layout = false;
  // The post-op this operator becomes when fused into its producer (Relu -> kRelu, Clip ->
  // kClip, ...); its parameters come from the node's attributes or constant inputs.
  std::optional<PostOpKind> activation;
};

// The traits of a default-domain operator in ops/*.def; an operator not in the list (or of
// another domain) has none.
const OpTraits& TraitsOf(const std::string& op_type);

// Every operator of the list with its traits, in list order (tests, `opscope ops`).
struct OpTraitsRow {
  const char* op_type;
  OpTraits traits;
};
const std::vector<OpTraitsRow>& AllOpTraits();

}  // namespace opscope::engine
