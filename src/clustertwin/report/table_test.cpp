#include "clustertwin/report/table.h"

#include <gtest/gtest.h>

#include "clustertwin/report/json_out.h"

namespace clustertwin::report {
namespace {

TEST(Table, AlignsColumns) {
  Table t({"name", "value"}, {true});
  t.add({"a", "1"});
  t.add({"long name", "12345"});
  EXPECT_EQ(t.render(), "name       value\na              1\nlong name  12345\n");
  EXPECT_EQ(t.csv(), "name,value\na,1\nlong name,12345\n");
}

TEST(JsonOut, RoundsToSignificantDigits) {
  EXPECT_DOUBLE_EQ(round_sig(1234.56789), 1234.57);
  EXPECT_DOUBLE_EQ(round_sig(0.000123456789), 0.000123457);
  EXPECT_DOUBLE_EQ(round_sig(4608), 4608);
  EXPECT_DOUBLE_EQ(round_sig(0.0), 0.0);
}

}  // namespace
}  // namespace clustertwin::report
