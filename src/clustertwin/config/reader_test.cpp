#include "clustertwin/config/reader.h"

#include <gtest/gtest.h>

namespace clustertwin::config {
namespace {

using base::BytesPerSecond;
using Need = Reader::Need;

Document doc(const char* text) {
  auto d = parse_document(text, "t.yaml");
  EXPECT_TRUE(d) << d.error().to_string();
  return *d;
}

TEST(Reader, ReadsTypedValuesWithUnits) {
  auto d = doc("name: x\nbw: 800 Gb/s\ncount: 4\nratio: 0.5\non: true\n");
  ReadContext ctx{.file = "t.yaml"};
  Reader r(d.root, ctx);
  EXPECT_EQ(*r.string("name"), "x");
  EXPECT_DOUBLE_EQ(r.quantity<BytesPerSecond>("bw")->base(), 100e9);
  EXPECT_EQ(*r.integer("count"), 4);
  EXPECT_DOUBLE_EQ(*r.number("ratio"), 0.5);
  EXPECT_TRUE(*r.boolean("on"));
  r.finish();
  EXPECT_TRUE(ctx.errors.empty()) << ctx.errors.to_string();
}

TEST(Reader, ReportsAllErrorsWithLinesAndSuggestions) {
  auto d = doc("name: x\nbandwith: 900 GB/s\ncount: -2\nbw: 900 GB\n");
  ReadContext ctx{.file = "t.yaml"};
  Reader r(d.root, ctx);
  r.string("name");
  r.integer("count");
  r.quantity<BytesPerSecond>("bw");
  r.quantity<BytesPerSecond>("bandwidth", Need::kOptional);
  r.finish();
  const std::string all = ctx.errors.to_string();
  ASSERT_EQ(ctx.errors.items.size(), 3u) << all;
  EXPECT_NE(all.find("t.yaml:3: count: expected an integer in [1, 2147483647], got -2"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("t.yaml:4: bw: expected a bandwidth"), std::string::npos) << all;
  EXPECT_NE(all.find("t.yaml:2: unknown key 'bandwith' (did you mean 'bandwidth'"),
            std::string::npos)
      << all;
}

TEST(Reader, MissingRequiredKeyIsAnError) {
  auto d = doc("a: 1\n");
  ReadContext ctx{.file = "t.yaml"};
  Reader r(d.root, ctx);
  EXPECT_FALSE(r.string("name"));
  ASSERT_EQ(ctx.errors.items.size(), 1u);
  EXPECT_NE(ctx.errors.items[0].message.find("missing required key 'name'"), std::string::npos);
}

TEST(Reader, FiguresNeedAKnownSource) {
  auto d =
      doc("tgp: {value: 1400 W, source: mlperf}\nhbm: {value: 288 GB, source: nope}\n"
          "bad: 3 W\n");
  ReadContext ctx{.file = "t.yaml", .sources = {{"mlperf", "MLPerf system JSON"}}};
  Reader r(d.root, ctx);
  EXPECT_DOUBLE_EQ(r.figure<base::Watts>("tgp")->base(), 1400.0);
  r.figure<base::Bytes>("hbm");
  EXPECT_FALSE(r.figure<base::Watts>("bad"));
  r.finish();
  ASSERT_EQ(ctx.provenance.size(), 1u);
  EXPECT_EQ(ctx.provenance[0].first, "tgp");
  EXPECT_EQ(ctx.errors.items.size(), 2u) << ctx.errors.to_string();
}

TEST(Reader, SyntaxErrorsCarryTheLine) {
  auto d = parse_document("a: 1\nb: [1, 2\n", "bad.yaml");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().file, "bad.yaml");
  EXPECT_GT(d.error().line, 0);
  EXPECT_FALSE(parse_document("", "e.yaml"));
  EXPECT_FALSE(parse_document("- 1\n- 2\n", "l.yaml"));
}

TEST(Reader, DuplicateKeysNameBothLines) {
  auto d = parse_document("a: 1\nb:\n  c: 2\n  c: 3\na: 4\n", "dup.yaml");
  ASSERT_FALSE(d);
  const std::string all = d.error().to_string();
  EXPECT_NE(all.find("dup.yaml:4: duplicate key 'c' (first at line 3, again at line 4)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("dup.yaml:5: duplicate key 'a' (first at line 1, again at line 5)"),
            std::string::npos)
      << all;
  // The same key in two different mappings is fine; JSON too.
  EXPECT_TRUE(parse_document("a: {x: 1}\nb: {x: 2}\n", "ok.yaml"));
  EXPECT_FALSE(parse_document("{\"a\": 1, \"a\": 2}", "dup.json"));
}

TEST(Reader, JsonIsAccepted) {
  auto d = doc("{\"name\": \"x\", \"bw\": \"900 GB/s\"}");
  ReadContext ctx{.file = "t.json"};
  Reader r(d.root, ctx);
  EXPECT_EQ(*r.string("name"), "x");
  EXPECT_DOUBLE_EQ(r.quantity<BytesPerSecond>("bw")->base(), 900e9);
}

}  // namespace
}  // namespace clustertwin::config
