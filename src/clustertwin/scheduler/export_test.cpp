#include "clustertwin/scheduler/export.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace clustertwin::scheduler {
namespace {

ClusterModel model_of(const char* cluster) {
  auto cat = *hardware::Catalog::load_embedded();
  auto spec = *hardware::resolve_cluster(cat, cluster);
  auto topo = *topology::Topology::build(cat, spec);
  return ClusterModel::from_topology(topo, (**cat.system(spec.system)).gpus_per_node);
}

TEST(Export, FlagshipBlockConfFollowsTheGrammar) {
  const auto c = model_of("azure-ndv6-gb300");
  const auto conf = slurm_block_conf(c, 2);
  EXPECT_NE(conf.find("BlockName=rack00 Nodes=node[0000-0017]\n"), std::string::npos) << conf;
  EXPECT_NE(conf.find("BlockName=rack63 Nodes=node[1134-1151]\n"), std::string::npos);
  // orchestration.md §2.1: BlockSizes=16,32,64,128,256,512,1024 for 64 racks planned at 16.
  EXPECT_NE(conf.find("\nBlockSizes=16,32,64,128,256,512,1024\n"), std::string::npos) << conf;
  auto st = check_block_conf(conf);
  EXPECT_TRUE(st) << st.error().to_string();
}

TEST(Export, BlockGrammarCheckerCatchesEveryRule) {
  const char* bad =
      "BlockName=b1 Nodes=n[1-4]\n"
      "BlockName=b1 Nodes=n[4-6]\n"
      "BlockSizes=4,6\n"
      "SwitchName=s1 Nodes=n1\n"
      "BlockName=b3\n";
  auto st = check_block_conf(bad);
  ASSERT_FALSE(st);
  const auto m = st.error().to_string();
  EXPECT_NE(m.find("topology.conf:2: block 'b1' defined twice"), std::string::npos) << m;
  EXPECT_NE(m.find("topology.conf:2: node n4 is already in the block of line 1"), std::string::npos)
      << m;
  EXPECT_NE(m.find("topology.conf:3: BlockSizes: 6 is not the base 4 times a larger power of two"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("topology.conf:2: block has 3 nodes, fewer than the base block size 4"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("topology.conf:4: expected BlockName=<name> Nodes=<nodes>"), std::string::npos)
      << m;
  EXPECT_NE(m.find("topology.conf:5: expected BlockName=<name> Nodes=<nodes>"), std::string::npos)
      << m;
  EXPECT_FALSE(check_block_conf("BlockName=b Nodes=n1 junk\n"));
  // The man page's own example passes.
  EXPECT_TRUE(
      check_block_conf("BlockName=block1 Nodes=node[1-32]\nBlockName=block2 Nodes=node[33-64]\n"
                       "BlockName=block3 Nodes=node[65-96]\nBlockName=block4 Nodes=node[97-128]\n"
                       "BlockSizes=30,120\n"));
}

TEST(Export, TreeConfForTwoAndThreeTiers) {
  for (const char* name : {"azure-ndv6-gb300", "eos-h100", "hgx-h100*64"}) {
    const auto c = model_of(name);
    const auto conf = slurm_tree_conf(c);
    auto st = check_tree_conf(conf);
    EXPECT_TRUE(st) << name << ": " << st.error().to_string() << "\n" << conf;
  }
  const auto c = model_of("azure-ndv6-gb300");
  const auto conf = slurm_tree_conf(c);
  EXPECT_NE(conf.find("SwitchName=leaf00 Nodes=node[0000-0017]\n"), std::string::npos) << conf;
  EXPECT_NE(conf.find("SwitchName=top Switches=leaf[00-63]\n"), std::string::npos) << conf;
  EXPECT_FALSE(check_tree_conf("SwitchName=a Nodes=n1\nSwitchName=b Nodes=n1\n"));
  EXPECT_FALSE(check_tree_conf("SwitchName=a Switches=c\n"));
}

TEST(Export, TopologyYamlHoldsBothViews) {
  const auto c = model_of("azure-ndv6-gb300");
  const auto y = YAML::Load(slurm_topology_yaml(c, 2));
  ASSERT_TRUE(y.IsSequence());
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[0]["topology"].as<std::string>(), "nvlink-block");
  EXPECT_TRUE(y[0]["cluster_default"].as<bool>());
  EXPECT_EQ(y[0]["block"]["block_sizes"][0].as<int>(), 16);
  EXPECT_EQ(y[0]["block"]["blocks"].size(), 64u);
  EXPECT_EQ(y[0]["block"]["blocks"][1]["nodes"].as<std::string>(), "node[0018-0035]");
  EXPECT_EQ(y[1]["tree"]["switches"][0]["switch"].as<std::string>(), "top");
  EXPECT_EQ(y[1]["tree"]["switches"].size(), 65u);
}

TEST(Export, KueueTopologyAndCliqueLabels) {
  const auto c = model_of("gb300-nvl72*2");
  const auto docs = YAML::LoadAll(kueue_yaml(c, 2));
  ASSERT_EQ(docs.size(), 2u + 36u);
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "Topology");
  EXPECT_EQ(docs[0]["apiVersion"].as<std::string>(), "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(docs[0]["spec"]["levels"][1]["nodeLabel"].as<std::string>(), "nvidia.com/gpu.clique");
  EXPECT_EQ(docs[0]["spec"]["levels"][2]["nodeLabel"].as<std::string>(), "kubernetes.io/hostname");
  EXPECT_EQ(docs[1]["spec"]["topologyName"].as<std::string>(),
            docs[0]["metadata"]["name"].as<std::string>());
  const auto clique = [&](int node) {
    return docs[2 + static_cast<size_t>(node)]["metadata"]["labels"]["nvidia.com/gpu.clique"]
        .as<std::string>();
  };
  EXPECT_EQ(clique(0), clique(17));
  EXPECT_NE(clique(17), clique(18));
  EXPECT_EQ(clique(0).substr(clique(0).size() - 2), ".1");
  // HGX has no NVLink clique label; the leaf switch takes its place.
  const auto h = YAML::LoadAll(kueue_yaml(model_of("hgx-h100*8"), 0));
  EXPECT_EQ(h[0]["spec"]["levels"][1]["nodeLabel"].as<std::string>(),
            "fabric.topograph.run/tier-0");
  EXPECT_FALSE(h[2]["metadata"]["labels"]["nvidia.com/gpu.clique"]);
}

}  // namespace
}  // namespace clustertwin::scheduler
