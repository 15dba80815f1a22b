#include "clustertwin/base/text.h"

#include <gtest/gtest.h>

namespace clustertwin::base {
namespace {

TEST(Text, EditDistance) {
  EXPECT_EQ(edit_distance("gb300", "gb200"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Text, SuggestsTheClosestKnownNames) {
  std::vector<std::string> known = {"gb300-nvl72", "gb200-nvl72", "hgx-h100", "dgx-a100"};
  auto near = closest_names("gb300-nv72", known);
  ASSERT_FALSE(near.empty());
  EXPECT_EQ(near.front(), "gb300-nvl72");
  EXPECT_NE(did_you_mean("hgx-h10", known).find("'hgx-h100'"), std::string::npos);
  EXPECT_NE(did_you_mean("zzzzzzzzzzzzzz", known).find("known:"), std::string::npos);
}

}  // namespace
}  // namespace clustertwin::base
