#include "clustertwin/calibration/parse.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace clustertwin::calibration {
namespace {

std::string data(const std::string& name) {
  std::ifstream in(std::string(CT_CALIBRATION_DATA) + "/" + name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string error_of(const std::string& path, const std::string& text) {
  Measurements m;
  auto st = parse_text(path, text, m);
  return st ? std::string() : st.error().to_string();
}

// Golden parse of a real 2 x 8 H100 all_reduce_perf run (tests/validation/data/calibration).
TEST(ParseNcclTests, RealMultiNodeAllReduce) {
  Measurements m;
  const auto text = data("h100_2x8_all_reduce.txt");
  ASSERT_TRUE(parse_text("h100_2x8_all_reduce.txt", text, m));
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].format, Format::kNcclTests);
  EXPECT_EQ(m.inputs[0].records, 31);
  EXPECT_EQ(m.inputs[0].sha256.size(), 64u);
  ASSERT_EQ(m.collectives.size(), 1u);
  const auto& r = m.collectives[0];
  EXPECT_EQ(r.op, collective::Op::kAllReduce);
  EXPECT_EQ(r.dtype, "float");
  EXPECT_EQ(r.ranks, 16);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.per_node, 8);
  EXPECT_EQ(r.device, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(r.rows.size(), 31u);
  EXPECT_EQ(r.rows.front().size_bytes, 8);
  EXPECT_DOUBLE_EQ(r.rows.front().time_us, 135.8);
  EXPECT_DOUBLE_EQ(*r.rows.front().in_place_time_us, 123.5);
  EXPECT_EQ(r.rows.back().size_bytes, 8589934592);
  EXPECT_EQ(r.rows.back().count, 2147483648);
  EXPECT_DOUBLE_EQ(r.rows.back().time_us, 47535);
  EXPECT_DOUBLE_EQ(r.rows.back().busbw_GBps, 338.82);
  EXPECT_EQ(r.rows.back().line, 56);
}

TEST(ParseNcclTests, OpFromColumnsWithoutCommandLine) {
  // Without the command line the columns still say all_reduce (sum, count = size / 4 B,
  // busbw / algbw = 2 * 15 / 16).
  auto text = data("h100_2x8_all_reduce.txt");
  text = text.substr(text.find('\n') + 1);
  Measurements m;
  ASSERT_TRUE(parse_text("run.log", text, m));
  EXPECT_EQ(m.collectives.at(0).op, collective::Op::kAllReduce);
}

TEST(ParseNcclTests, TruncatedRunIsRefusedAtItsLastLine) {
  auto text = data("h100_2x8_all_reduce.txt");
  text = text.substr(0, text.find("# Out of bounds"));
  EXPECT_NE(error_of("cut.log", text)
                .find("cut.log:56: nccl-tests output ends after the row for 8589934592 B without "
                      "its closing '# Avg bus bandwidth' line (maxBytes 8589934592)"),
            std::string::npos)
      << error_of("cut.log", text);
}

TEST(ParseNcclTests, RowCutMidLine) {
  auto text = data("h100_2x8_all_reduce.txt");
  const auto pos = text.find("  8589934592    2147483648");
  text = text.substr(0, pos) + "   8589934592    2147483648     float     sum      -1    47535\n";
  EXPECT_NE(
      error_of("cut.log", text).find("cut.log:56: nccl-tests row with 6 columns, expected 13"),
      std::string::npos)
      << error_of("cut.log", text);
}

TEST(ParseNcclTests, RankCountThatContradictsTheBusFactor) {
  // Keep the first host's 8 rank lines only: busbw / algbw = 1.875 says 16 ranks.
  auto text = data("h100_2x8_all_reduce.txt");
  std::string kept;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.find("on ztan-mig-gq73") == std::string::npos) kept += line + "\n";
  const auto e = error_of("eight.log", kept);
  EXPECT_NE(e.find("busbw / algbw = 1.872 but all_reduce on 8 ranks gives 1.750"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("looks like 16 ranks"), std::string::npos) << e;
}

TEST(ParseNcclTests, CutShortExcerptWithoutRankLines) {
  // A real excerpt quoted without nccl-tests' header and summary.
  const auto e = error_of("a100_sendrecv_excerpt.txt", data("a100_sendrecv_excerpt.txt"));
  EXPECT_NE(e.find("a100_sendrecv_excerpt.txt:9: nccl-tests output ends after the row for "
                   "1073741824 B without its closing '# Avg bus bandwidth' line"),
            std::string::npos)
      << e;
}

TEST(ParseNcclTests, AmbiguousOpIsAskedFor) {
  // all_gather and alltoall print the same columns: without a name the parser asks for one.
  const std::string text =
      "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor)\n"
      "#  Rank  0 Group  0 Pid 1 on h device  0 [0x1] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid 2 on h device  1 [0x2] NVIDIA H100 80GB HBM3\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "     1048576        131072     float    none      -1    20.00   52.43   26.21      0    "
      "20.00   52.43   26.21      0\n"
      "# Avg bus bandwidth    : 26.21\n";
  EXPECT_NE(error_of("x.log", text).find("x.log:1: cannot tell which nccl-tests collective"),
            std::string::npos);
  Measurements m;
  ASSERT_TRUE(parse_text("alltoall_perf.log", text, m));
  EXPECT_EQ(m.collectives.at(0).op, collective::Op::kAllToAll);
}

TEST(ParseNcclTests, AlgbwThatIsNotSizeOverTime) {
  auto text = data("h100_2x8_all_reduce.txt");
  const auto pos = text.find("1261.6   53.20");
  text.replace(pos, 14, "1261.6   63.20");
  EXPECT_NE(error_of("x.log", text).find("x.log:49: algbw 63.20 GB/s does not match size / time"),
            std::string::npos)
      << error_of("x.log", text);
}

TEST(ParseFormats, ForeignFileIsRefused) {
  const auto e = error_of("notes.txt", "hello\nworld\n");
  EXPECT_NE(e.find("notes.txt:1: not a measurement file calibrate reads"), std::string::npos);
}

// Golden parse of AIConfigurator's H100 NCCL table (message_size in elements of half).
TEST(ParseAic, NcclTable) {
  Measurements m;
  ASSERT_TRUE(parse_text("aic_h100_nccl_excerpt.csv", data("aic_h100_nccl_excerpt.csv"), m));
  EXPECT_EQ(m.inputs[0].format, Format::kAicNccl);
  EXPECT_EQ(m.inputs[0].records, 11);
  ASSERT_EQ(m.collectives.size(), 1u);
  const auto& r = m.collectives[0];
  EXPECT_EQ(r.op, collective::Op::kAllGather);
  EXPECT_EQ(r.dtype, "half");
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.nodes, 1);
  EXPECT_EQ(r.rows.front().size_bytes, 512);       // 256 elements x 2 B
  EXPECT_DOUBLE_EQ(r.rows.front().time_us, 5.31);  // 0.00531 ms
}

