#include "clustertwin/scenario/serving.h"

#include <gtest/gtest.h>

#include <set>

namespace clustertwin::scenario {
namespace {

TEST(ServingFields, KeysFlagsAndNamesAreUniqueAndTheOldScenarioKeysRemain) {
  std::set<std::string> keys, flags, names;
  for (const auto& f : serving_fields()) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    EXPECT_TRUE(flags.insert(f.flag).second) << f.flag;
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_EQ(f.flag.rfind("--", 0), std::string::npos) << f.flag;
  }
  for (const char* k :
       {"model", "gpus", "scenario", "precision", "serving", "tp", "ep", "pp", "replicas",
        "dp_attention", "max_batch", "requests", "seed", "power", "power_cap"}) {
    EXPECT_TRUE(keys.count(k)) << k;
  }
}

TEST(ServingRequest, ChecksAndMessagesNameFieldsNotFlags) {
  ServingRequest r;
  r.mtp = 9;
  auto st = check_serving(r);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message.rfind("{mtp}: ", 0), 0u) << st.error().message;
  EXPECT_TRUE(check_serving(ServingRequest{}));
  r = ServingRequest{};
  r.cluster = "hgx-h100*1";
  r.model = "llama3.1-8b";
  r.power_cap = "700W";
  auto run = run_serving(Environment{}, r);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().message, "{power_cap} goes with {power}");
  r.power_cap.clear();
  r.gpus = 16;
  run = run_serving(Environment{}, r);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().message, "{gpus} 16 is more than cluster 'hgx-h100*1' has (8)");
}

}  // namespace
}  // namespace clustertwin::scenario
