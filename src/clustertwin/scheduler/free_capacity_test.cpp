#include "clustertwin/scheduler/free_capacity.h"

#include <gtest/gtest.h>

namespace clustertwin::scheduler::detail {
namespace {

// Two NVLink domains (base blocks) of 4 nodes of 4 GPUs: cells are domains.
struct Fixture {
  ClusterModel c = ClusterModel::uniform(2, 4, 4);
  PlacementIndex index{c};
};

TEST(FreeCapacity, StartsAllFreeAndCountsTakesPerCell) {
  Fixture f;
  FreeCapacity cap(f.c, f.index, 0, false, {2});
  EXPECT_EQ(cap.free_nodes(), 8);
  EXPECT_EQ(cap.free_gpus(), 32);
  ASSERT_EQ(cap.segment_capacity().size(), 1U);
  EXPECT_EQ(cap.segment_capacity()[0].second, 4);  // floor(4 / 2) per block

  cap.take(0, 1);  // a sub-node job on node 0 of cell 0
  EXPECT_EQ(cap.free(0), 3);
  EXPECT_EQ(cap.cell_nodes()[0], 3);
  EXPECT_EQ(cap.cell_gpus()[0], 15);
  EXPECT_EQ(cap.cell_hist()[0 * 5 + 3], 1);  // one node of cell 0 with 3 GPUs free
  EXPECT_EQ(cap.cell_hist()[0 * 5 + 4], 3);
  EXPECT_EQ(cap.busy_nodes(), 1);
  EXPECT_EQ(cap.allocated_gpus(), 1);
  EXPECT_EQ(cap.segment_capacity()[0].second, 3);  // block 0 holds 3 whole nodes: one segment

  const auto epoch = cap.epoch();
  cap.give_back(0, 1);
  EXPECT_GT(cap.epoch(), epoch);  // capacity grew
  EXPECT_EQ(cap.free_gpus(), 32);
  EXPECT_EQ(cap.busy_nodes(), 0);
  EXPECT_EQ(cap.segment_capacity()[0].second, 4);
}

TEST(FreeCapacity, DownNodesOfferNothingUntilTheLastRepair) {
  Fixture f;
  FreeCapacity cap(f.c, f.index, 1, false, {});
  cap.fail(5);
  cap.fail(5);  // two overlapping failures
  EXPECT_FALSE(cap.up(5));
  EXPECT_EQ(cap.down_gpus(), 4);
  EXPECT_EQ(cap.free_nodes(), 7);
  EXPECT_EQ(cap.cell_nodes()[1], 3);
  EXPECT_FALSE(cap.repair(5));
  EXPECT_FALSE(cap.up(5));
  EXPECT_TRUE(cap.repair(5));
  EXPECT_TRUE(cap.up(5));
  EXPECT_EQ(cap.down_gpus(), 0);
  EXPECT_EQ(cap.free_nodes(), 8);
}

TEST(FreeCapacity, ReservedSparesAreWithheldAndRefilled) {
  Fixture f;
  FreeCapacity cap(f.c, f.index, 1, true, {});
  // The last node of each block is a spare.
  EXPECT_TRUE(cap.spare(3));
  EXPECT_TRUE(cap.spare(7));
  EXPECT_EQ(cap.free_nodes(), 6);
  // A hot swap takes the spare; the first node of the block that is whole again refills it.
  cap.set_spare(3, false);
  cap.take(3, 4);
  EXPECT_EQ(cap.free_nodes(), 6);
  cap.take(0, 4);
  cap.give_back(0, 4);
  EXPECT_TRUE(cap.spare(0));
  EXPECT_EQ(cap.free_nodes(), 5);
}

TEST(FreeCapacity, IntegralsWeighEachStateByItsTime) {
  Fixture f;
  FreeCapacity cap(f.c, f.index, 0, false, {});
  cap.integrate(10);
  cap.take(0, 4);  // 4 GPUs, 1 busy node from t = 10
  cap.integrate(30);
  cap.fail(4);  // block 1 has a node down from t = 30
  cap.integrate(40);
  const auto& in = cap.integrals();
  EXPECT_DOUBLE_EQ(in.allocated_gpus, 4.0 * 30);
  EXPECT_DOUBLE_EQ(in.busy_nodes, 30.0);
  EXPECT_DOUBLE_EQ(in.down_gpus, 4.0 * 10);
  EXPECT_DOUBLE_EQ(in.blocks_any_down, 10.0);
  EXPECT_DOUBLE_EQ(in.blocks_short, 10.0);  // more down than 0 spares
}

}  // namespace
}  // namespace clustertwin::scheduler::detail
