#include "clustertwin/power/power_setup.h"

#include <gtest/gtest.h>

#include "clustertwin/power/test_fixture.h"

namespace clustertwin::power {
namespace {

using testing::catalog;
using testing::power_catalog;

hardware::ClusterSpec gb300() { return *hardware::resolve_cluster(catalog(), "gb300-nvl72*2"); }

TEST(PowerSetup, ResolvesTheSystemAndTheSettingsOnce) {
  auto s = resolve_power_setup(catalog(), power_catalog(), gb300(), {});
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->system->name, "gb300-nvl72");
  EXPECT_EQ(s->cap_reason, "default (TGP)");
  EXPECT_EQ(s->cap_W(), s->gpu->tgp.base());
  EXPECT_FALSE(s->smoothing);
  // A cap is the user's; a node policy below it lowers it and says so.
  PowerSettings capped{.gpu = {.cap = base::watts(1200)}};
  auto c = resolve_power_setup(catalog(), power_catalog(), gb300(), capped);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->cap_W(), 1200);
  EXPECT_EQ(c->cap_reason, "power cap (asked)");
  const auto& policies = s->system_params->node_policies;
  ASSERT_FALSE(policies.empty());
  PowerSettings pol{.node_policy = policies.front().first};
  auto p = resolve_power_setup(catalog(), power_catalog(), gb300(), pol);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->cap_reason.rfind("node policy " + policies.front().first, 0), 0u);
  EXPECT_LE(p->cap_W(), s->cap_W());
  // Smoothing from the system's catalog profile.
  PowerSettings sm{.smoothing = SmoothingRequest{}};
  auto m = resolve_power_setup(catalog(), power_catalog(), gb300(), sm);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->smoothing);
}

TEST(PowerSetup, BadSettingsNameTheirField) {
  auto bad = resolve_power_setup(catalog(), power_catalog(), gb300(), {.node_policy = "nope"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("{node_policy} 'nope' is not a policy of gb300-nvl72", 0),
            0u);
  auto low =
      resolve_power_setup(catalog(), power_catalog(), gb300(), {.gpu = {.cap = base::watts(10)}});
  EXPECT_FALSE(low);
  auto pue = resolve_power_setup(catalog(), power_catalog(), gb300(), {.cooling = {.pue = 0.5}});
  EXPECT_FALSE(pue);
}

}  // namespace
}  // namespace clustertwin::power
