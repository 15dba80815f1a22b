#include "clustertwin/scenario/outputs.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace clustertwin::scenario {
namespace {

TEST(Outputs, DistinctPathsStdoutAndUnsetOutputsPass) {
  EXPECT_TRUE(check_distinct_outputs({}));
  EXPECT_TRUE(check_distinct_outputs(
      {{"--json", "a.json"}, {"--trace", "a.trace"}, {"--csv", "-"}, {"--out", ""}, {"--db", ""}}));
}

TEST(Outputs, TwoOutputsOnStandardOutputAreRefused) {
  // A JSON document and a trace on one stream run together, unparseable as either.
  auto st = check_distinct_outputs({{"--json", "-"}, {"--csv", "a.csv"}, {"--trace", "-"}});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message,
            "--json and --trace both write to standard output ('-', '-'): give each output its "
            "own path");
  EXPECT_FALSE(check_distinct_outputs({{"--json", "/dev/stdout"}, {"--out", "-"}}));
}

TEST(Outputs, TheSameFileUnderTwoSpellingsIsRefusedNamingBothOutputs) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string plain = (dir / "ct_outputs_same.json").string();
  const std::string dotted = (dir / "." / "ct_outputs_same.json").string();
  auto st = check_distinct_outputs({{"--json", plain}, {"--csv", "-"}, {"--report", dotted}});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "--json and --report name the same file '" + dotted +
                                    "': give each output its own path");
  // Relative and absolute spellings of one file clash too.
  const auto here = std::filesystem::current_path() / "ct_outputs_rel.csv";
  EXPECT_FALSE(check_distinct_outputs({{"a", "ct_outputs_rel.csv"}, {"b", here.string()}}));
  EXPECT_FALSE(check_distinct_outputs({{"a", "x/../y.db"}, {"b", "y.db"}}));
}

}  // namespace
}  // namespace clustertwin::scenario
