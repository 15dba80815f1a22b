// NCCL's tuner (nccl_tuner.h): its graphs for known systems, and the picks NCCL's maintainers and
// users report for them.

#include "clustertwin/collective/nccl_tuner.h"

#include <gtest/gtest.h>

namespace clustertwin::collective {
namespace {

// NCCL's view of a domain: ConnectX-7 400G NICs (50 GB/s) on PCIe Gen5 (NCCL's 48 GB/s), one per
// GPU.
TunerHardware domain(ComputeClass cc, CpuVendor cpu, double nvlink_gbs, int gpus) {
  return {.cc = cc,
          .cpu = cpu,
          .nvlink_gbs = nvlink_gbs,
          .nic_gbs = 50,
          .pci_gbs = nccl_pci_gbs(5, 16),
          .nics_per_domain = gpus,
          .gpus_per_domain = gpus};
}

// HGX H100: 18 NVLink 4 links (NCCL 20.6 GB/s each), 8 NICs, Sapphire Rapids hosts.
TunerHardware hgx_h100() { return domain(ComputeClass::kHopper, CpuVendor::kIntel, 18 * 20.6, 8); }

// GB200 NVL72 partition of `gpus` GPUs per rack (4 ConnectX-7 per 4-GPU tray), Grace hosts.
TunerHardware gb200(int gpus) {
  return domain(ComputeClass::kBlackwell, CpuVendor::kArm, 18 * 40.1, gpus);
}

TunerLine pick(const TunerInputs& in, Op op, int64_t bytes) {
  const auto ranked = nccl_tuner_rank(in, op, bytes);
  EXPECT_FALSE(ranked.empty());
  return ranked.empty() ? TunerLine{} : ranked.front();
}

TEST(NcclTuner, PcieBandwidthAsNcclCountsIt) {
  // topo.cc kvDictPciGen (x100 Mb/s per lane) and width x rate / 80.
  EXPECT_DOUBLE_EQ(nccl_pci_gbs(3, 16), 12.0);  // NCCL's PCI_BW: "PCI Gen3 x16"
  EXPECT_DOUBLE_EQ(nccl_pci_gbs(4, 16), 24.0);
  EXPECT_DOUBLE_EQ(nccl_pci_gbs(5, 16), 48.0);
  EXPECT_DOUBLE_EQ(nccl_pci_gbs(6, 16), 96.0);
  EXPECT_DOUBLE_EQ(nccl_pci_gbs(5, 8), 24.0);
  EXPECT_DOUBLE_EQ(nccl_pci_gbs(9, 16), 12.0);  // unknown: NCCL's Gen3 fallback
}

TEST(NcclTuner, GraphsOfAnHgxH100Node) {
  const auto in = derive_tuner_inputs(hgx_h100(), 32, 4, 8, false, true);
  // Ring: one channel per NIC; 48 GB/s x 8 would exceed a GPU's 370.8 GB/s of NVLink, 45 fits.
  EXPECT_EQ(in.ring.channels, 8);
  EXPECT_DOUBLE_EQ(in.ring.bw_inter, 45.0);
  // Trees need not return to the first NIC, so NVLink carries 8/7 more: 48 GB/s.
  EXPECT_EQ(in.tree.channels, 8);
  EXPECT_DOUBLE_EQ(in.tree.bw_inter, 48.0);
  // NVLS: one head per NIC.
  EXPECT_EQ(in.nvls_graph.channels, 8);
}

TEST(NcclTuner, TwoNodesRunNvlsTreeAndMoreRunTheRingOrNvlsTree) {
  // "On two nodes, NCCL uses the tree (or nvlstree) algorithm" (S. Jeaugey, NVIDIA/nccl-tests#196).
  const auto two = derive_tuner_inputs(hgx_h100(), 16, 2, 8, false, true);
  EXPECT_EQ(pick(two, Op::kAllReduce, int64_t{8} << 30).algorithm, Algorithm::kNvlsTree);
  // Without NVLS the 2-node choice at large sizes is between tree and ring on NCCL's figures;
  // with NVLS off and 3 GB200 partitions, NCCL runs the ring at 16 GiB (NVIDIA/nccl#1801, "the
  // ring protocol is chosen" for 12 and 24 GPUs).
  for (int per : {4, 8}) {
    const auto part = derive_tuner_inputs(gb200(per), 3 * per, 3, per, false, false);
    const auto& p = pick(part, Op::kAllReduce, int64_t{16} << 30);
    EXPECT_EQ(p.algorithm, Algorithm::kRing) << per;
    EXPECT_EQ(p.protocol, Protocol::kSimple) << per;
  }
}

TEST(NcclTuner, SmallMessagesTakeLowLatencyProtocols) {
  const auto in = derive_tuner_inputs(hgx_h100(), 32, 4, 8, false, true);
  const auto& p = pick(in, Op::kAllReduce, 8);
  EXPECT_EQ(p.protocol, Protocol::kLL);
  // And the predicted time grows with size for every line.
  for (const auto& l : nccl_tuner_lines(in, Op::kAllReduce)) {
    EXPECT_LT(nccl_tuner_time_us(in, Op::kAllReduce, l, 1 << 20),
              nccl_tuner_time_us(in, Op::kAllReduce, l, 1 << 30));
  }
}

TEST(NcclTuner, WhatEachOpMayRun) {
  const auto in = derive_tuner_inputs(hgx_h100(), 32, 4, 8, false, true);
  for (const auto& l : nccl_tuner_lines(in, Op::kBroadcast))
    EXPECT_EQ(l.algorithm, Algorithm::kRing);
  // All-gather across nodes: ring only (NVLS and CollNet need the SHARP plugin; PAT needs one
  // GPU per node).
  for (const auto& l : nccl_tuner_lines(in, Op::kAllGather))
    EXPECT_EQ(l.algorithm, Algorithm::kRing);
  // One GPU per node: PAT joins.
  auto one = hgx_h100();
  const auto sparse = derive_tuner_inputs(one, 16, 16, 1, false, true);
  bool pat = false;
  for (const auto& l : nccl_tuner_lines(sparse, Op::kAllGather))
    pat = pat || l.algorithm == Algorithm::kPat;
  EXPECT_TRUE(pat);
  // No NVLS-tree inside one node; no CollNet without SHARP; nothing for point-to-point.
  const auto node = derive_tuner_inputs(hgx_h100(), 8, 1, 8, false, true);
  for (const auto& l : nccl_tuner_lines(node, Op::kAllReduce)) {
    EXPECT_NE(l.algorithm, Algorithm::kNvlsTree);
    EXPECT_NE(l.algorithm, Algorithm::kCollNet);
  }
  EXPECT_TRUE(nccl_tuner_lines(in, Op::kAllToAll).empty());
  // SHARP on: CollNet and multi-node NVLS become candidates.
  const auto sharp = derive_tuner_inputs(hgx_h100(), 64, 8, 8, true, true);
  bool collnet = false, nvls = false;
  for (const auto& l : nccl_tuner_lines(sharp, Op::kAllReduce)) {
    collnet = collnet || l.algorithm == Algorithm::kCollNet;
    nvls = nvls || l.algorithm == Algorithm::kNvls;
  }
  EXPECT_TRUE(collnet);
  EXPECT_TRUE(nvls);
}

TEST(NcclTuner, NcclsOwnFiguresForTheRing) {
  // tuning.cc by hand for 4 HGX H100 nodes, ring/Simple all-reduce: busBw = 8 x 45 = 360 GB/s,
  // algorithm bandwidth 360 x 32 / 62; latency 8.4 + 56 x max(3.4, 3 x 1.0) + 6 x 14 us.
  const auto in = derive_tuner_inputs(hgx_h100(), 32, 4, 8, false, true);
  for (const auto& l : nccl_tuner_lines(in, Op::kAllReduce)) {
    if (l.algorithm != Algorithm::kRing || l.protocol != Protocol::kSimple) continue;
    EXPECT_NEAR(l.bw, 360.0 * 32 / 62, 1e-9);
    EXPECT_NEAR(l.latency_us, 8.4 + 56 * 3.4 + 6 * 14.0, 1e-9);
    // Large sizes: the ring plateau factor 1.4 on the latency.
    const int64_t s = int64_t{1} << 30;
    EXPECT_NEAR(nccl_tuner_time_us(in, Op::kAllReduce, l, s),
                1.4 * l.latency_us + static_cast<double>(s) / (1000 * l.bw), 1e-6);
  }
}

}  // namespace
}  // namespace clustertwin::collective
