#include "clustertwin/base/units_parse.h"

#include <gtest/gtest.h>

namespace clustertwin::base {
namespace {

TEST(UnitParse, ParsesTheDatasheetSpellings) {
  EXPECT_DOUBLE_EQ(parse<BytesPerSecond>("900 GB/s")->base(), 900e9);
  EXPECT_DOUBLE_EQ(parse<BytesPerSecond>("800 Gb/s")->base(), 100e9);
  EXPECT_DOUBLE_EQ(parse<BytesPerSecond>("400Gbps")->base(), 50e9);
  EXPECT_DOUBLE_EQ(parse<Seconds>("1.5 us")->base(), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse<Seconds>("1.5 \xC2\xB5s")->base(), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse<Watts>("1400 W")->base(), 1400.0);
  EXPECT_DOUBLE_EQ(parse<FlopsPerSecond>("15 PFLOP/s")->base(), 15e15);
  EXPECT_DOUBLE_EQ(parse<FlopsPerSecond>("989 TFLOPS")->base(), 989e12);
  EXPECT_DOUBLE_EQ(parse<Bytes>("288 GB")->base(), 288e9);
  EXPECT_DOUBLE_EQ(parse<Bytes>("1 GiB")->base(), 1073741824.0);
  EXPECT_DOUBLE_EQ(parse<Joules>("1 kWh")->base(), 3.6e6);
  EXPECT_DOUBLE_EQ(parse<Bytes>("  2e3 B ")->base(), 2000.0);
}

TEST(UnitParse, WrongDimensionNamesBoth) {
  auto r = parse<BytesPerSecond>("900 GB");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("expected a bandwidth"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("unit of size"), std::string::npos) << r.error().message;
}

TEST(UnitParse, RejectsMissingUnknownAndNegative) {
  EXPECT_FALSE(parse<Watts>("1400"));
  EXPECT_FALSE(parse<Watts>("1400 horsepower"));
  EXPECT_FALSE(parse<Watts>(""));
  EXPECT_FALSE(parse<Watts>("W"));
  EXPECT_FALSE(parse<Watts>("-5 W"));
  EXPECT_TRUE(parse<Watts>("-5 W", /*allow_negative=*/true));
  EXPECT_FALSE(parse<Seconds>("nan s"));
  EXPECT_FALSE(parse<Seconds>("inf s"));
}

TEST(UnitParse, FormatsWithPrefixes) {
  EXPECT_EQ(format(Bytes::from_base(37.3e12)), "37.3 TB");
  EXPECT_EQ(format(BytesPerSecond::from_base(130e12)), "130 TB/s");
  EXPECT_EQ(format_bits_per_s(BytesPerSecond::from_base(100e9)), "800 Gb/s");
  EXPECT_EQ(format(Seconds::from_base(1.5e-6)), "1.50 us");
  EXPECT_EQ(format(FlopsPerSecond::from_base(1.44e18)), "1.44 EFLOP/s");
}

TEST(UnitParse, RoundTripsEveryDimension) {
  for (double v : {1.0, 12.5, 999.0, 1e3, 3.3e9, 7.7e12}) {
    for (auto d : {Dimension::kBytes, Dimension::kBytesPerSecond, Dimension::kFlopsPerSecond,
                   Dimension::kWatts, Dimension::kJoules, Dimension::kSeconds}) {
      const std::string s = format_quantity(v, d, 6);
      auto back = parse_quantity(s, d);
      ASSERT_TRUE(back) << s << ": " << back.error().message;
      EXPECT_NEAR(*back / v, 1.0, 1e-5) << s;
    }
  }
}

}  // namespace
}  // namespace clustertwin::base
