// Pins the key figures of the embedded catalog (catalog/): a change to a GPU, system or cluster
// file that moves one of these numbers must be deliberate. Sources of every figure are in the
// YAML files; the values here are copied from shared/reference/hardware-and-models.md §1.1.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "clustertwin/hardware/catalog.h"

namespace clustertwin::hardware {
namespace {

const Catalog& embedded() {
  static const Catalog cat = [] {
    auto c = Catalog::load_embedded();
    EXPECT_TRUE(c) << c.error().to_string();
    return c ? *c : Catalog{};
  }();
  return cat;
}

double dense(const GpuSpec& g, Precision p) {
  const auto& pk = g.peak_for(p);
  return pk ? pk->dense.base() : 0.0;
}

struct GpuPin {
  const char* name;
  double fp4, fp8, bf16;  // dense FLOP/s; 0 = not supported
  double hbm_gb, usable_gb, hbm_tbps;
  int nvlink_gen, nvlink_links;
  double nvlink_gbps;  // per direction
  double tgp_w;
};

constexpr double T = 1e12, P = 1e15;
const GpuPin kGpus[] = {
    {"gb300", 15 * P, 5 * P, 2.5 * P, 288, 279, 8.0, 5, 18, 900, 1400},
    {"b300", 14 * P, 4.5 * P, 2.25 * P, 288, 270, 7.75, 5, 18, 900, 1100},
    {"gb200", 10 * P, 5 * P, 2.5 * P, 192, 186, 8.0, 5, 18, 900, 1200},
    {"b200", 9 * P, 4.5 * P, 2.25 * P, 192, 180, 7.7, 5, 18, 900, 1000},
    {"h200", 0, 1979 * T, 989 * T, 141, 141, 4.8, 4, 18, 450, 700},
    {"h100", 0, 1979 * T, 989 * T, 80, 80, 3.35, 4, 18, 450, 700},
    {"h800", 0, 1979 * T, 989 * T, 80, 80, 3.35, 4, 8, 200, 700},
    {"a100", 0, 0, 312 * T, 80, 80, 2.039, 3, 12, 300, 400},
};

TEST(CatalogData, GpuKeyFigures) {
  const auto& cat = embedded();
  for (const auto& pin : kGpus) {
    SCOPED_TRACE(pin.name);
    auto r = cat.gpu(pin.name);
    ASSERT_TRUE(r) << r.error().message;
    const GpuSpec& g = **r;
    EXPECT_DOUBLE_EQ(dense(g, Precision::kFp4), pin.fp4);
    EXPECT_DOUBLE_EQ(dense(g, Precision::kFp8), pin.fp8);
    EXPECT_DOUBLE_EQ(dense(g, Precision::kBf16), pin.bf16);
    EXPECT_DOUBLE_EQ(g.hbm_capacity.base(), pin.hbm_gb * 1e9);
    EXPECT_DOUBLE_EQ(g.hbm_usable.base(), pin.usable_gb * 1e9);
    EXPECT_NEAR(g.hbm_bandwidth.base(), pin.hbm_tbps * 1e12, 1e6);
    EXPECT_EQ(g.nvlink_generation, pin.nvlink_gen);
    EXPECT_EQ(g.nvlink_links, pin.nvlink_links);
    EXPECT_DOUBLE_EQ(g.nvlink_bandwidth.base(), pin.nvlink_gbps * 1e9);
    EXPECT_DOUBLE_EQ(g.tgp.base(), pin.tgp_w);
  }
  // A few more that models lean on.
  const GpuSpec& h100 = **cat.gpu("h100");
  EXPECT_DOUBLE_EQ(h100.peak_for(Precision::kTf32)->dense.base(), 494.7e12);
  EXPECT_DOUBLE_EQ(h100.peak_for(Precision::kFp64)->dense.base(), 66.9e12);
  EXPECT_DOUBLE_EQ(h100.idle_power.base(), 75);
  EXPECT_DOUBLE_EQ((**cat.gpu("gb200")).peak_for(Precision::kFp4)->sparse->base(), 20e15);
  EXPECT_DOUBLE_EQ((**cat.gpu("b300")).peak_for(Precision::kFp4)->sparse->base(), 18e15);
  EXPECT_DOUBLE_EQ((**cat.gpu("a100")).idle_power.base(), 62);
}

TEST(CatalogData, NicHostInterfaces) {
  // ConnectX-6 PCIe Gen4 x16, ConnectX-7 Gen5 x16, ConnectX-8 Gen6 (x16 to the GPU).
  const auto& cat = embedded();
  const struct {
    const char* name;
    int gen;
  } pins[] = {{"connectx-6", 4}, {"connectx-7", 5}, {"connectx-8", 6}};
  for (const auto& pin : pins) {
    auto n = cat.nic(pin.name);
    ASSERT_TRUE(n) << n.error().message;
    EXPECT_EQ((*n)->pcie_generation, pin.gen) << pin.name;
    EXPECT_EQ((*n)->pcie_lanes, 16) << pin.name;
  }
}

TEST(CatalogData, EveryGpuIsConsistentAndSourced) {
  const auto& cat = embedded();
  EXPECT_EQ(cat.gpus().size(), std::size(kGpus)) << "add the new GPU to kGpus";
  for (const auto& [name, g] : cat.gpus()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(g.peak_for(Precision::kBf16)) << "every GPU has a BF16 peak";
    if (g.architecture != "Ampere") {
      EXPECT_TRUE(g.peak_for(Precision::kFp8));
    }
    const bool blackwell = g.architecture.starts_with("Blackwell");
    EXPECT_EQ(g.peak_for(Precision::kFp4).has_value(), blackwell);
    for (auto p : kAllPrecisions) {
      const auto& pk = g.peak_for(p);
      if (pk && pk->sparse) {
        EXPECT_GE(pk->sparse->base(), pk->dense.base()) << precision_name(p);
      }
    }
    // Lower precision is never slower than BF16.
    if (g.peak_for(Precision::kFp8)) {
      EXPECT_GE(dense(g, Precision::kFp8), dense(g, Precision::kBf16));
    }
    EXPECT_LE(g.hbm_usable.base(), g.hbm_capacity.base());
    EXPECT_GT(g.idle_power.base(), 0);
    EXPECT_LT(g.idle_power.base(), 0.2 * g.tgp.base());
    EXPECT_FALSE(g.display_name.empty());
    EXPECT_FALSE(g.provenance.empty());
    for (const auto& [fig, src] : g.provenance) EXPECT_FALSE(src.empty()) << fig;
  }
}

template <class Map>
void expect_sourced(const Map& m, const char* what) {
  EXPECT_FALSE(m.empty()) << what;
  for (const auto& [name, spec] : m) {
    EXPECT_FALSE(spec.provenance.empty()) << what << " " << name;
    EXPECT_FALSE(spec.display_name.empty()) << what << " " << name;
    for (const auto& [fig, src] : spec.provenance) {
      EXPECT_FALSE(src.empty()) << what << " " << name << "." << fig;
    }
  }
}

TEST(CatalogData, EveryEntryHasProvenance) {
  const auto& cat = embedded();
  expect_sourced(cat.cpus(), "cpu");
  expect_sourced(cat.nics(), "nic");
  expect_sourced(cat.switches(), "switch");
  expect_sourced(cat.transceivers(), "transceiver");
  expect_sourced(cat.systems(), "system");
}

struct SystemPin {
  const char* name;
  const char* gpu;
  int gpus, nodes, nvlink_domain;
  const char* nic;
  int nics;
  const char* nvswitch;
  int chips;
  const char* default_switch;
};

const SystemPin kSystems[] = {
    {"gb300-nvl72", "gb300", 72, 18, 72, "connectx-8", 72, "nvlink5-switch", 18, "q3400"},
    {"gb200-nvl72", "gb200", 72, 18, 72, "connectx-7", 72, "nvlink5-switch", 18, "qm9700"},
    {"hgx-b300", "b300", 8, 1, 8, "connectx-8", 8, "nvlink5-switch", 2, "q3400"},
    {"hgx-b200", "b200", 8, 1, 8, "connectx-7", 8, "nvlink5-switch", 2, "qm9700"},
    {"hgx-h200", "h200", 8, 1, 8, "connectx-7", 8, "nvlink4-switch", 4, "qm9700"},
    {"hgx-h100", "h100", 8, 1, 8, "connectx-7", 8, "nvlink4-switch", 4, "qm9700"},
    {"hgx-h800", "h800", 8, 1, 8, "connectx-7", 8, "nvlink4-switch", 4, "qm9700"},
    {"dgx-a100", "a100", 8, 1, 8, "connectx-6", 8, "nvlink3-switch", 6, "quantum-qm8700"},
};

TEST(CatalogData, SystemsUsersTypeExistWithTheirShape) {
  const auto& cat = embedded();
  EXPECT_EQ(cat.systems().size(), std::size(kSystems)) << "add the new system to kSystems";
  for (const auto& pin : kSystems) {
    SCOPED_TRACE(pin.name);
    auto r = cat.system(pin.name);
    ASSERT_TRUE(r) << r.error().message;
    const SystemSpec& s = **r;
    EXPECT_EQ(s.gpu, pin.gpu);
    EXPECT_EQ(s.gpus(), pin.gpus);
    EXPECT_EQ(s.nodes, pin.nodes);
    EXPECT_EQ(s.nvlink_domain_gpus, pin.nvlink_domain);
    EXPECT_EQ(s.nic, pin.nic);
    EXPECT_EQ(s.nics(), pin.nics);
    EXPECT_EQ(s.nvswitch, pin.nvswitch);
    EXPECT_EQ(s.nvswitch_chips, pin.chips);
    EXPECT_EQ(s.default_scale_out_switch, pin.default_switch);
    EXPECT_EQ(s.kind, s.nodes > 1 ? "rack" : "node");
    EXPECT_GT(s.node_other_power.base(), 0);
    // The shorthand works for every system and its default switch takes one NIC port.
    auto c = resolve_cluster(cat, std::string(pin.name) + "*4");
    EXPECT_TRUE(c) << c.error().message;
    const NicSpec& nic = **cat.nic(s.nic);
    const SwitchSpec& sw = **cat.switch_spec(s.default_scale_out_switch);
    EXPECT_DOUBLE_EQ(nic.bandwidth.base(), sw.port_bandwidth.base());
  }
  // HGX node power adds up to the rated system power it was derived from (node_other_power holds
  // the baseboard with its NVSwitch chips; shared/reference power-and-cooling.md §0, hw §5).
  auto node_power = [&](const char* name) {
    const SystemSpec& s = **cat.system(name);
    return (**cat.gpu(s.gpu)).tgp.base() * s.gpus_per_node +
           (**cat.cpu(s.cpu)).tdp.base() * s.cpus_per_node +
           (**cat.nic(s.nic)).power.base() * s.nics_per_node + s.node_other_power.base();
  };
  EXPECT_DOUBLE_EQ(node_power("hgx-h100"), 10.2e3);
  EXPECT_DOUBLE_EQ(node_power("hgx-b200"), 14.3e3);
  EXPECT_DOUBLE_EQ(node_power("hgx-b300"), 14.5e3);
  // Rack-scale figures.
  const SystemSpec& gb200 = **cat.system("gb200-nvl72");
  EXPECT_EQ(gb200.switch_trays, 9);
  EXPECT_DOUBLE_EQ(gb200.rack_power_limit.base(), 132e3);
  EXPECT_EQ((**cat.system("hgx-h100")).cpus(), 2);
  EXPECT_DOUBLE_EQ((**cat.nic("connectx-7")).bandwidth.base(), 400e9 / 8);
}

TEST(CatalogData, NvlinkSwitchesAndScaleOutSwitches) {
  const auto& cat = embedded();
  const SwitchSpec& nvs4 = **cat.switch_spec("nvlink4-switch");
  EXPECT_EQ(nvs4.kind, SwitchKind::kNvlink);
  EXPECT_EQ(nvs4.ports, 64);
  EXPECT_DOUBLE_EQ(nvs4.port_bandwidth.base(), 25e9);
  EXPECT_EQ(nvs4.in_network_reduction, "NVLink SHARP");
  const SwitchSpec& nvs3 = **cat.switch_spec("nvlink3-switch");
  EXPECT_EQ(nvs3.ports, 36);
  EXPECT_TRUE(nvs3.in_network_reduction.empty());
  const SwitchSpec& qm9700 = **cat.switch_spec("qm9700");
  EXPECT_EQ(qm9700.kind, SwitchKind::kInfiniband);
  EXPECT_EQ(qm9700.ports, 64);
  EXPECT_EQ(qm9700.in_network_reduction, "SHARPv3");
  EXPECT_EQ((**cat.switch_spec("sn5600")).kind, SwitchKind::kEthernet);
  EXPECT_EQ((**cat.switch_spec("quantum-qm8700")).ports, 40);
  const std::set<std::string> reductions = {"", "NVLink SHARP", "SHARPv3", "SHARPv4"};
  for (const auto& [name, sw] : cat.switches()) {
    EXPECT_TRUE(reductions.contains(sw.in_network_reduction)) << name;
    if (sw.in_network_reduction == "NVLink SHARP") {
      EXPECT_EQ(sw.kind, SwitchKind::kNvlink) << name;
    }
  }
}

struct ClusterPin {
  const char* name;
  const char* system;
  int count;
  int gpus;
};

const ClusterPin kClusters[] = {
    {"azure-ndv6-gb300", "gb300-nvl72", 64, 4608}, {"eos-h100", "hgx-h100", 576, 4608},
    {"eos-dfw-h100", "hgx-h100", 1452, 11616},     {"meta-llama3-h100", "hgx-h100", 3072, 24576},
    {"tyche-gb200", "gb200-nvl72", 8, 576},        {"carina-gb200", "gb200-nvl72", 39, 2808},
    {"selene-a100", "dgx-a100", 560, 4480},        {"deepseek-h800", "hgx-h800", 256, 2048},
};

TEST(CatalogData, EveryClusterValidates) {
  const auto& cat = embedded();
  EXPECT_EQ(cat.clusters().size(), std::size(kClusters)) << "add the new cluster to kClusters";
  for (const auto& pin : kClusters) {
    SCOPED_TRACE(pin.name);
    auto r = cat.cluster(pin.name);
    ASSERT_TRUE(r) << r.error().message;
    const ClusterSpec& c = **r;
    EXPECT_EQ(c.system, pin.system);
    EXPECT_EQ(c.count, pin.count);
    EXPECT_EQ((**cat.system(c.system)).gpus() * c.count, pin.gpus);
  }
  for (const auto& [name, c] : cat.clusters()) {
    SCOPED_TRACE(name);
    auto st = cat.validate(c);
    EXPECT_TRUE(st) << st.error().message;
    EXPECT_FALSE(c.description.empty());
    EXPECT_EQ(c.origin, "catalog");
    // Resolving by name gives the same cluster.
    auto again = resolve_cluster(cat, name);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->count, c.count);
  }
  const ClusterSpec& meta = **cat.cluster("meta-llama3-h100");
  EXPECT_EQ((**cat.switch_spec(meta.scale_out.switch_name)).kind, SwitchKind::kEthernet);
  EXPECT_EQ(meta.scale_out.tiers, 3);
  ASSERT_EQ(meta.scale_out.oversubscription.size(), 2u);
  EXPECT_DOUBLE_EQ(meta.scale_out.oversubscription[0], 1.0);
  EXPECT_DOUBLE_EQ(meta.scale_out.oversubscription[1], 7.0);
  EXPECT_TRUE((**cat.cluster("eos-h100")).scale_out.rail_optimized);
  EXPECT_EQ((**cat.cluster("deepseek-h800")).scale_out.tiers, 2);
}

}  // namespace
}  // namespace clustertwin::hardware
