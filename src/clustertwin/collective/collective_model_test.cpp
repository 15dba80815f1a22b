#include "clustertwin/collective/collective_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "clustertwin/collective/moe_a2a.h"
#include "clustertwin/collective/patterns.h"
#include "clustertwin/collective/sweep.h"

namespace clustertwin::collective {
namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = *hardware::Catalog::load_embedded();
  return c;
}
const Calibration& calibration() {
  static const Calibration c = *Calibration::load(catalog());
  return c;
}
topology::Topology build(const std::string& cluster) {
  auto spec = hardware::resolve_cluster(catalog(), cluster);
  EXPECT_TRUE(spec) << cluster;
  auto t = topology::Topology::build(catalog(), *spec);
  EXPECT_TRUE(t) << (t ? "" : t.error().message);
  return *t;
}
topology::Topology build(const hardware::ClusterSpec& spec) {
  auto t = topology::Topology::build(catalog(), spec);
  EXPECT_TRUE(t) << (t ? "" : t.error().message);
  return *t;
}

/// The embedded defaults plus an h100 file whose ring/simple all-reduce line is ideal
/// (efficiency 1, no pipeline fill) so the closed form can be written down exactly.
Calibration ideal_calibration() {
  std::vector<hardware::CatalogFile> files;
  for (const auto& f : catalog().other_files()) {
    if (f.path == "collectives/defaults.yaml") files.push_back(f);
  }
  files.push_back({"collectives/test-h100.yaml", R"(
collectives:
  name: test-h100
  gpus: [h100]
  channels: {ring: 16, nvls: 16}
  all_reduce:
    ring:
      simple: {base: 10 us, hop: 1 us, net_hop: 5 us, efficiency: 1.0, net_efficiency: 1.0, ramp: 0, fill: 0 us, source: t}
sources:
  t: "test"
)"});
  auto c = Calibration::from_files(files);
  EXPECT_TRUE(c) << (c ? "" : c.error().message);
  return *c;
}

TEST(Calibration, DefaultsCoverEveryLineTheModelAsks) {
  const auto& cal = calibration();
  for (Op op : all_ops()) {
    for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kNvls, Algorithm::kNvlsTree,
                        Algorithm::kCollNet, Algorithm::kPat, Algorithm::kDirect}) {
      // Only combinations the model can run need a line.
      const bool p2p = op == Op::kAllToAll || op == Op::kSendRecv;
      if (p2p != (a == Algorithm::kDirect)) continue;
      if ((a == Algorithm::kTree || a == Algorithm::kNvlsTree || a == Algorithm::kCollNet) &&
          op != Op::kAllReduce)
        continue;
      if (a == Algorithm::kNvls && op != Op::kAllReduce && op != Op::kAllGather &&
          op != Op::kReduceScatter)
        continue;
      if (a == Algorithm::kPat && op != Op::kAllGather && op != Op::kReduceScatter) continue;
      for (Protocol p : CollectiveModel::protocols(a, op)) {
        EXPECT_TRUE(cal.has_line(op, a, p)) << line_key(line_family(op), a, p);
      }
    }
  }
}

TEST(Calibration, EveryMeasuredGpuHasAFile) {
  for (const char* gpu : {"h100", "h200", "b200", "b300", "gb200", "gb300"}) {
    EXPECT_NE(calibration().for_gpu(gpu), nullptr) << gpu;
  }
  EXPECT_EQ(calibration().for_gpu("a100"), nullptr);
  EXPECT_TRUE(
      calibration().line("h100", Op::kAllReduce, Algorithm::kRing, Protocol::kSimple).calibrated);
  EXPECT_FALSE(
      calibration().line("a100", Op::kAllReduce, Algorithm::kRing, Protocol::kSimple).calibrated);
}

TEST(Calibration, ErrorsNameFileAndLine) {
  std::vector<hardware::CatalogFile> files = {{"collectives/defaults.yaml", R"(
collectives:
  name: defaults
  all_reduce:
    rign:
      simple: {base: 1 us, source: s}
    ring:
      simple: {base: 1 GB, source: s}
sources:
  s: "x"
)"}};
  auto c = Calibration::from_files(files);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("unknown algorithm 'rign'"), std::string::npos)
      << c.error().message;
  EXPECT_NE(c.error().message.find("defaults.yaml:8"), std::string::npos) << c.error().message;
}

