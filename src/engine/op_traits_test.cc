// The op traits of ops/*.def: the table covers the registry, known operators have the traits
// the passes rely on, the traits agree with each other, and with what the kernels do: every
// post-op anchor's kernel takes a post-op, every activation is a post-op the convolution takes,
// and every elementwise operator gives the same result on channels-last data (it is
// layout-agnostic, which is what the layout pass assumes of it).
#include "engine/op_traits.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "engine/testing/kernel_runner.h"

namespace opscope::engine {
namespace {

using testing::MakeNode;

TEST(OpTraits, TableCoversEveryRegisteredOperator) {
  std::set<std::string> listed;
  for (const OpTraitsRow& row : AllOpTraits()) {
    EXPECT_TRUE(listed.insert(row.op_type).second) << row.op_type << " listed twice";
    EXPECT_NE(FindKernel("", row.op_type), nullptr) << row.op_type;
  }
  const std::vector<std::string> supported = SupportedOperators();
  EXPECT_EQ(listed, std::set<std::string>(supported.begin(), supported.end()));
}

TEST(OpTraits, KnownOperators) {
  const OpTraits& relu = TraitsOf("Relu");
  EXPECT_TRUE(relu.elementwise);
  EXPECT_TRUE(relu.shape_from_shapes);
  EXPECT_FALSE(relu.post_op_anchor);
  ASSERT_TRUE(relu.activation.has_value());
  EXPECT_EQ(*relu.activation, PostOpKind::kRelu);
  EXPECT_EQ(TraitsOf("Clip").activation, PostOpKind::kClip);
  EXPECT_EQ(TraitsOf("HardSwish").activation, PostOpKind::kHardSwish);
  EXPECT_EQ(TraitsOf("LeakyRelu").activation, PostOpKind::kLeakyRelu);
  EXPECT_FALSE(TraitsOf("Exp").activation.has_value());
  EXPECT_TRUE(TraitsOf("Exp").elementwise);

  const OpTraits& add = TraitsOf("Add");
  EXPECT_TRUE(add.elementwise && add.arithmetic && add.post_op_anchor && add.shape_from_shapes);
  EXPECT_FALSE(add.activation.has_value());
  EXPECT_TRUE(TraitsOf("Div").arithmetic);
  EXPECT_FALSE(TraitsOf("Pow").arithmetic);
  EXPECT_FALSE(TraitsOf("Max").arithmetic);
  EXPECT_TRUE(TraitsOf("Max").post_op_anchor);

  const OpTraits& conv = TraitsOf("Conv");
  EXPECT_TRUE(conv.post_op_anchor && conv.shape_from_shapes);
  EXPECT_FALSE(conv.elementwise || conv.arithmetic || conv.view);
  EXPECT_TRUE(TraitsOf("MatMul").post_op_anchor);
  EXPECT_FALSE(TraitsOf("Softmax").post_op_anchor);

  for (const char* v : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
    EXPECT_TRUE(TraitsOf(v).view) << v;
  EXPECT_FALSE(TraitsOf("Transpose").view);
  EXPECT_TRUE(TraitsOf("Shape").shape_only);
  EXPECT_TRUE(TraitsOf("Size").shape_only);
  EXPECT_TRUE(TraitsOf("NonZero").data_dependent_shape);
  EXPECT_TRUE(TraitsOf("NonMaxSuppression").data_dependent_shape);
  EXPECT_FALSE(TraitsOf("Reshape").shape_from_shapes);  // its shape is an input's value
  EXPECT_TRUE(TraitsOf("MaxPool").follows_layout && TraitsOf("AveragePool").follows_layout);
  EXPECT_TRUE(TraitsOf("GlobalAveragePool").reads_any_layout);
  // Comparisons and logic produce bools: not elementwise in the layout pass's sense.
  EXPECT_FALSE(TraitsOf("Equal").elementwise);

  const OpTraits& none = TraitsOf("NoSuchOp");
  EXPECT_FALSE(none.elementwise || none.view || none.post_op_anchor || none.shape_from_shapes ||
               none.activation.has_value());
}

TEST(OpTraits, TraitsAreConsistent) {
  for (const OpTraitsRow& row : AllOpTraits()) {
    const OpTraits& t = row.traits;
    const std::string op = row.op_type;
    EXPECT_TRUE(!t.activation || t.elementwise) << op << ": an activation keeps its shape";
    EXPECT_TRUE(!t.arithmetic || (t.elementwise && t.post_op_anchor)) << op;
    EXPECT_FALSE(t.view && t.elementwise) << op;
    EXPECT_FALSE(t.data_dependent_shape && t.shape_from_shapes) << op;
    EXPECT_FALSE(t.follows_layout && t.elementwise) << op;
  }
}

// Every anchor's kernel, created as the registry creates it, takes a Relu post-op; the
// convolution takes every activation the list declares.
TEST(OpTraits, AnchorsTakePostOpsAndActivationsArePostOps) {
  for (const OpTraitsRow& row : AllOpTraits()) {
    if (!row.traits.post_op_anchor) continue;
    auto k = FindKernel("", row.op_type)(MakeNode(row.op_type, 2, 1));
    ASSERT_TRUE(k.ok()) << row.op_type << ": " << k.status().message();
    EXPECT_TRUE((*k)->AddPostOp({PostOpKind::kRelu})) << row.op_type;
  }
  for (const OpTraitsRow& row : AllOpTraits()) {
    if (!row.traits.activation) continue;
    auto conv = FindKernel("", "Conv")(MakeNode("Conv", 2, 1));
    ASSERT_TRUE(conv.ok());
    PostOp op{*row.traits.activation, 0.1f, 0.5f};
    EXPECT_TRUE((*conv)->AddPostOp(op)) << row.op_type;
  }
}

// NCHW [1, C, H, W] -> the same logical tensor stored NHWC.
Tensor ToNhwc(const Tensor& x) {
  const int64_t C = x.dim(1), H = x.dim(2), W = x.dim(3);
  Tensor y(x.dtype(), x.shape());
  for (int64_t c = 0; c < C; ++c)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        y.data<float>()[(h * W + w) * C + c] = x.data<float>()[(c * H + h) * W + w];
  return y;
}

// The layout pass runs elementwise steps unchanged on NHWC bytes when their other inputs are
// scalar constants: f(nhwc(x)) must be nhwc(f(x)). Each operator is run with one input, or
// with a scalar second input when it needs two.
TEST(OpTraits, ElementwiseOperatorsAreLayoutAgnostic) {
  const Tensor x = testing::RandomTensor({1, 3, 4, 5}, 7, 0.1f, 2.f);  // in every op's domain
  const Tensor xt = ToNhwc(x);
  const Tensor k = testing::FloatTensor({}, {1.5f});
  int checked = 0;
  for (const OpTraitsRow& row : AllOpTraits()) {
    if (!row.traits.elementwise) continue;
    const std::string op = row.op_type;
    Node unary = MakeNode(op, 1, 1, 21);
    auto a = testing::RunKernel(unary, {&x});
    auto b = testing::RunKernel(unary, {&xt});
    if (!a.ok()) {
      Node binary = MakeNode(op, 2, 1, 21);
      a = testing::RunKernel(binary, {&x, &k});
      b = testing::RunKernel(binary, {&xt, &k});
    }
    ASSERT_TRUE(a.ok()) << op << ": " << a.status().message();
    ASSERT_TRUE(b.ok()) << op << ": " << b.status().message();
    ASSERT_EQ((*a)[0].shape(), x.shape()) << op;
    EXPECT_EQ(testing::CompareFloat((*b)[0], ToNhwc((*a)[0]), 1e-6f, 1e-5f), "") << op;
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

}  // namespace
}  // namespace opscope::engine
