#include "clustertwin/base/number.h"

#include <gtest/gtest.h>

#include <cmath>

namespace clustertwin::base {
namespace {

std::string message_of(const Result<int64_t>& r) { return r ? "" : r.error().message; }
std::string message_of(const Result<double>& r) { return r ? "" : r.error().message; }

TEST(ParseInteger, TakesPlainDecimalIntegers) {
  EXPECT_EQ(*parse_integer("0"), 0);
  EXPECT_EQ(*parse_integer("+17"), 17);
  EXPECT_EQ(*parse_integer("-42"), -42);
  EXPECT_EQ(*parse_integer("010"), 10);  // decimal, never octal
  EXPECT_EQ(*parse_integer("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(*parse_integer("-9223372036854775808"), INT64_MIN);
}

TEST(ParseInteger, RefusesJunkWrapAndNonIntegers) {
  for (const char* bad : {"", "-", " 1", "1 ", "12abc", "0x10", "1e3", "2.5", "nan", "inf"}) {
    EXPECT_FALSE(parse_integer(bad)) << bad;
  }
  EXPECT_EQ(message_of(parse_integer("12abc", {.min = 1})),
            "expected an integer >= 1, got '12abc' (not a whole number)");
  EXPECT_EQ(message_of(parse_integer("9223372036854775808", {.min = 1})),
            "expected an integer >= 1, got '9223372036854775808' (beyond the 64-bit range)");
  EXPECT_FALSE(parse_integer("-9223372036854775809"));
}

TEST(ParseInteger, RangeMessagesSayExpectedAndActual) {
  EXPECT_EQ(message_of(parse_integer("0", {.min = 1})), "expected an integer >= 1, got 0");
  EXPECT_EQ(message_of(parse_integer("7", {.min = 0, .max = 3})),
            "expected an integer in [0, 3], got 7");
  EXPECT_EQ(message_of(parse_integer("4294967304", {.max = 2147483647})),
            "expected an integer <= 2147483647, got 4294967304");
}

TEST(ParseReal, TakesDecimalAndExponentForms) {
  EXPECT_DOUBLE_EQ(*parse_real("1.5"), 1.5);
  EXPECT_DOUBLE_EQ(*parse_real("+.5"), 0.5);
  EXPECT_DOUBLE_EQ(*parse_real("5."), 5.0);
  EXPECT_DOUBLE_EQ(*parse_real("-2e3"), -2000.0);
  EXPECT_DOUBLE_EQ(*parse_real("1E-3"), 1e-3);
  EXPECT_DOUBLE_EQ(*parse_real("1e-400"), 0.0);  // underflow is harmless
  EXPECT_DOUBLE_EQ(*parse_real("1e308"), 1e308);
}

TEST(ParseReal, RefusesNanInfinityOverflowAndJunk) {
  for (const char* bad :
       {"", "nan", "NaN", "inf", "-inf", "infinity", "1e999", "0x1p3", "1.5s", "e5", ".", "1e"}) {
    EXPECT_FALSE(parse_real(bad)) << bad;
  }
  EXPECT_EQ(message_of(parse_real("nan", {.min = 0, .max = 10})),
            "expected a number in [0, 10], got 'nan'");
  EXPECT_EQ(message_of(parse_real("1e999")),
            "expected a number, got '1e999' (beyond the range of a double)");
}

TEST(ParseReal, RangeMessages) {
  EXPECT_EQ(message_of(parse_real("0", {.min = 0, .min_exclusive = true})),
            "expected a number > 0, got 0");
  EXPECT_EQ(message_of(parse_real("-1", {.min = 0})), "expected a number >= 0, got -1");
  EXPECT_EQ(message_of(parse_real("1.5", {.min = 0, .max = 1})),
            "expected a number in [0, 1], got 1.5");
}

TEST(ParseScaledCount, SuffixesAndRefusals) {
  EXPECT_DOUBLE_EQ(*parse_scaled_count("15T"), 15e12);
  EXPECT_DOUBLE_EQ(*parse_scaled_count("2e12"), 2e12);
  EXPECT_DOUBLE_EQ(*parse_scaled_count("500B"), 500e9);
  EXPECT_DOUBLE_EQ(*parse_scaled_count("1.5K"), 1500.0);
  for (const char* bad : {"inf", "nan", "T", "", "15X", "1e999T"}) {
    EXPECT_FALSE(parse_scaled_count(bad, {.min = 0, .min_exclusive = true})) << bad;
  }
  EXPECT_EQ(parse_scaled_count("0", {.min = 0, .min_exclusive = true}).error().message,
            "expected a number > 0, got 0");
}

TEST(CheckReal, RefusesNonFinite) {
  EXPECT_FALSE(check_real(std::nan(""), {}));
  EXPECT_FALSE(check_real(HUGE_VAL, {}));
  EXPECT_TRUE(check_real(0.0, {.min = 0}));
}

TEST(CheckedArithmetic, DetectsOverflow) {
  EXPECT_EQ(*checked_mul(1 << 20, 1 << 20), int64_t{1} << 40);
  EXPECT_FALSE(checked_mul(int64_t{1} << 62, 4));
  EXPECT_FALSE(checked_add(INT64_MAX, 1));
  EXPECT_EQ(*checked_add(2, 3), 5);
}

TEST(CheckedProduct, NamesFactorsAndLimit) {
  EXPECT_EQ(*checked_product({{"tp", 8}, {"pp", 16}}, kMaxGpus, "GPUs"), 128);
  // The crash of issue 19: 8 x 4611686018427387904 wraps to 0 in int64.
  auto r = checked_product({{"tp", 8}, {"dp", int64_t{1} << 62}}, kMaxGpus, "GPUs");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "tp*dp = 8 x 4611686018427387904 is more than the limit of 67108864 GPUs");
  EXPECT_EQ(*checked_product({{"a", int64_t{1} << 62}, {"b", 0}}, 10, "x"), 0);
  EXPECT_FALSE(checked_product({{"a", -1}}, 10, "x"));
}

TEST(CheckedProduct, RealProductsStayFiniteAndBounded) {
  EXPECT_DOUBLE_EQ(*checked_product_real({{"rate", 2.0}, {"horizon", 3.0}}, 10, "requests"), 6.0);
  EXPECT_FALSE(checked_product_real({{"rate", 1e300}, {"horizon", 1e300}}, 1e7, "requests"));
  EXPECT_FALSE(checked_product_real({{"rate", std::nan("")}}, 1e7, "requests"));
}

}  // namespace
}  // namespace clustertwin::base