// Closed form (STYLE.md, tests/validation): on an idle fabric with an ideal line, ring
// all-reduce takes base + 2(n-1) hop + 2(n-1)/n S / B, exactly, in both network models.
TEST(CollectiveModel, RingAllReduceClosedFormInsideOneNode) {
  const auto topo = build("hgx-h100*1");
  const auto cal = ideal_calibration();
  auto g = place_first(topo, 8);
  ASSERT_TRUE(g);
  const double S = 1 << 30;
  const double expect = 10e-6 + 14 * 1e-6 + 2.0 * 7 / 8 * S / 450e9;
  for (auto kind : {NetworkModelKind::kAnalytical, NetworkModelKind::kFlow}) {
    CollectiveModel m(catalog(), topo, cal, {.network = kind});
    auto e = m.estimate(*g, {.op = Op::kAllReduce,
                             .bytes = static_cast<int64_t>(S),
                             .algorithm = Algorithm::kRing,
                             .protocol = Protocol::kSimple});
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_NEAR(e->time.base(), expect, expect * 1e-12);
    EXPECT_NEAR(e->busbw.base(), 2.0 * 7 / 8 * S / expect, 1e-3);
  }
}

// Across two nodes on one leaf switch (no ECMP choice): the NICs bound the ring, 8 NICs of
// 50 GB/s give 400 GB/s of bus bandwidth; the inter-node steps pay the NIC and switch latency.
TEST(CollectiveModel, RingAllReduceClosedFormAcrossNodes) {
  const auto topo = build("hgx-h100*2");
  const auto cal = ideal_calibration();
  auto g = place_first(topo, 16);
  ASSERT_TRUE(g);
  const double S = 1 << 30;
  std::vector<topology::LinkId> path;
  topo.path(0, 8, 0, path);
  const double path_s = topo.latency(path).base();
  const double lat = 10e-6 + (30 - 2) * 1e-6 + 2 * (5e-6 + path_s);
  const double x = 2.0 * 15 / 16 * S / 400e9;
  for (auto kind : {NetworkModelKind::kAnalytical, NetworkModelKind::kFlow}) {
    CollectiveModel m(catalog(), topo, cal, {.network = kind});
    auto e = m.estimate(*g, {.op = Op::kAllReduce,
                             .bytes = static_cast<int64_t>(S),
                             .algorithm = Algorithm::kRing,
                             .protocol = Protocol::kSimple});
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_NEAR(e->time.base(), lat + x, (lat + x) * 1e-9)
        << (kind == NetworkModelKind::kFlow ? "flow" : "analytical");
    EXPECT_EQ(e->bottleneck, "network");
  }
}

// Where both models cover a case (one group, idle non-blocking fabric without ECMP choices),
// they agree for every algorithm.
TEST(CollectiveModel, FlowAndAnalyticalAgreeOnAnIdleFabric) {
  const auto topo = build("hgx-h100*4");  // 32 NICs on one 64-port leaf
  auto g = place_first(topo, 32);
  ASSERT_TRUE(g);
  CollectiveModel ana(catalog(), topo, calibration(),
                      {.network = NetworkModelKind::kAnalytical, .sharp = true});
  CollectiveModel flow(catalog(), topo, calibration(),
                       {.network = NetworkModelKind::kFlow, .sharp = true});
  struct Case {
    Op op;
    Algorithm a;
  };
  for (auto c :
       {Case{Op::kAllReduce, Algorithm::kRing}, Case{Op::kAllReduce, Algorithm::kTree},
        Case{Op::kAllReduce, Algorithm::kNvlsTree}, Case{Op::kAllReduce, Algorithm::kCollNet},
        Case{Op::kAllGather, Algorithm::kRing}, Case{Op::kAllToAll, Algorithm::kDirect},
        Case{Op::kBroadcast, Algorithm::kRing}, Case{Op::kSendRecv, Algorithm::kDirect}}) {
    Request r{
        .op = c.op, .bytes = int64_t{1} << 30, .algorithm = c.a, .protocol = Protocol::kSimple};
    auto a = ana.estimate(*g, r);
    auto f = flow.estimate(*g, r);
    ASSERT_TRUE(a && f) << op_name(c.op) << " " << algorithm_name(c.a);
    EXPECT_NEAR(f->time.base() / a->time.base(), 1.0, 0.01)
        << op_name(c.op) << " " << algorithm_name(c.a);
  }
}

TEST(CollectiveModel, SymmetryReductionGivesTheSameAnswer) {
  const auto topo = build("gb300-nvl72*4");
  auto g = place_first(topo, 288);
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kNvlsTree}) {
    CollectiveModel full(catalog(), topo, calibration(),
                         {.network = NetworkModelKind::kFlow, .symmetry = false});
    CollectiveModel rep(catalog(), topo, calibration(),
                        {.network = NetworkModelKind::kFlow, .symmetry = true});
    Request r{.op = Op::kAllReduce,
              .bytes = int64_t{1} << 30,
              .algorithm = a,
              .protocol = Protocol::kSimple};
    auto x = full.estimate(*g, r), y = rep.estimate(*g, r);
    ASSERT_TRUE(x && y);
    EXPECT_NEAR(x->time.base(), y->time.base(), x->time.base() * 1e-9) << algorithm_name(a);
  }
}

