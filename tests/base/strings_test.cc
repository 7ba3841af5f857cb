// base/strings and base/base64: the helpers every layer shares.
#include "base/strings.h"

#include <gtest/gtest.h>

#include "base/base64.h"

namespace paratune {
namespace {

TEST(StringsTest, TrimDropsTheGivenCharactersAtBothEnds) {
  EXPECT_EQ(Trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(Trim(" \t "), "");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim("\"x\" ", " \""), "x");
  EXPECT_EQ(Trim(" x ", ""), " x ");
}

TEST(StringsTest, LowerChangesAsciiLettersOnly) {
  EXPECT_EQ(Lower("CUDA Out Of Memory"), "cuda out of memory");
  EXPECT_EQ(Lower("\xC3\x89T\xC3\x89"), "\xC3\x89t\xC3\x89");  // "ÉTÉ": only the T
}

TEST(StringsTest, SplitListTrimsAndDropsEmptyItemsJoinPutsTheSeparatorBetween) {
  EXPECT_EQ(SplitList(" a, ,b ,"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(SplitList("x;y", ';'), (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(SplitList("").empty());
  EXPECT_EQ(Join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(Join({}, ", "), "");
}

TEST(StringsTest, NumbersFormatLikePrintf) {
  EXPECT_EQ(Fixed(2.345, 1), "2.3");
  EXPECT_EQ(Fixed(2.0, 0), "2");
  EXPECT_EQ(SignedFixed(2.34, 1), "+2.3");
  EXPECT_EQ(SignedFixed(-0.04, 1), "-0.0");
  EXPECT_EQ(Significant(123456.0, 4), "1.235e+05");
  EXPECT_EQ(Significant(0.5, 4), "0.5");
  EXPECT_EQ(Significant(1.0 / 3.0, 17), "0.33333333333333331");
}

TEST(Base64Test, DecodesStandardBase64WithOrWithoutPadding) {
  EXPECT_EQ(*Base64Decode("aGVsbG8="), "hello");
  EXPECT_EQ(*Base64Decode("aGVsbG8"), "hello");
  EXPECT_EQ(*Base64Decode("aGVs\nbG8=\n"), "hello");  // wrapped as kubectl writes it
  EXPECT_EQ(*Base64Decode(""), "");
  EXPECT_EQ(Base64Decode("a*b").status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(Base64Decode("aGV=sbG8").ok()) << "padding only at the end";
}

}  // namespace
}  // namespace paratune
