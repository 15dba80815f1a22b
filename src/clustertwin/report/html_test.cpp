#include "clustertwin/report/html.h"

#include <gtest/gtest.h>

#include "clustertwin/base/sha256.h"
#include "clustertwin/report/web_assets.h"

namespace clustertwin::report {
namespace {

size_t count(const std::string& hay, std::string_view needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

/// The text of the embedded results block.
std::string data_block(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"clustertwin-results\">";
  const size_t begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  const size_t start = begin + open.size();
  return html.substr(start, html.find("</script>", start) - start);
}

Json sample() {
  return {{"cluster",
           {{"cluster", {{"name", "tiny"}, {"display_name", "Tiny <cluster> & co"}}},
            {"counts", {{"gpus", 8}}}}},
          {"warnings", {"a </script><script>alert(1)</script> warning", "<!-- not a comment"}}};
}

// Only the page's own scripts may run: the policy lists one sha256 per executable <script>, each
// the hash of that element's exact text, and no 'unsafe-inline' for scripts.
TEST(Html, ScriptsRunOnlyByTheirHashes) {
  const std::string html = render_html(sample());
  const size_t p = html.find("script-src");
  ASSERT_NE(p, std::string::npos);
  const std::string policy = html.substr(p, html.find(';', p) - p);
  EXPECT_EQ(policy.find("unsafe"), std::string::npos) << policy;
  int scripts = 0;
  for (size_t at = html.find("<script>"); at != std::string::npos;
       at = html.find("<script>", at + 1)) {
    const size_t start = at + 8;
    const std::string text = html.substr(start, html.find("</script>", start) - start);
    EXPECT_NE(policy.find("'sha256-" + base::base64(base::sha256(text)) + "'"), std::string::npos)
        << "script " << scripts << " is not in " << policy;
    ++scripts;
  }
  EXPECT_EQ(scripts, 2);
  EXPECT_EQ(count(policy, "'sha256-"), 2u);
}

TEST(Html, EmbedsAssetsAndData) {
  const std::string html = render_html(sample());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>clustertwin report: Tiny &lt;cluster&gt; &amp; co</title>"),
            std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  // ECharts and the page script are inlined: no external script, stylesheet or font.
  EXPECT_GT(web::join(web::echarts_js()).size(), 500'000u);
  EXPECT_NE(html.find("clustertwin-results"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_LT(html.size(), 5u * 1000 * 1000);
}

TEST(Html, DataCannotCloseItsScriptBlock) {
  const std::string html = render_html(sample());
  // Exactly three script blocks close: data, ECharts, the page script.
  EXPECT_EQ(count(html, "</script>"), 3u);
  const std::string block = data_block(html);
  EXPECT_EQ(block.find('<'), std::string::npos);
  EXPECT_EQ(Json::parse(block), sample());
}

TEST(Html, InvalidUtf8IsReplacedNotThrown) {
  const Json j = {{"warnings", {std::string("bad \xff byte")}}};
  const std::string html = render_html(j);
  EXPECT_NE(data_block(html).find("bad "), std::string::npos);
}

TEST(Html, Deterministic) { EXPECT_EQ(render_html(sample()), render_html(sample())); }

TEST(Html, EscapesInlineScript) {
  EXPECT_EQ(escape_inline_script("a = '</SCRIPT>'; b = '<!--';"),
            "a = '<\\/SCRIPT>'; b = '<\\!--';");
  EXPECT_EQ(escape_inline_script("x < y"), "x < y");
  EXPECT_EQ(json_for_script(Json{{"k", "<&>"}}), "{\"k\":\"\\u003c\\u0026\\u003e\"}");
}

TEST(Html, BareDescribeJsonBecomesTheClusterSection) {
  const Json describe = {{"counts", {{"gpus", 72}}}, {"compute", Json::object()}};
  EXPECT_EQ(normalize_results(describe), (Json{{"cluster", describe}}));
  const Json flagship = {{"cluster", describe}, {"warnings", Json::array()}};
  EXPECT_EQ(normalize_results(flagship), flagship);
}

}  // namespace
}  // namespace clustertwin::report
