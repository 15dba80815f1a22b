#include "clustertwin/scenario/calibrate.h"

#include <gtest/gtest.h>

namespace clustertwin::scenario {
namespace {

TEST(CalibrateWords, EachDoorWritesItsWordForCalibratesOwnSettings) {
  const std::string m = "{builtin} collectives: no file 'h900' in the recipe; see {only}";
  EXPECT_EQ(render(m, calibrate_words(), Door::kCli),
            "--builtin collectives: no file 'h900' in the recipe; see --only");
  EXPECT_EQ(render(m, calibrate_words(), Door::kFile),
            "builtin collectives: no file 'h900' in the recipe; see only");
  EXPECT_EQ(render("{out_dir}", calibrate_words(), Door::kCli), "--out-dir");
}

TEST(CalibrateWords, TheProfileListNamesTheFieldThatPicksOne) {
  const std::string text = profile_list_text(
      {{.name = "h100", .gpus = {"h100", "h800"}, .measured_on = "DGX H100"}, {.name = "b200"}});
  EXPECT_EQ(text,
            "Built-in calibration profiles (catalog/collectives/; pick one with {calibration} "
            "NAME):\n  h100  GPUs: h100, h800  measured on: DGX H100\n  b200  GPUs: \n");
}

}  // namespace
}  // namespace clustertwin::scenario
