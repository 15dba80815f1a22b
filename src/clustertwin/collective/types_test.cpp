#include "clustertwin/collective/types.h"

#include <gtest/gtest.h>

namespace clustertwin::collective {
namespace {

TEST(Types, SizesParseLikeNcclTests) {
  EXPECT_EQ(*parse_size("8"), 8);
  EXPECT_EQ(*parse_size("1K"), 1024);
  EXPECT_EQ(*parse_size("16M"), 16 * 1048576);
  EXPECT_EQ(*parse_size("16G"), int64_t{16} << 30);
  EXPECT_EQ(*parse_size("1.5M"), 1572864);
  EXPECT_EQ(*parse_size("1 GB"), 1000000000);
  EXPECT_EQ(*parse_size("1 GiB"), int64_t{1} << 30);
  EXPECT_FALSE(parse_size("abc"));
  EXPECT_FALSE(parse_size("-8"));
  EXPECT_FALSE(parse_size("16X"));
  EXPECT_FALSE(parse_size("0.5"));
  EXPECT_FALSE(parse_size(""));
  EXPECT_NE(parse_size("16Q").error().message.find("expected a size like"), std::string::npos);
}

TEST(Types, FormatSize) {
  EXPECT_EQ(format_size(8), "8");
  EXPECT_EQ(format_size(1024), "1K");
  EXPECT_EQ(format_size(int64_t{16} << 30), "16G");
  EXPECT_EQ(format_size(1000), "1000");
}

TEST(Types, NamesRoundTrip) {
  for (Op op : all_ops()) EXPECT_EQ(*parse_op(op_name(op)), op);
  EXPECT_EQ(*parse_op("alltoall"), Op::kAllToAll);
  EXPECT_EQ(*parse_algorithm("nvls_tree"), Algorithm::kNvlsTree);
  EXPECT_EQ(*parse_protocol("LL128"), Protocol::kLL128);
  auto bad = parse_algorithm("rign");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("did you mean 'ring'"), std::string::npos);
}

TEST(Types, Dtypes) {
  EXPECT_EQ(parse_dtype("bf16")->name, "bfloat16");
  EXPECT_EQ(parse_dtype("half")->bytes, 2);
  EXPECT_FALSE(parse_dtype("int8")->nvls_reducible);
  EXPECT_TRUE(parse_dtype("float")->nvls_reducible);
  EXPECT_FALSE(parse_dtype("complex"));
}

// nccl-tests doc/PERFORMANCE.md bus bandwidth factors.
TEST(Types, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(busbw_factor(Op::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::kSendRecv, 8), 1.0);
}

TEST(Types, NcclCountsAndSizes) {
  // all_reduce 1 MiB of float on 8 ranks: 262144 elements; all_gather prints the per-rank count.
  EXPECT_EQ(nccl_count(Op::kAllReduce, 1 << 20, 4, 8), 262144);
  EXPECT_EQ(nccl_count(Op::kAllGather, 1 << 20, 4, 8), 32768);
  EXPECT_EQ(nccl_size(Op::kAllGather, 100, 4, 8), 96);
  EXPECT_EQ(nccl_size(Op::kAllReduce, 10, 4, 8), 8);
  EXPECT_STREQ(nccl_redop(Op::kAllGather), "none");
  EXPECT_EQ(nccl_root(Op::kBroadcast), 0);
  EXPECT_EQ(nccl_root(Op::kAllReduce), -1);
}

}  // namespace
}  // namespace clustertwin::collective
