// base/strings, base/base64 and base/json_fields' getters: the helpers every layer shares.
#include "base/strings.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/base64.h"
#include "base/json_fields.h"

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
  EXPECT_EQ(Percent(0.1234, 1), "12.3%");
  EXPECT_EQ(SignedPercent(0.05, 1), "+5.0%");
  EXPECT_EQ(SignedPercent(-0.125, 1), "-12.5%");
}

TEST(StringsTest, RoundToMatchesALiteralPowerOfTen) {
  for (double v : {0.123456789, 2.5e-7, -3.14159265, 1234.56789, 0.0}) {
    EXPECT_EQ(RoundTo(v, 2), std::round(v * 100) / 100);
    EXPECT_EQ(RoundTo(v, 3), std::round(v * 1e3) / 1e3);
    EXPECT_EQ(RoundTo(v, 4), std::round(v * 1e4) / 1e4);
    EXPECT_EQ(RoundTo(v, 6), std::round(v * 1e6) / 1e6);
  }
  EXPECT_EQ(RoundTo(0.12345, 0), 0);
}

TEST(StringsTest, TailKeepsTheLastBytesLastLinesWithinWholeLines) {
  EXPECT_EQ(Tail("abcdef", 3), "def");
  EXPECT_EQ(Tail("ab", 3), "ab");
  EXPECT_EQ(LastLinesWithin("one\ntwo\nthree", 9), "three");
  EXPECT_EQ(LastLinesWithin("one\ntwo\nthree", 10), "two\nthree");
  EXPECT_EQ(LastLinesWithin("abcdef", 3), "def") << "no newline: the last bytes";
  EXPECT_EQ(LastLinesWithin("ab\n", 5), "ab\n");
}

TEST(JsonFieldsTest, LenientGettersGiveTheFallbackForMissingOrMistypedValues) {
  const nlohmann::json j = {
      {"o", {{"a", 1}}}, {"l", {1, 2}}, {"s", "x"}, {"n", 2.5}, {"z", nullptr}};
  EXPECT_EQ(ObjectField(j, "o").size(), 1u);
  EXPECT_TRUE(ObjectField(j, "s").is_object());
  EXPECT_TRUE(ObjectField(nlohmann::json(), "o").empty()) << "null is no object";
  EXPECT_EQ(ArrayField(j, "l").size(), 2u);
  EXPECT_TRUE(ArrayField(j, "o").is_array());
  EXPECT_EQ(StringField(j, "s"), "x");
  EXPECT_EQ(StringField(j, "n"), "");
  EXPECT_EQ(StringField(j, "missing", "dflt"), "dflt");
  EXPECT_EQ(NumberField(j, "n"), 2.5);
  EXPECT_EQ(NumberField(j, "s", -1), -1);
  EXPECT_TRUE(ValueField(j, "z").is_null());
  EXPECT_EQ(ValueField(j, "s"), "x");
  EXPECT_TRUE(ValueField(nlohmann::json::array(), "s").is_null());
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
