#include "base/strings.h"

#include <gtest/gtest.h>

namespace opscope {

TEST(StringsTest, Shapes) {
  std::vector<int64_t> s;
  ASSERT_TRUE(ParseShape("1x3x224x224", &s));
  EXPECT_EQ(s, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(ShapeToString(s), "1x3x224x224");
  EXPECT_FALSE(ParseShape("1x-3", &s));
  EXPECT_FALSE(ParseShape("", &s));
  EXPECT_FALSE(ParseShape("1xx2", &s));
  EXPECT_EQ(ShapeToString({}), "scalar");
}

TEST(StringsTest, Numbers) {
  int64_t i;
  EXPECT_TRUE(ParseInt64("42", &i));
  EXPECT_EQ(i, 42);
  EXPECT_FALSE(ParseInt64("4x", &i));
  double d;
  EXPECT_TRUE(ParseDouble("1.5", &d));
  EXPECT_FALSE(ParseDouble("nan", &d));
  EXPECT_EQ(HumanBytes(1500), "1.50 KB");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
}

}  // namespace opscope