TEST(ParseAic, GemmTableTakesItsPrecisionFromTheName) {
  Measurements m;
  ASSERT_TRUE(parse_text("gemm_fp8.csv", data("gemm_fp8.csv"), m));
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(m.kernels[0].kind, "gemm");
  EXPECT_EQ(m.kernels[0].dtype, "fp8");
  EXPECT_EQ(m.kernels[0].rows.size(), 4u);
  EXPECT_DOUBLE_EQ(m.kernels[0].rows[0].latency_ms, 0.012201);
  EXPECT_NE(error_of("table.csv", data("gemm_fp8.csv")).find("does not say its precision"),
            std::string::npos);
  auto cut = data("gemm_fp8.csv");
  cut = cut.substr(0, cut.rfind(',')) + "\n";
  EXPECT_NE(error_of("gemm_fp8.csv", cut).find("gemm_fp8.csv:5: CSV row with 3 fields, expected 4"),
            std::string::npos);
}

TEST(ParseMegatron, LayoutAndMedianStepTime) {
  Measurements m;
  ASSERT_TRUE(parse_text("train.log", data("megatron_format.log"), m));
  ASSERT_EQ(m.steps.size(), 1u);
  const auto& s = m.steps[0];
  EXPECT_EQ(s.gpus, 64);
  EXPECT_EQ(s.tp, 8);
  EXPECT_EQ(s.pp, 2);
  EXPECT_EQ(s.dp, 4);
  EXPECT_EQ(s.vpp, 1);
  EXPECT_EQ(s.global_batch, 512);
  EXPECT_EQ(s.seq_len, 4096);
  EXPECT_EQ(s.precision, "bf16");
  // The first logged interval (start-up) is dropped; median of 8210.5, 8190.1, 8230.0.
  EXPECT_EQ(s.iterations, 3);
  EXPECT_DOUBLE_EQ(s.step_time_s, 8.2105);
}

