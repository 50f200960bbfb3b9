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

TEST(StringsTest, Utf8) {
  EXPECT_TRUE(IsValidUtf8("plain, \xc3\xa9t\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80"));
  EXPECT_EQ(ToValidUtf8("ok \xc3\xa9"), "ok \xc3\xa9");
  const std::string r = "\xEF\xBF\xBD";
  // The Unicode Standard's example of maximal subparts (ch. 3, "U+FFFD Substitution of Maximal
  // Subparts"): 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
  EXPECT_EQ(ToValidUtf8("a\xF1\x80\x80\xE1\x80\xC2"
                        "b\x80"
                        "c\x80\xBF"
                        "d"),
            "a" + r + r + r + "b" + r + "c" + r + r + "d");
  EXPECT_EQ(ToValidUtf8("\xff"), r);
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), r + r);                  // overlong '/'
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), r + r + r);          // a surrogate
  EXPECT_EQ(ToValidUtf8("\xF4\x90\x80\x80"), r + r + r + r);  // past U+10FFFF
  EXPECT_EQ(ToValidUtf8("x\xE2\x82"), "x" + r);               // cut at the end
  // Whatever the bytes, the result is valid and a second pass changes nothing.
  uint32_t seed = 7;
  for (int t = 0; t < 2000; ++t) {
    std::string in;
    for (int k = 0; k < 12; ++k) {
      seed = seed * 1664525u + 1013904223u;
      in += static_cast<char>(seed >> 24);
    }
    const std::string out = ToValidUtf8(in);
    ASSERT_TRUE(IsValidUtf8(out));
    ASSERT_EQ(ToValidUtf8(out), out);
    if (IsValidUtf8(in)) ASSERT_EQ(out, in);
  }
}

}  // namespace opscope
