#include "clustertwin/base/units.h"

#include <gtest/gtest.h>

namespace clustertwin::base {
namespace {
using namespace literals;

TEST(Units, CrossUnitOperatorsHaveTheirPhysicalMeaning) {
  EXPECT_DOUBLE_EQ((1_GB / 100_GBps).base(), 0.01);
  EXPECT_DOUBLE_EQ((100_GBps * 2_s).base(), 200e9);
  EXPECT_DOUBLE_EQ((flops(1e15) / teraflops_per_s(1000)).base(), 1.0);
  EXPECT_DOUBLE_EQ((1400_W * 10_s).base(), 14000.0);
  EXPECT_DOUBLE_EQ((joules(3600) / 1_kW).base(), 3.6);
}

TEST(Units, BitsAndBytesDifferByEight) {
  EXPECT_DOUBLE_EQ((800_Gbps).base(), 100e9);
  EXPECT_DOUBLE_EQ(800_Gbps / 100_GBps, 1.0);
}

TEST(Units, GigabytesAndGibibytesDiffer) { EXPECT_NEAR(1_GiB / 1_GB, 1.073741824, 1e-12); }

TEST(Units, SameDimensionArithmeticAndComparison) {
  Bytes a = 3_GB;
  a += 1_GB;
  EXPECT_EQ(a, 4_GB);
  EXPECT_LT(1_GB, 1_GiB);
  EXPECT_DOUBLE_EQ((2.0 * a).base(), 8e9);
  EXPECT_DOUBLE_EQ(a / 2_GB, 2.0);
}

}  // namespace
}  // namespace clustertwin::base