TEST(CollectiveModel, AutoNeverPicksWhatTheHardwareLacks) {
  // DGX A100: NVSwitch 2 has no NVLink SHARP; the HDR fabric (QM8700) has no SHARP in the catalog.
  const auto topo = build("dgx-a100*4");
  CollectiveModel m(catalog(), topo, calibration(), {.network = NetworkModelKind::kFlow});
  auto g = place_first(topo, 32);
  auto sizes = std::vector<int64_t>{8, 1 << 20, int64_t{1} << 30, int64_t{8} << 30};
  auto rows = m.sweep(*g, {.op = Op::kAllReduce}, sizes);
  ASSERT_TRUE(rows);
  for (const auto& e : *rows) {
    EXPECT_NE(e.algorithm, Algorithm::kNvls);
    EXPECT_NE(e.algorithm, Algorithm::kNvlsTree);
    EXPECT_NE(e.algorithm, Algorithm::kCollNet);
  }
  auto bad =
      m.estimate(*g, {.op = Op::kAllReduce, .bytes = 1 << 20, .algorithm = Algorithm::kNvls});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("needs NVLink SHARP"), std::string::npos)
      << bad.error().message;
  auto bad2 =
      m.estimate(*g, {.op = Op::kAllReduce, .bytes = 1 << 20, .algorithm = Algorithm::kCollNet});
  ASSERT_FALSE(bad2);
  EXPECT_NE(bad2.error().message.find("SHARP"), std::string::npos) << bad2.error().message;
}

TEST(CollectiveModel, ImpossibleChoicesSayWhy) {
  const auto topo = build("hgx-h100*2");
  CollectiveModel m(catalog(), topo, calibration());
  auto g8 = place_first(topo, 8);
  auto g16 = place_first(topo, 16);
  auto int8 = *parse_dtype("int8");
  auto e = m.estimate(
      *g8, {.op = Op::kAllReduce, .bytes = 1 << 20, .dtype = int8, .algorithm = Algorithm::kNvls});
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("cannot reduce int8"), std::string::npos);
  e = m.estimate(*g16, {.op = Op::kAllGather, .bytes = 1 << 20, .algorithm = Algorithm::kPat});
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("one GPU per NVLink domain"), std::string::npos);
  e = m.estimate(*g8, {.op = Op::kAllReduce,
                       .bytes = 1 << 20,
                       .algorithm = Algorithm::kNvls,
                       .protocol = Protocol::kLL});
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("runs simple"), std::string::npos) << e.error().message;
  e = m.estimate(*g8, {.op = Op::kAllToAll, .bytes = 1 << 20, .algorithm = Algorithm::kRing});
  ASSERT_FALSE(e);
  e = m.estimate(*g8,
                 {.op = Op::kAllReduce, .bytes = 1 << 20, .algorithm = Algorithm::kHierarchical});
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("at least 2 NVLink domains"), std::string::npos);
  // int8 all-reduce on auto: never NVLS; float: NVLS for large messages on H100.
  auto i8 = m.estimate(*g8, {.op = Op::kAllReduce, .bytes = int64_t{1} << 30, .dtype = int8});
  ASSERT_TRUE(i8);
  EXPECT_NE(i8->algorithm, Algorithm::kNvls);
  auto f32 = m.estimate(*g8, {.op = Op::kAllReduce, .bytes = int64_t{1} << 30});
  ASSERT_TRUE(f32);
  EXPECT_EQ(f32->algorithm, Algorithm::kNvls);
}

TEST(CollectiveModel, ProtocolsSwitchWithSize) {
  const auto topo = build("hgx-h100*1");
  CollectiveModel m(catalog(), topo, calibration());
  auto g = place_first(topo, 8);
  // int8 all-reduce cannot use NVLS: the ring's protocols alone, LL small and Simple/LL128 large.
  const auto int8 = *parse_dtype("int8");
  auto small = m.estimate(*g, {.op = Op::kAllReduce, .bytes = 4096, .dtype = int8});
  auto large = m.estimate(*g, {.op = Op::kAllReduce, .bytes = int64_t{4} << 30, .dtype = int8});
  ASSERT_TRUE(small && large);
  EXPECT_EQ(small->protocol, Protocol::kLL);
  EXPECT_NE(large->protocol, Protocol::kLL);
  EXPECT_LT(small->time, large->time);
}

