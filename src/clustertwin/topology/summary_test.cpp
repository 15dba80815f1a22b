#include "clustertwin/topology/summary.h"

#include <gtest/gtest.h>

namespace clustertwin::topology {
namespace {

ClusterSummary flagship() {
  static const hardware::Catalog cat = *hardware::Catalog::load_embedded();
  auto spec = hardware::resolve_cluster(cat, "azure-ndv6-gb300");
  auto t = Topology::build(cat, *spec);
  return summarize(cat, *t);
}

// The public description of Azure's NDv6 GB300 cluster (shared/reference/hardware-and-models.md
// §1.3), derived here from per-part figures: 4,608 GPUs, 64 racks, 36 Grace per rack, 1.44 EF
// FP4 sparse (1.08 EF dense) per rack, ~37 TB fast memory, ~130 TB/s NVLink, 800 Gb/s per GPU.
TEST(Summary, AzureNdv6Gb300MatchesThePublicFigures) {
  const ClusterSummary s = flagship();
  EXPECT_EQ(s.gpus, 4608);
  EXPECT_EQ(s.systems, 64);
  EXPECT_EQ(s.cpus, 2304);
  EXPECT_EQ(s.domain_size, 72);
  const auto& fp4 = s.compute.front();
  ASSERT_EQ(fp4.precision, hardware::Precision::kFp4);
  EXPECT_NEAR(fp4.sparse_per_domain->base(), 1.44e18, 1e15);
  EXPECT_NEAR(fp4.dense_per_domain.base(), 1.08e18, 1e15);
  EXPECT_NEAR(s.fast_memory_per_domain.base() / 1e12, 37.0, 0.5);
  EXPECT_NEAR(s.nvlink_per_domain_bidir.base() / 1e12, 130.0, 1.0);
  EXPECT_DOUBLE_EQ(s.scale_out_per_gpu.base() * 8, 800e9);
  EXPECT_EQ(s.fabric_tiers, 2);
  EXPECT_EQ(s.scale_out_switches, 100);
  EXPECT_DOUBLE_EQ(s.bisection.base(), 4608 * 100e9 / 2);
  EXPECT_DOUBLE_EQ(s.scale_out_oversubscription, 1.0);
  EXPECT_EQ(s.nvswitch_chips, 64 * 18);
}

TEST(Summary, RackPowerIsInThePublicRange) {
  const ClusterSummary s = flagship();
  // ~120-142 kW per GB300 NVL72 rack (shared/reference/power-and-cooling.md §1.5, §3).
  EXPECT_GT(s.system_power.base(), 115e3);
  EXPECT_LT(s.system_power.base(), 142e3);
  EXPECT_DOUBLE_EQ(s.gpu_tgp_per_domain.base(), 100.8e3);
}

}  // namespace
}  // namespace clustertwin::topology