TEST(ParseMegatron, WithoutArgumentsBlockTheLayoutIsAskedFor) {
  auto text = data("megatron_format.log");
  text = text.substr(text.find(" [2025"));
  EXPECT_NE(
      error_of("train.log", text).find("train.log:1: Megatron-LM log without its 'arguments'"),
      std::string::npos);
  auto bad = data("megatron_format.log");
  bad.replace(bad.find("world_size ...................................... 64"), 52,
              "world_size ...................................... 32");
  EXPECT_NE(error_of("train.log", bad).find("tp*pp*cp*dp = 64 does not match world_size = 32"),
            std::string::npos);
}

TEST(ParseStepCsv, RowsAndChecks) {
  Measurements m;
  ASSERT_TRUE(parse_text("steps.csv",
                         "model,gpus,tp,pp,step_time_s\nllama3.1-70b,64,8,2,5.5\n"
                         "llama3.1-70b,128,8,2,5.7\n",
                         m));
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[1].dp, 8);
  EXPECT_NE(error_of("steps.csv", "gpus,tp,pp,dp,step_time_s\n64,8,2,8,5.5\n")
                .find("steps.csv:2: tp*pp*cp*dp = 128 does not match gpus = 64"),
            std::string::npos);
}

TEST(ParseLoadgen, OfflineSummary) {
  Measurements m;
  ASSERT_TRUE(parse_text("s.txt", data("loadgen_gptj_offline_summary.txt"), m));
  ASSERT_EQ(m.serving.size(), 1u);
  const auto& s = m.serving[0];
  EXPECT_EQ(s.scenario, "Offline");
  EXPECT_TRUE(s.valid);
  EXPECT_DOUBLE_EQ(s.requests_per_s, 189.806);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 13096.6);
  EXPECT_DOUBLE_EQ(s.latency_ms.at("latency_p50"), 534710.703272);
  EXPECT_NE(error_of("head.txt", data("loadgen_llama2_server_head.txt"))
                .find("head.txt:8: LoadGen summary without 'Scenario' and 'Result is' lines"),
            std::string::npos);
}

TEST(ParseServingJson, VllmAndSglang) {
  Measurements m;
  ASSERT_TRUE(parse_text("vllm.json",
                         R"({"backend": "vllm", "model_id": "m", "request_rate": "inf",
                             "request_throughput": 10.5, "output_throughput": 2100.0,
                             "median_ttft_ms": 120.0, "p99_ttft_ms": 400.0, "mean_tpot_ms": 30.0})",
                         m));
  ASSERT_TRUE(parse_text("sglang.jsonl",
                         "{\"backend\": \"sglang\", \"request_rate\": 4, \"request_throughput\": "
                         "3.9, \"output_throughput\": 800, \"median_ttft_ms\": 90}\n"
                         "{\"backend\": \"sglang\", \"request_rate\": 8, \"request_throughput\": "
                         "7.5, \"output_throughput\": 1500, \"median_ttft_ms\": 150}\n",
                         m));
  ASSERT_EQ(m.serving.size(), 3u);
  EXPECT_EQ(m.serving[0].tool, "vllm");
  EXPECT_DOUBLE_EQ(m.serving[0].latency_ms.at("ttft_p50"), 120.0);
  EXPECT_EQ(m.serving[2].tool, "sglang");
  EXPECT_DOUBLE_EQ(m.serving[2].request_rate, 8);
  EXPECT_EQ(m.serving[2].line, 2);
  EXPECT_NE(error_of("x.json", "{\"output_throughput\": 5}\n{\"output_thr")
                .find("x.json:2: not a JSON object"),
            std::string::npos);
}

}  // namespace
}  // namespace clustertwin::calibration