TEST(CollectiveModel, PatWithOneGpuPerNode) {
  const auto topo = build("hgx-h100*16");
  CollectiveModel m(catalog(), topo, calibration(), {.network = NetworkModelKind::kFlow});
  auto g = place_first(topo, 16, 1);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->domains(), 16);
  auto pat = m.estimate(
      *g, {.op = Op::kAllGather, .bytes = int64_t{1} << 30, .algorithm = Algorithm::kPat});
  auto ring = m.estimate(
      *g, {.op = Op::kAllGather, .bytes = int64_t{1} << 30, .algorithm = Algorithm::kRing});
  ASSERT_TRUE(pat && ring) << (pat ? "" : pat.error().message);
  // Same bytes per NIC; PAT's log-depth latency wins small messages, its 0.75 efficiency loses
  // large.
  EXPECT_GT(pat->time, ring->time);
  auto pat_small =
      m.estimate(*g, {.op = Op::kAllGather, .bytes = 1 << 12, .algorithm = Algorithm::kPat});
  auto ring_small = m.estimate(*g, {.op = Op::kAllGather,
                                    .bytes = 1 << 12,
                                    .algorithm = Algorithm::kRing,
                                    .protocol = Protocol::kSimple});
  ASSERT_TRUE(pat_small && ring_small);
  EXPECT_LT(pat_small->time, ring_small->time);
}

TEST(CollectiveModel, HierarchicalIsTheSumOfItsPhases) {
  const auto topo = build("hgx-h100*4");
  CollectiveModel m(catalog(), topo, calibration());
  auto g = place_first(topo, 32);
  const int64_t S = int64_t{1} << 30;
  auto h =
      m.estimate(*g, {.op = Op::kAllReduce, .bytes = S, .algorithm = Algorithm::kHierarchical});
  ASSERT_TRUE(h) << h.error().message;
  auto node = place_first(topo, 8);
  auto rs = m.estimate(*node, {.op = Op::kReduceScatter, .bytes = S});
  auto ag = m.estimate(*node, {.op = Op::kAllGather, .bytes = S});
  auto rail = make_group(topo, std::vector<int>{0, 8, 16, 24});
  auto ar = m.estimate(*rail, {.op = Op::kAllReduce, .bytes = S / 8});
  ASSERT_TRUE(rs && ag && ar);
  EXPECT_NEAR(h->time.base(), rs->time.base() + ag->time.base() + ar->time.base(), 1e-12);
}

// Many groups at once: tensor-parallel groups inside a rack share no link (one is simulated for
// all); data-parallel rings across an oversubscribed spine slow down.
TEST(CollectiveModel, ConcurrentGroups) {
  const auto topo = build("gb300-nvl72*2");
  CollectiveModel m(catalog(), topo, calibration(), {.network = NetworkModelKind::kFlow});
  auto tp = place_groups(topo, 9, 8);
  ASSERT_TRUE(tp);
  auto c = m.concurrent(*tp, {.op = Op::kAllReduce, .bytes = 64 << 20});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->symmetric);
  EXPECT_EQ(c->groups.size(), 9u);
  EXPECT_DOUBLE_EQ(c->worst_slowdown, 1.0);

  // 1:4 oversubscribed leaves: 32 nodes of 8 GPUs, 8 nodes per leaf.
  auto spec = *hardware::resolve_cluster(catalog(), "hgx-h100*32");
  spec.scale_out.oversubscription = {4.0};
  spec.scale_out.tiers = 2;
  const auto over = build(spec);
  CollectiveModel mo(catalog(), over, calibration(), {.network = NetworkModelKind::kFlow});
  auto dp = place_groups(over, 8, 32, /*across_domains=*/true);
  ASSERT_TRUE(dp) << dp.error().message;
  // Expert-parallel all-to-all across nodes: most bytes cross the leaves' uplinks.
  Request r{.op = Op::kAllToAll, .bytes = int64_t{1} << 30};
  auto one = mo.concurrent(std::span<const Group>(dp->data(), 1), r);
  auto all = mo.concurrent(*dp, r);
  ASSERT_TRUE(one && all) << (all ? "" : all.error().message);
  EXPECT_FALSE(all->symmetric);
  EXPECT_GT(all->worst_slowdown, 1.5);
  EXPECT_DOUBLE_EQ(one->worst_slowdown, 1.0);

  // Non-blocking and sprayed: data-parallel rings across 32 nodes share no link, so one group
  // is solved for all, and the full joint solve (symmetry off) agrees.
  const auto flat = build("hgx-h100*32");
  auto dpf = place_groups(flat, 8, 32, /*across_domains=*/true);
  ASSERT_TRUE(dpf);
  const Request ar{.op = Op::kAllReduce, .bytes = int64_t{1} << 30};
  CollectiveModel fast(catalog(), flat, calibration(), {.network = NetworkModelKind::kFlow});
  CollectiveModel full(catalog(), flat, calibration(),
                       {.network = NetworkModelKind::kFlow, .symmetry = false});
  auto a = fast.concurrent(*dpf, ar);
  auto b = full.concurrent(*dpf, ar);
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->symmetric);
  for (size_t i = 0; i < a->groups.size(); ++i) {
    EXPECT_NEAR(a->groups[i].estimate.time.base() / b->groups[i].estimate.time.base(), 1.0, 0.01)
        << "group " << i;
  }
}

