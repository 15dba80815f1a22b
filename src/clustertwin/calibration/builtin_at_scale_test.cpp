#include "clustertwin/calibration/builtin_at_scale.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace clustertwin::calibration {
namespace {

// Bad cases are refused before any fit, every error at once, each at its file:line with what
// was expected.
TEST(BuiltinAtScale, BadCasesNameFileAndLine) {
  auto cat = hardware::Catalog::load_embedded();
  ASSERT_TRUE(cat);
  const auto dir = std::filesystem::temp_directory_path() / "ct-builtin-at-scale-test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream c(dir / "at_scale.csv");
    c << "# comment\n"
         "id,source,role,cluster,gpus,per_domain,op,size,algo,sharp,channels,metric,"
         "measured_GBps\n"
         "S1,dell-309,fit,hgx-h100*4,32,0,all_reduce,16G,auto,off,0,max_busbw,365.84\n"
         "S2,dell-309,fitted,hgx-h100*4,32,0,all_reduce,16G,auto,off,0,busbw,300\n"
         "S3,dell-309,check,hgx-h100*4,32,0,all_reduce,16Q,auto,off,0,busbw,300\n"
         "S4,dell-309,check,hgx-h100*4,32,0,all_reduce,1G,auto,off,0,busbw,-3\n"
         "S5,dell-309,check,hgx-h100*4\n";
    std::ofstream m(dir / "moe_a2a.csv");
    m << "id,source,role,impl,cluster,gpus,phase,tokens,token_bytes,balanced,metric\n";
  }
  auto r = builtin_at_scale(*cat, dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(r);
  const std::string m = r.error().to_string();
  EXPECT_NE(m.find("at_scale.csv:4: role: expected fit, check or degraded, got 'fitted'"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("at_scale.csv:5: size: expected bytes with an optional K, M or G, got '16Q'"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("at_scale.csv:6: expected a positive measured value, got '-3'"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("at_scale.csv:7: expected 13 cells, got 4"), std::string::npos) << m;
  EXPECT_NE(m.find("moe_a2a.csv:1: expected a column 'measured' in the header"), std::string::npos)
      << m;
}

// The report section of `--builtin at-scale --report`: both charts (bandwidths and kernel times
// apart), fitted and held-out dots, the figures, every case with its leave-one-source-out
// prediction; text from the files is escaped.
TEST(BuiltinAtScale, ReportSectionShowsEveryCase) {
  BuiltinAtScale b;
  b.summary = {"dell-309: nic_efficiency 0.9479 <exact>"};
  b.cases = {{.id = "S0207",
              .source = "dell-309",
              .role = "fit",
              .what = "all_reduce busbw (max)",
              .size = "16G",
              .unit = " GB/s",
              .ran = "nvls_tree/simple",
              .measured = 365.84,
              .predicted = 365.8,
              .has_loso = true,
              .loso_predicted = 354.9},
             {.id = "S0040",
              .source = "deepep-v1-ll",
              .role = "check",
              .what = "deepep-ll dispatch time_us",
              .size = "128 tok x 7168 B",
              .unit = " us",
              .ran = "rdma",
              .measured = 160,
              .predicted = 171.3}};
  const std::string h = at_scale_html_section(b);
  for (const char* want :
       {"aria-label=\"bus bandwidth and all-to-all bandwidth\"", "aria-label=\"MoE kernel times\"",
        "fill=\"#1f5fbf\"", "fill=\"#e8862a\"", "365.8 GB/s", "354.9 GB/s", "+7.1%",
        "nic_efficiency 0.9479 &lt;exact&gt;", "<h3>Residuals</h3>", "<td class=l>S0040</td>"}) {
    EXPECT_NE(h.find(want), std::string::npos) << want;
  }
}

}  // namespace
}  // namespace clustertwin::calibration
