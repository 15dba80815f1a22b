#include "clustertwin/scenario/fields.h"

#include <gtest/gtest.h>

#include "clustertwin/base/text.h"

namespace clustertwin::scenario {
namespace {

const std::vector<FieldWord> kWords = {{"tp_comm_overlap", "tp-overlap", "TP overlap"},
                                       {"global_batch", "global-batch", "global batch"}};

TEST(Fields, EachDoorWritesItsOwnWordForAField) {
  const std::string m = "{global_batch}: expected more; or give {tp_comm_overlap}";
  EXPECT_EQ(render(m, kWords, Door::kCli), "--global-batch: expected more; or give --tp-overlap");
  EXPECT_EQ(render(m, kWords, Door::kFile), "global_batch: expected more; or give tp_comm_overlap");
  EXPECT_EQ(render(m, kWords, Door::kPython),
            "global_batch: expected more; or give tp_comm_overlap");
  EXPECT_EQ(render(m, kWords, Door::kLibrary), "global batch: expected more; or give TP overlap");
}

TEST(Fields, AFieldOfAnotherRequestAndOtherBracesAreLeftAsTheyShouldBe) {
  EXPECT_EQ(render("{power_cap} goes with {power}", kWords, Door::kCli),
            "--power-cap goes with --power");
  EXPECT_EQ(render("{power_cap} goes", kWords, Door::kFile), "power_cap goes");
  EXPECT_EQ(render("{auto,alltoall} {X} {} { tp} {tp", kWords, Door::kCli),
            "{auto,alltoall} {X} {} { tp} {tp");
}

TEST(Fields, TheUsersOwnTextInAMessageIsWrittenAsGiven) {
  // A path with a field's name in braces (base::verbatim) reads as given; the message's own
  // {key} beside it is still the door's word.
  const std::string path = "/data/{global_batch}/{x}/p.yaml";
  const std::string m = "{global_batch}: '" + base::verbatim(path) + "' {tp_comm_overlap}";
  EXPECT_EQ(render(m, kWords, Door::kCli),
            "--global-batch: '/data/{global_batch}/{x}/p.yaml' --tp-overlap");
  EXPECT_EQ(render(m, kWords, Door::kFile),
            "global_batch: '/data/{global_batch}/{x}/p.yaml' tp_comm_overlap");
  EXPECT_EQ(render(base::verbatim("{{a}} {"), kWords, Door::kCli), "{{a}} {");
  EXPECT_EQ(base::verbatim("a{b}c"), "a{{b}c");
}

TEST(Fields, TheLeadingKeyIsTheFieldAMessageIsAbout) {
  EXPECT_EQ(leading_key("{gpus} 1024 is more than cluster 'x' has (144)"), "gpus");
  EXPECT_EQ(leading_key("model 'x' not found"), "");
  EXPECT_EQ(leading_key("{Gpus}"), "");
}

struct Toy {
  int n = 1;
  double x = 0;
  std::string mode = "a";
  bool off = false;
};

FieldTable<Toy> toy_fields() {
  return {
      Field<Toy>{
          .key = "n", .flag = "n", .name = "n", .member = &Toy::n, .ints = {.min = 1, .max = 8}},
      Field<Toy>{.key = "x",
                 .flag = "x",
                 .name = "x",
                 .member = &Toy::x,
                 .reals = {.min = 0, .max = 1, .min_exclusive = true}},
      Field<Toy>{.key = "mode",
                 .flag = "mode",
                 .name = "mode",
                 .member = &Toy::mode,
                 .choices = {"a", "b"}},
      Field<Toy>{.key = "on", .flag = "off", .name = "on", .member = &Toy::off, .inverted = true}};
}

TEST(Fields, ChecksNameTheFieldAndSayExpectedVersusActual) {
  const auto t = toy_fields();
  Toy v;
  v.n = 9;
  auto st = check_field(t[0], v);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message.rfind("{n}: ", 0), 0u) << st.error().message;
  EXPECT_NE(st.error().message.find("9"), std::string::npos);
  v.mode = "c";
  st = check_field(t[2], v);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "{mode}: expected a or b, got 'c'");
  v.mode = "b";
  EXPECT_TRUE(check_field(t[2], v));
}

TEST(Fields, TheFileReaderReadsEveryKeyWithItsCheckAndLine) {
  auto doc = config::parse_document("n: 3\nx: 0.5\nmode: b\non: false\n", "toy.yaml");
  ASSERT_TRUE(doc);
  config::ReadContext ctx{.file = doc->file};
  config::Reader in(doc->root, ctx);
  Toy v;
  auto lines = read_fields(in, toy_fields(), v);
  in.finish();
  EXPECT_TRUE(ctx.errors.empty()) << ctx.errors.to_string();
  EXPECT_EQ(v.n, 3);
  EXPECT_EQ(v.x, 0.5);
  EXPECT_EQ(v.mode, "b");
  EXPECT_TRUE(v.off);  // on: false
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[2].first, "mode");
  EXPECT_EQ(lines[2].second, 3);
}

TEST(Fields, TheFileReaderRefusesOutOfRangeValuesWithFileAndLine) {
  auto doc = config::parse_document("n: 3\nx: 0\nmode: c\n", "toy.yaml");
  ASSERT_TRUE(doc);
  config::ReadContext ctx{.file = doc->file};
  config::Reader in(doc->root, ctx);
  Toy v;
  read_fields(in, toy_fields(), v);
  const std::string all = ctx.errors.to_string();
  EXPECT_NE(all.find("toy.yaml:2: x: expected a number in (0, 1]"), std::string::npos) << all;
  EXPECT_NE(all.find("toy.yaml:3:"), std::string::npos) << all;
  EXPECT_EQ(v.x, 0);
}

}  // namespace
}  // namespace clustertwin::scenario