TEST(CollectiveModel, DegradedAndFailedLinks) {
  const auto topo = build("hgx-h100*2");
  auto g = place_first(topo, 16);
  Request r{.op = Op::kAllReduce,
            .bytes = int64_t{1} << 30,
            .algorithm = Algorithm::kRing,
            .protocol = Protocol::kSimple};
  CollectiveModel healthy(catalog(), topo, calibration(), {.network = NetworkModelKind::kFlow});
  // GPU 7 is an exit of some ring channels: halve its NIC.
  CollectiveModel slow(
      catalog(), topo, calibration(),
      {.network = NetworkModelKind::kFlow,
       .capacity_overrides = {{topo.nic_up(topo.nic_of(7), 0), base::gigabytes_per_s(25)}}});
  CollectiveModel dead(
      catalog(), topo, calibration(),
      {.network = NetworkModelKind::kFlow,
       .capacity_overrides = {{topo.nic_up(topo.nic_of(7), 0), base::BytesPerSecond{}}}});
  auto a = healthy.estimate(*g, r), b = slow.estimate(*g, r), c = dead.estimate(*g, r);
  ASSERT_TRUE(a && b);
  EXPECT_GT(b->time.base(), a->time.base() * 1.5);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("failed link"), std::string::npos);
}

TEST(CollectiveModel, LargeAllToAllAggregatesPerDomain) {
  const auto topo = build("gb300-nvl72*4");
  CollectiveModel m(catalog(), topo, calibration(), {.network = NetworkModelKind::kFlow});
  auto g = place_first(topo, 288);
  auto e = m.estimate(*g, {.op = Op::kAllToAll, .bytes = int64_t{1} << 30});
  ASSERT_TRUE(e) << e.error().message;
  // 216 of every 288 bytes leave the rack through one 800G NIC per GPU.
  EXPECT_EQ(e->bottleneck, "network");
}

TEST(Sweep, SizesLikeNcclTests) {
  auto s = sweep_sizes(8, 128, 2, 0);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, (std::vector<int64_t>{8, 16, 32, 64, 128}));
  EXPECT_EQ(*sweep_sizes(100, 400, 2, 100), (std::vector<int64_t>{100, 200, 300, 400}));
  EXPECT_FALSE(sweep_sizes(16, 8, 2, 0));
  EXPECT_FALSE(sweep_sizes(8, 16, 1, 0));
}

TEST(Sweep, TableJsonAndErrors) {
  SweepSpec s{.cluster = "hgx-h100*1", .gpus = 8, .min_bytes = 1 << 20, .max_bytes = 4 << 20};
  auto r = run_sweep(catalog(), s);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->rows.size(), 3u);
  const auto table = render_table(*r);
  EXPECT_NE(table.find("     1048576        262144     float     sum      -1"), std::string::npos)
      << table;
  EXPECT_NE(table.find("# Avg bus bandwidth"), std::string::npos);
  const auto j = to_json(*r);
  EXPECT_EQ(j["results"][0]["size_bytes"], 1048576);
  EXPECT_TRUE(j["results"][0].contains("busbw_GBps"));
  EXPECT_NE(render_csv(*r).find("size_bytes,count"), std::string::npos);
  s.gpus = 9;
  auto bad = run_sweep(catalog(), s);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("more than the cluster's 8 GPUs"), std::string::npos)
      << bad.error().message;
}

