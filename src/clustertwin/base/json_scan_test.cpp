#include "clustertwin/base/json_scan.h"

#include <gtest/gtest.h>

#include <string>

namespace clustertwin::base {
namespace {

TEST(JsonScan, PassesOrdinaryDocuments) {
  EXPECT_TRUE(check_json_text(R"({"a": 1, "b": {"a": 2}, "c": [{"a": 3}, {"a": 4}]})", "f"));
  EXPECT_TRUE(check_json_text(R"({"a\"b": 1, "a": "x,{\"a\": 1}"})", "f"));
  EXPECT_TRUE(check_json_text("not json at all", "f"));
}

TEST(JsonScan, DuplicateKeyNamesBothLines) {
  auto st =
      check_json_text("{\n  \"gpus\": 8,\n  \"x\": {\"gpus\": 1},\n  \"gpus\": 16\n}", "r.json");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().to_string(),
            "r.json:4: duplicate key 'gpus' (first at line 2, again at line 4)");
}

TEST(JsonScan, RefusesDeepNesting) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto st = check_json_text(deep, "deep.json");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("nested deeper than 64 levels"), std::string::npos);
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(check_json_text(ok, "ok.json"));
}

}  // namespace
}  // namespace clustertwin::base
