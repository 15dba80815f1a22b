#include "clustertwin/collective/collective_model.h"

#include <gtest/gtest.h>

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

TEST(CollectiveModel, Smoke) {
  auto spec = hardware::resolve_cluster(catalog(), "hgx-h100*2");
  auto topo = topology::Topology::build(catalog(), *spec);
  ASSERT_TRUE(topo);
  CollectiveModel m(catalog(), *topo, calibration());
  auto g = place_first(*topo, 8);
  auto e = m.estimate(*g, {.op = Op::kAllReduce, .bytes = 1 << 30});
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_GT(e->busbw.base(), 100e9);
}

}  // namespace
}  // namespace clustertwin::collective