TEST(NcclTrees, BinaryTreeAsNcclBuildsIt) {
  // ncclGetBtree over 8 ranks: 0 is the root with child 4; 4 has children 2 and 6; odd ranks
  // are leaves.
  EXPECT_EQ(nccl_btree(8, 0).up, -1);
  EXPECT_EQ(nccl_btree(8, 0).down1, 4);
  EXPECT_EQ(nccl_btree(8, 4).up, 0);
  EXPECT_EQ(nccl_btree(8, 4).down0, 2);
  EXPECT_EQ(nccl_btree(8, 4).down1, 6);
  EXPECT_EQ(nccl_btree(8, 5).up, 6);
  EXPECT_EQ(nccl_btree(8, 5).down0, -1);
  // Every rank but the root has a parent, and parent/child links agree, in both trees.
  for (int n : {2, 3, 4, 5, 7, 8, 13, 64, 100}) {
    for (int t = 0; t < 2; ++t) {
      int roots = 0;
      for (int r = 0; r < n; ++r) {
        const auto pr = nccl_dtree(n, r);
        const TreeLinks& l = t == 0 ? pr.first : pr.second;
        if (l.up < 0) {
          ++roots;
          continue;
        }
        const auto pp = nccl_dtree(n, l.up);
        const TreeLinks& up = t == 0 ? pp.first : pp.second;
        EXPECT_TRUE(up.down0 == r || up.down1 == r) << n << " ranks, tree " << t << ", rank " << r;
      }
      EXPECT_EQ(roots, 1) << n << " ranks, tree " << t;
    }
  }
  // The NIC load of the tree: 2 edges per rank on 2 domains, 3 on 3, 4 from 4 domains on (with
  // a heap-shaped tree 4 domains would give 3, and 4-node H100 all-reduce would be 33% fast).
  EXPECT_EQ(nccl_dtree_max_degree(2), 2);
  EXPECT_EQ(nccl_dtree_max_degree(3), 3);
  EXPECT_EQ(nccl_dtree_max_degree(4), 4);
  EXPECT_EQ(nccl_dtree_max_degree(1000), 4);
}

TEST(CollectiveModel, SharpIsOffUnlessEnabled) {
  auto topo = build("hgx-h100*4");
  auto g = place_first(topo, 32);
  ASSERT_TRUE(g);
  const Request r{.op = Op::kAllReduce, .bytes = int64_t{1} << 30};
  CollectiveModel off(catalog(), topo, calibration(), {.network = NetworkModelKind::kFlow});
  EXPECT_FALSE(off.sharp_enabled());
  EXPECT_TRUE(off.sharp_supported());
  auto e = off.estimate(*g, r);
  ASSERT_TRUE(e) << e.error().message;
  // NVLS cannot span nodes without SHARP, nor can CollNet run: NCCL runs NVLS-tree, tree or ring.
  EXPECT_NE(e->algorithm, Algorithm::kNvls);
  EXPECT_NE(e->algorithm, Algorithm::kCollNet);
  auto bad =
      off.estimate(*g, {.op = Op::kAllReduce, .bytes = 1 << 20, .algorithm = Algorithm::kCollNet});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("SHARP enabled"), std::string::npos) << bad.error().message;
  // Across 4 nodes the NICs bound it: busbw near 8 NICs x 50 GB/s x the NIC efficiency, below
  // one node's NVLS (measured: 365.8 GB/s, NVIDIA/nccl-tests#309).
  EXPECT_LT(e->busbw.base() / 1e9, 400.0);
  CollectiveModel on(catalog(), topo, calibration(),
                     {.network = NetworkModelKind::kFlow, .sharp = true});
  EXPECT_TRUE(on.sharp_enabled());
  auto av = on.availability(*g, Op::kAllReduce, Dtype{"float", 4, true});
  for (const auto& a : av) {
    if (a.algorithm == Algorithm::kCollNet) {
      EXPECT_TRUE(a.ok) << a.reason;
    }
  }
}

TEST(CollectiveModel, TunerFollowsTheCalibrationProfileForEveryCaller) {
  // One rule (resolve_tuner) for collective, train, serve and sweeps: NCCL's tuner unless a
  // profile is laid over the GPU (its lines are what NCCL ran on the user's cluster), an explicit
  // choice always wins.
  auto topo = build("hgx-h100*4");
  auto g = place_first(topo, 32);
  ASSERT_TRUE(g);
  CollectiveModel plain(catalog(), topo, calibration());
  EXPECT_EQ(plain.tuner(), TunerKind::kNccl);
  CalibrationFile profile;
  profile.name = "users-cluster";
  profile.gpus = {plain.gpu_name()};
  const Calibration with = calibration().with_profile(profile);
  CollectiveModel profiled(catalog(), topo, with);
  EXPECT_EQ(profiled.tuner(), TunerKind::kFastest);
  CollectiveModel forced(catalog(), topo, with, {.tuner = TunerKind::kNccl});
  EXPECT_EQ(forced.tuner(), TunerKind::kNccl);
  // A profile for another GPU changes nothing here.
  CalibrationFile other = profile;
  other.gpus = {"b200"};
  EXPECT_EQ(CollectiveModel(catalog(), topo, calibration().with_profile(other)).tuner(),
            TunerKind::kNccl);
  // The profiled model prices `auto` as the explicit fastest one does.
  CollectiveModel fastest(catalog(), topo, with, {.tuner = TunerKind::kFastest});
  for (int64_t bytes : {int64_t{1} << 16, int64_t{1} << 26, int64_t{4} << 30}) {
    auto a = profiled.estimate(*g, {.op = Op::kAllReduce, .bytes = bytes});
    auto b = fastest.estimate(*g, {.op = Op::kAllReduce, .bytes = bytes});
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->algorithm, b->algorithm);
    EXPECT_DOUBLE_EQ(a->time.base(), b->time.base());
  }
}

TEST(Calibration, ProfilesLayInTheOrderGiven) {
  // Two profiles laid over one GPU both apply, the later's fields over the earlier's, field by
  // field; before, only the last profile per GPU was applied and the first one's fields were
  // silently dropped.
  const auto& cal = calibration();
  const Line base = cal.line("h100", Op::kAllReduce, Algorithm::kRing, Protocol::kSimple);
  CalibrationFile first;
  first.name = "first";
  first.gpus = {"h100"};
  first.ring_channels = 8;
  first.lines["all_reduce/ring/simple"].efficiency = 0.5;
  first.lines["all_reduce/ring/simple"].base_us = 40;
  CalibrationFile second;
  second.name = "second";
  second.gpus = {"h100"};
  second.lines["all_reduce/ring/simple"].base_us = 70;
  second.nvls_channels = 4;
  const Calibration both = cal.with_profile(first).with_profile(second);
  const Line l = both.line("h100", Op::kAllReduce, Algorithm::kRing, Protocol::kSimple);
  EXPECT_DOUBLE_EQ(l.efficiency, 0.5);  // the first's, which the second does not set
  EXPECT_DOUBLE_EQ(l.base_us, 70);      // the second's over the first's
  EXPECT_DOUBLE_EQ(l.hop_us, base.hop_us);
  EXPECT_EQ(both.ring_channels("h100"), 8);
  EXPECT_EQ(both.nvls_channels("h100"), 4);
  // In the other order the first's base wins; other GPUs see neither.
  const Calibration swapped = cal.with_profile(second).with_profile(first);
  EXPECT_DOUBLE_EQ(
      swapped.line("h100", Op::kAllReduce, Algorithm::kRing, Protocol::kSimple).base_us, 40);
  EXPECT_DOUBLE_EQ(both.line("b200", Op::kAllReduce, Algorithm::kRing, Protocol::kSimple).base_us,
                   cal.line("b200", Op::kAllReduce, Algorithm::kRing, Protocol::kSimple).base_us);
  EXPECT_EQ(both.profile_for("h100"), &both.profiles().back());
}

TEST(CollectiveModel, NvlsOnALargeDomainIsChannelBound) {
  // One GB200 NVL72 rack: the port-bound NVLS rate grows with the ranks as 2(p-1)/(p+1), but
  // NVLS moves its data through a fixed number of channels (NCCL: busBw = nChannels x per-channel
  // bandwidth), so 72 ranks get the channel cap, not 1.6x what 4 ranks reach.
  auto topo = build("gb200-nvl72*1");
  CollectiveModel m(catalog(), topo, calibration(), {.network = NetworkModelKind::kFlow});
  auto g72 = place_first(topo, 72);
  auto g4 = place_first(topo, 4);
  ASSERT_TRUE(g72 && g4);
  const Request r{.op = Op::kAllReduce, .bytes = int64_t{8} << 30, .algorithm = Algorithm::kNvls};
  auto e72 = m.estimate(*g72, r);
  auto e4 = m.estimate(*g4, r);
  ASSERT_TRUE(e72 && e4);
  const auto& s = calibration().scale("gb200");
  ASSERT_GT(s.nvls_channel_bw.base(), 0);
  const double cap = calibration().nvls_channels("gb200") * s.nvls_channel_bw.base();
  EXPECT_LE(e72->busbw.base(), cap * 1.0001);
  EXPECT_GT(e72->busbw.base(), 0.9 * cap);
  EXPECT_LT(e72->busbw.base() / e4->busbw.base(), 1.6);
}

TEST(CollectiveModel, CrossDomainPipelineFill) {
  // Across domains the Simple protocol pays the at-scale fill: busbw keeps rising with size
  // well past 1 GiB (2 GB200 racks: 596 GB/s at 1 GiB, 810 at 16 GiB, coreweave/nccl-tests).
  auto topo = build("gb200-nvl72*2");
  CollectiveModel m(catalog(), topo, calibration(), {.network = NetworkModelKind::kFlow});
  auto g = place_first(topo, 144);
  ASSERT_TRUE(g);
  auto small = m.estimate(*g, {.op = Op::kAllReduce, .bytes = int64_t{1} << 30});
  auto big = m.estimate(*g, {.op = Op::kAllReduce, .bytes = int64_t{16} << 30});
  ASSERT_TRUE(small && big);
  EXPECT_GT(big->busbw.base() / small->busbw.base(), 1.2);
  EXPECT_GE(big->fill.base(), calibration().scale("gb200").cross_fill_us * 1e-6 * 0.999);
}

TEST(MoeAllToAll, ReachOfUniformAndGroupLimitedRouting) {
  // 8 experts, top-2, 2 domains of 1 rank: a domain is missed when both picks fall in the other
  // half: 1 - C(4,2)/C(8,2) = 22/28 per domain.
  const auto u = moe_reach({.experts = 8, .topk = 2}, 2, 1);
  EXPECT_NEAR(u.domains, 2.0 * 22 / 28, 1e-12);
  EXPECT_NEAR(u.ranks, u.domains, 1e-12);
  // DeepSeek-V3 on 8 nodes: one group per node, 4 of 8 groups per token, 8 of the 128 reachable
  // experts: each node is reached with probability 1/2 x (1 - C(96,8)/C(128,8)).
  const MoeRouting ds{.experts = 256, .topk = 8, .groups = 8, .topk_groups = 4};
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (96.0 - i) / (128.0 - i);
  EXPECT_NEAR(moe_reach(ds, 8, 8).domains, 8 * 0.5 * (1 - miss), 1e-9);
  // Node-limited when a group is a node: at most 4 domains; with 32 nodes each group spans 4, so
  // at most 16.
  EXPECT_LE(moe_reach(ds, 8, 8).domains, 4.0 + 1e-9);
  EXPECT_LE(moe_reach(ds, 32, 8).domains, 16.0 + 1e-9);
  EXPECT_GT(moe_reach(ds, 32, 8).domains, 4.0);
  // A perfect router spreads each token over min(ranks, topk) ranks.
  auto b = ds;
  b.balanced = true;
  EXPECT_EQ(moe_reach(b, 1, 8).ranks, 8);
  EXPECT_EQ(moe_reach(b, 4, 1).ranks, 4);
}

TEST(MoeAllToAll, KernelsAndTheirLimits) {
  auto topo = build("hgx-h800*4");
  CollectiveModel m(catalog(), topo, calibration(), {.network = NetworkModelKind::kFlow});
  auto params = A2aParams::load(catalog());
  ASSERT_TRUE(params) << params.error().message;
  auto g = place_first(topo, 32);
  ASSERT_TRUE(g);
  MoeA2aRequest r{.tokens_per_rank = 4096,
                  .token_bytes = 7392,
                  .routing = {.experts = 256, .topk = 8, .groups = 8, .topk_groups = 4}};
  r.impl = A2aImpl::kDeepEpNormal;
  auto normal = estimate_moe_a2a(m, topo, *params, *g, r);
  r.impl = A2aImpl::kNccl;
  auto nccl = estimate_moe_a2a(m, topo, *params, *g, r);
  ASSERT_TRUE(normal && nccl);
  // DeepEP sends a token once per destination node; NCCL once per routed expert.
  EXPECT_LT(normal->network_bytes.base(), 0.5 * nccl->network_bytes.base());
  EXPECT_LT(normal->time, nccl->time);
  // One-sided NVLink all-to-all needs one NVLink domain.
  r.impl = A2aImpl::kNvlinkOneSided;
  auto bad = estimate_moe_a2a(m, topo, *params, *g, r);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("one NVLink domain"), std::string::npos);
  // The low-latency kernel's floor: one token costs about the floor.
  r.impl = A2aImpl::kDeepEpLowLatency;
  r.tokens_per_rank = 1;
  auto ll = estimate_moe_a2a(m, topo, *params, *g, r);
  ASSERT_TRUE(ll);
  const auto kp = params->kernel(A2aImpl::kDeepEpLowLatency, "h800");
  ASSERT_TRUE(kp);
  EXPECT_NEAR(ll->time.base(), kp->dispatch_floor.base(), 0.1 * kp->dispatch_floor.base());
}

}  // namespace
}  // namespace clustertwin::collective
