// Training validation against published measurements (shared/reference/calibration-cases.csv,
// mlperf-training-configs.csv and the training rows of calibration-at-scale.csv; the figures are
// copied here with their case ids and sources so the project builds and tests without shared/).
//
// One number of the training model is fitted on these cases, fp8_overhead (leave-one-
// source-out in docs/models/training.md); kernel efficiencies come from the compute layer's fits
// to measured forward kernels (catalog/compute/), communication from the collective layer, and
// framework_overhead is 0. Era settings follow what each source ran: Megatron-LM 2021-22 used
// unfused attention, a replicated optimizer and a DP all-reduce after the backward pass (--zero 0,
// no overlap); MegaScale's Megatron-LM baseline, Llama 3 and MLPerf use the distributed optimizer
// with overlapped reductions; MLPerf runs FP8 with TP communication overlap.
// Tolerance: +-20% per case (the bound; wider only with a reason next to the case) and a
// median absolute error under 8%.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "clustertwin/execution/training.h"
#include "clustertwin/execution/training_rig.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/workload/catalog_test_support.h"

namespace clustertwin {
namespace {

enum class Metric {
  kHardwareTflops,     // Megatron-LM 2021: hardware FLOPs (recomputation included) per GPU
  kModelTflops,        // model FLOPs per GPU, full (non-causal) attention
  kModelTflopsCausal,  // model FLOPs per GPU with causal attention (Megatron-Core 2025 counting)
  kStepTime,           // seconds per step
  kTokensPerGpu,       // tokens per second per GPU
};

struct Case {
  const char* id;
  const char* source;
  const char* cluster;
  int64_t gpus;
  // A catalog model, or a Megatron-style GPT when `model` is nullptr.
  const char* model;
  int layers;
  int64_t hidden, heads;
  workload::TrainingLayout layout;
  Metric metric;
  double measured;
  const char* layout_text;  // as the source prints it (for the docs table)
  double tolerance = 0.20;  // the bound; wider only with a reason next to the case
  // Work still open on this case (issue 14): it runs and prints, is left out of the median and
  // the tolerance, and the test fails once it passes so that the mark is removed.
  const char* pending = nullptr;
};

using compute::DType;
using models::Recompute;
namespace rm = workload::recompute_module;

workload::TrainingLayout megatron2021(int tp, int pp, int64_t gbs, Recompute rc) {
  return {.tp = tp,
          .pp = pp,
          .micro_batch = 1,
          .global_batch = gbs,
          .seq_len = 2048,
          .recompute = rc,
          .zero = 0,
          .dp_overlap = false,
          .flash_attention = false};
}

workload::TrainingLayout mlperf(int tp, int pp, int cp, int vpp, int64_t mbs, int64_t gbs,
                                int64_t seq) {
  return {.tp = tp,
          .pp = pp,
          .cp = cp,
          .vpp = vpp,
          .micro_batch = mbs,
          .global_batch = gbs,
          .seq_len = seq,
          .dtype = DType::kFp8,
          .tp_comm_overlap = true};
}

// MLPerf llama2_70b_lora: LoRA r = 16, FP8, no recomputation, sequences of 8192.
workload::TrainingLayout lora(int tp, int cp, int64_t gbs, bool fp8_attention) {
  auto l = mlperf(tp, 1, cp, 1, 1, gbs, 8192);
  l.lora_rank = 16;
  l.fp8_attention = fp8_attention;
  // Assumed (not in the configs file): the SwiGLU input kept in FP8 (Megatron
  // --activation-func-fp8-input-store); the TP1 CP1 layouts on 8 B200 / GB200 do not fit
  // otherwise.
  l.fp8_activation_store = true;
  return l;
}

// Megatron-Bridge performance recipes (NeMo 25.11): distributed optimizer, overlapped DP and TP
// communication, MoE with forced-balanced routing.
workload::TrainingLayout bridge(int tp, int pp, int cp, int vpp, int ep, int64_t mbs, int64_t gbs,
                                int64_t seq, DType d) {
  auto l = mlperf(tp, pp, cp, vpp, mbs, gbs, seq);
  l.ep = ep;
  l.dtype = d;
  l.routing = workload::MoeRouting::kBalanced;
  l.ep_overlap = false;
  return l;
}

const char* kMeg = "Narayanan et al. 2021 (arXiv:2104.04473) Table 1";
const char* kKor = "Korthikanti et al. 2022 (arXiv:2205.05198) Table 5";
const char* kMS = "Jiang et al. MegaScale (arXiv:2402.15627) Table 2, Megatron-LM baseline";
const char* kL3 = "Llama 3 (arXiv:2407.21783) Table 4";
const char* kMLP =
    "mlcommons/training_results_v4.1/v5.0 (shared/reference/mlperf-training-configs.csv)";
const char* kBridge =
    "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md, NeMo 25.11 "
    "(shared/reference/calibration-at-scale.csv)";
const char* kZoo =
    "yanring/Megatron-MoE-ModelZoo best_practice/qwen3 (shared/reference/calibration-at-scale.csv)";
const char* kDS =
    "DeepSeek-V3 technical report (arXiv:2412.19437) §1: 180K H800 GPU hours per "
    "trillion tokens";

std::vector<Case> cases() {
  const auto sel = Recompute::kSelective;
  const auto full = Recompute::kFull;
  auto ms = [](int64_t gbs) {
    return workload::TrainingLayout{.tp = 8,
                                    .pp = 8,
                                    .micro_batch = 1,
                                    .global_batch = gbs,
                                    .seq_len = 2048,
                                    .recompute = Recompute::kSelective,
                                    .flash_attention = false};
  };
  auto l3 = workload::TrainingLayout{.tp = 8,
                                     .pp = 16,
                                     .vpp = 4,
                                     .micro_batch = 1,
                                     .global_batch = 2048,
                                     .seq_len = 8192,
                                     .recompute = Recompute::kFull};
  // DeepSeek-V3 on 2,048 H800 as its report describes it (§3.2-3.3): PP16 (DualPipe), EP64 over
  // 8 nodes, ZeRO-1, FP8 with 1x128 / 128x128 block scaling, RMSNorm and MLA up-projection
  // recomputed, SwiGLU output recomputed from FP8-cached inputs, Adam moments in bf16, node-
  // limited deduplicated dispatch, auxiliary-loss-free balanced routing; sequences of 4,096 in
  // batches of 15,360 (§4.2), one sequence per micro-batch.
  workload::TrainingLayout ds{.tp = 1,
                              .pp = 16,
                              .ep = 64,
                              .micro_batch = 1,
                              .global_batch = 15360,
                              .seq_len = 4096,
                              .dtype = DType::kFp8Block,
                              .recompute = Recompute::kSelective,
                              .ep_overlap = true};
  ds.recompute_modules = rm::kLayernorm | rm::kMlaUpProj | rm::kMoeAct;
  ds.schedule = workload::PipelineSchedule::kDualPipe;
  ds.moment_bytes = 2;
  ds.fp8_activation_store = true;
  // Megatron-MoE-ModelZoo Qwen3-235B-A22B on 256 H100: cross-node EP32 with DeepEP, recompute of
  // norms and activations.
  // ModelZoo recipes: ETP 1 (folding), DeepEP (deduplicated dispatch) unless the row names the
  // NCCL all-to-all dispatcher. Routing: the ModelZoo runs train the router as it is (dropless,
  // auxiliary load-balancing loss); forced balance is opt-in there (the readme: "Add
  // --moe-router-force-load-balancing to test forced load balancing") and its long-context table
  // gives both (S0183: 389 forced, 357 dropless). Rows that do not say "forced" run dropless with
  // the measured routing skew (`--routing measured`, moe_imbalance_measured).
  auto zoo = [](int tp, int pp, int vpp, int ep, int cp, int64_t gbs, int64_t seq, bool overlap,
                bool deepep = true, bool forced = false) {
    workload::TrainingLayout l{.tp = tp,
                               .pp = pp,
                               .cp = cp,
                               .ep = ep,
                               .vpp = vpp,
                               .micro_batch = 1,
                               .global_batch = gbs,
                               .seq_len = seq,
                               .recompute = Recompute::kSelective,
                               .tp_comm_overlap = true,
                               .ep_overlap = overlap};
    l.recompute_modules = rm::kLayernorm | rm::kMoeAct;
    l.moe_dispatch = deepep ? workload::MoeDispatch::kDedup : workload::MoeDispatch::kAllToAll;
    l.routing = forced ? workload::MoeRouting::kBalanced : workload::MoeRouting::kMeasured;
    return l;
  };
  // GPT-OSS 120B on 64 H100 (S0170): the row reads "GBS 512 MBS 4 GA2", which does not add up
  // with TP1 PP4 (DP16: GA would be 8). The recipe (Megatron-Bridge
  // gpt_oss_workload_base_configs.py, GPT_OSS_120B_PRETRAIN_CONFIG_H100_BF16_V1) runs MBS 1,
  // GBS 512, PP4 EP8 with --recompute-modules layernorm moe_act, and its common settings reduce
  // gradients in bf16 (grad_reduce_in_fp32 = False): taken from the recipe.
  auto gpt_oss = bridge(1, 4, 1, 1, 8, 1, 512, 4096, DType::kBf16);
  gpt_oss.recompute = Recompute::kSelective;
  gpt_oss.recompute_modules = rm::kLayernorm | rm::kMoeAct;
  gpt_oss.grad_bytes = 2;
  gpt_oss.moe_dispatch = workload::MoeDispatch::kAllToAll;
  // Qwen3-235B 131k context (S0183): the source's command recomputes layernorm and moe
  // (--recompute-granularity selective --recompute-modules layernorm moe).
  auto long_ctx = zoo(4, 8, 4, 8, 8, 256, 131072, false, true, /*forced=*/true);
  long_ctx.recompute_modules = rm::kLayernorm | rm::kMoe;
  auto long_ctx_dropless = long_ctx;
  long_ctx_dropless.routing = workload::MoeRouting::kMeasured;
  // DeepSeek-V3 on 256 B200 (S0160): the recipe (Megatron-Bridge deepseek_workload_base_configs.py,
  // DEEPSEEK_V3_PRETRAIN_CONFIG_B200_V1, which FP8_MX_V1 aliases: PP16 EP8 GBS 2048) recomputes
  // the MLA up-projections (recompute_modules ["mla_up_proj"]); the row omits it.
  auto ds_b200 = bridge(1, 16, 1, 1, 8, 1, 2048, 4096, DType::kFp8);
  ds_b200.recompute = Recompute::kSelective;
  ds_b200.recompute_modules = rm::kMlaUpProj;
  auto qwen_h100_fp8 = bridge(2, 8, 1, 4, 32, 1, 2048, 4096, DType::kFp8);
  qwen_h100_fp8.ep_overlap = true;
  qwen_h100_fp8.moe_dispatch = workload::MoeDispatch::kAllToAll;
  return {
      {"VC0344", kMeg, "selene-a100", 64, nullptr, 30, 3072, 32, megatron2021(2, 1, 512, full),
       Metric::kHardwareTflops, 138, "TP2 PP1 DP32, full recompute"},
      {"VC0347", kMeg, "selene-a100", 128, nullptr, 36, 4096, 32, megatron2021(4, 1, 512, full),
       Metric::kHardwareTflops, 142, "TP4 PP1 DP32, full recompute"},
      {"VC0353", kMeg, "selene-a100", 512, nullptr, 48, 8192, 64, megatron2021(8, 2, 1536, full),
       Metric::kHardwareTflops, 138, "TP8 PP2 DP32, full recompute"},
      {"VC0356", kMeg, "selene-a100", 1024, nullptr, 60, 10240, 80, megatron2021(8, 4, 1792, full),
       Metric::kHardwareTflops, 140, "TP8 PP4 DP32, full recompute"},
      {"VC0362", kMeg, "selene-a100", 1920, nullptr, 96, 16384, 128,
       megatron2021(8, 16, 2160, full), Metric::kHardwareTflops, 155,
       "TP8 PP16 DP15, full recompute"},
      {"VC0365", kMeg, "selene-a100", 2520, nullptr, 105, 20480, 128,
       megatron2021(8, 35, 2520, full), Metric::kHardwareTflops, 163,
       "TP8 PP35 DP9, full recompute"},
      {"VC0437", kKor, "selene-a100", 8, nullptr, 48, 6144, 64, megatron2021(8, 1, 4, full),
       Metric::kStepTime, 1.42, "TP8, full recompute"},
      {"VC0438", kKor, "selene-a100", 8, nullptr, 48, 6144, 64, megatron2021(8, 1, 4, sel),
       Metric::kStepTime, 1.10, "TP8 SP, selective"},
      {"VC0441", kKor, "selene-a100", 280, nullptr, 105, 20480, 128, megatron2021(8, 35, 280, full),
       Metric::kStepTime, 49.05, "TP8 PP35, full recompute"},
      {"VC0442", kKor, "selene-a100", 280, nullptr, 105, 20480, 128, megatron2021(8, 35, 280, sel),
       Metric::kStepTime, 37.83, "TP8 PP35 SP, selective"},
      {"VC0383", kMS, "selene-a100", 256, nullptr, 96, 12288, 96, ms(768), Metric::kStepTime, 40.0,
       "TP8 PP8 DP4, selective"},
      {"VC0389", kMS, "selene-a100", 768, nullptr, 96, 12288, 96, ms(768), Metric::kStepTime, 15.2,
       "TP8 PP8 DP12, selective"},
      {"VC0377", kL3, "meta-llama3-h100", 8192, "llama3.1-405b", 0, 0, 0, l3, Metric::kModelTflops,
       430, "TP8 PP16 DP64 (VPP4, full recompute assumed)"},
      {"VC0379", kL3, "meta-llama3-h100", 16384, "llama3.1-405b", 0, 0, 0, l3, Metric::kModelTflops,
       400, "TP8 PP16 DP128 (VPP4, full recompute assumed)"},
      // MLPerf Training GPT-3 175B (v4.1).
      {"mlperf-v4.1-gpt3-eos_n32", kMLP, "eos-dfw-h100", 256, "gpt3-175b", 0, 0, 0,
       mlperf(4, 8, 1, 6, 2, 2048, 2048), Metric::kStepTime, 18.3743, "TP4 PP8 VPP6 DP8, MBS2"},
      {"mlperf-v4.1-gpt3-eos_n64", kMLP, "eos-dfw-h100", 512, "gpt3-175b", 0, 0, 0,
       mlperf(4, 8, 1, 6, 2, 2048, 2048), Metric::kStepTime, 9.4963, "TP4 PP8 VPP6 DP16, MBS2"},
      {"mlperf-v4.1-gpt3-eos-dfw_n1452", kMLP, "eos-dfw-h100", 11616, "gpt3-175b", 0, 0, 0,
       mlperf(4, 6, 1, 8, 1, 2904, 2048), Metric::kStepTime, 0.9214, "TP4 PP6 VPP8 DP484"},
      {"mlperf-v4.1-gpt3-oracle_1536", kMLP, "hgx-h100*192", 1536, "gpt3-175b", 0, 0, 0,
       mlperf(4, 8, 1, 4, 2, 3072, 2048), Metric::kStepTime, 5.1705, "TP4 PP8 VPP4 DP48, MBS2"},
      {"mlperf-v4.1-gpt3-oracle_3072", kMLP, "hgx-h100*384", 3072, "gpt3-175b", 0, 0, 0,
       mlperf(4, 8, 1, 4, 2, 3072, 2048), Metric::kStepTime, 3.0544, "TP4 PP8 VPP4 DP96, MBS2"},
      {"mlperf-v4.1-gpt3-b200_n8", kMLP, "hgx-b200*8", 64, "gpt3-175b", 0, 0, 0,
       mlperf(4, 8, 1, 6, 2, 2048, 2048), Metric::kStepTime, 36.2336, "TP4 PP8 VPP6 DP2, MBS2"},
      // MLPerf Training Llama 3.1 405B (v5.0).
      {"mlperf-v5.0-405b-eos-dfw_n1024", kMLP, "eos-dfw-h100", 8192, "llama3.1-405b", 0, 0, 0,
       mlperf(8, 8, 2, 8, 1, 1536, 8192), Metric::kStepTime, 5.1771, "TP8 PP8 VPP8 CP2 DP64"},
      {"mlperf-v5.0-405b-eos-dfw_n320", kMLP, "eos-dfw-h100", 2560, "llama3.1-405b", 0, 0, 0,
       mlperf(8, 8, 2, 8, 1, 1120, 8192), Metric::kStepTime, 11.1726, "TP8 PP8 VPP8 CP2 DP20"},
      {"mlperf-v5.0-405b-eos-dfw_n304", kMLP, "eos-dfw-h100", 2432, "llama3.1-405b", 0, 0, 0,
       mlperf(8, 8, 2, 8, 1, 1216, 8192), Metric::kStepTime, 12.7112, "TP8 PP8 VPP8 CP2 DP19"},
      {"mlperf-v5.0-405b-eos-dfw_n256", kMLP, "eos-dfw-h100", 2048, "llama3.1-405b", 0, 0, 0,
       mlperf(8, 8, 2, 8, 1, 1152, 8192), Metric::kStepTime, 14.2211, "TP8 PP8 VPP8 CP2 DP16"},
      {"mlperf-v5.0-405b-eos-dfw_n64", kMLP, "eos-dfw-h100", 512, "llama3.1-405b", 0, 0, 0,
       mlperf(8, 8, 2, 8, 1, 1152, 8192), Metric::kStepTime, 55.1426, "TP8 PP8 VPP8 CP2 DP4"},
      {"mlperf-v5.0-405b-nebius-h200_n128", kMLP, "hgx-h200*128", 1024, "llama3.1-405b", 0, 0, 0,
       mlperf(4, 8, 2, 8, 1, 1152, 8192), Metric::kStepTime, 25.3553, "TP4 PP8 VPP8 CP2 DP16"},
      {"mlperf-v5.0-405b-nebius-h200_n64", kMLP, "hgx-h200*64", 512, "llama3.1-405b", 0, 0, 0,
       mlperf(4, 8, 2, 8, 1, 1152, 8192), Metric::kStepTime, 50.0114, "TP4 PP8 VPP8 CP2 DP8"},
      {"mlperf-v5.0-405b-carina_2496", kMLP, "carina-gb200", 2496, "llama3.1-405b", 0, 0, 0,
       mlperf(4, 8, 2, 8, 1, 1248, 8192), Metric::kStepTime, 5.8222, "TP4 PP8 VPP8 CP2 DP39"},
      {"mlperf-v5.0-405b-carina_2048", kMLP, "carina-gb200", 2048, "llama3.1-405b", 0, 0, 0,
       mlperf(4, 8, 2, 8, 1, 1280, 8192), Metric::kStepTime, 7.1584, "TP4 PP8 VPP8 CP2 DP32"},
      {"mlperf-v5.0-405b-carina_1536", kMLP, "carina-gb200", 1536, "llama3.1-405b", 0, 0, 0,
       mlperf(4, 8, 2, 8, 1, 1152, 8192), Metric::kStepTime, 8.4988, "TP4 PP8 VPP8 CP2 DP24"},
      {"mlperf-v5.0-405b-carina_1024", kMLP, "carina-gb200", 1024, "llama3.1-405b", 0, 0, 0,
       mlperf(4, 8, 2, 8, 1, 768, 8192), Metric::kStepTime, 8.4483, "TP4 PP8 VPP8 CP2 DP16"},
      {"mlperf-v5.0-405b-carina_512", kMLP, "carina-gb200", 512, "llama3.1-405b", 0, 0, 0,
       mlperf(4, 8, 2, 8, 1, 896, 8192), Metric::kStepTime, 19.2776, "TP4 PP8 VPP8 CP2 DP8"},
      {"mlperf-v5.0-405b-tyche_512", kMLP, "tyche-gb200", 512, "llama3.1-405b", 0, 0, 0,
       mlperf(4, 8, 2, 8, 1, 896, 8192), Metric::kStepTime, 19.4323, "TP4 PP8 VPP8 CP2 DP8"},
      {"mlperf-v5.0-405b-tyche_256", kMLP, "tyche-gb200", 256, "llama3.1-405b", 0, 0, 0,
       mlperf(4, 8, 2, 8, 1, 448, 8192), Metric::kStepTime, 19.1685, "TP4 PP8 VPP8 CP2 DP4"},
      // MLPerf Training Llama 2 70B LoRA (v4.1, v5.0); one case per distinct system and layout.
      {"mlperf-v4.1-lora-b200_preview", kMLP, "hgx-b200*1", 8, "llama2-70b", 0, 0, 0,
       lora(1, 2, 8, true), Metric::kStepTime, 1.7038, "LoRA r16, TP1 CP2 DP4"},
      {"mlperf-v4.1-lora-eos_n128", kMLP, "eos-h100", 1024, "llama2-70b", 0, 0, 0,
       lora(4, 2, 128, false), Metric::kStepTime, 0.5473, "LoRA r16, TP4 CP2 DP128"},
      {"mlperf-v4.1-lora-oracle_512", kMLP, "hgx-h100*64", 512, "llama2-70b", 0, 0, 0,
       lora(4, 2, 64, false), Metric::kStepTime, 0.5597, "LoRA r16, TP4 CP2 DP64"},
      {"mlperf-v4.1-lora-eos_n8", kMLP, "eos-h100", 64, "llama2-70b", 0, 0, 0, lora(4, 2, 8, false),
       Metric::kStepTime, 0.5409, "LoRA r16, TP4 CP2 DP8"},
      {"mlperf-v4.1-lora-eos", kMLP, "eos-h100", 8, "llama2-70b", 0, 0, 0, lora(4, 1, 8, true),
       Metric::kStepTime, 3.6659, "LoRA r16, TP4 DP2"},
      {"mlperf-v4.1-lora-h200", kMLP, "hgx-h200*1", 8, "llama2-70b", 0, 0, 0, lora(1, 2, 8, false),
       Metric::kStepTime, 3.2322, "LoRA r16, TP1 CP2 DP4"},
      {"mlperf-v5.0-lora-nyx_n1 (B200 x8, 9 systems)", kMLP, "hgx-b200*1", 8, "llama2-70b", 0, 0, 0,
       lora(1, 1, 8, true), Metric::kStepTime, 1.5127, "LoRA r16, TP1 DP8"},
      {"mlperf-v5.0-lora-tyche_512", kMLP, "tyche-gb200", 512, "llama2-70b", 0, 0, 0,
       lora(1, 8, 64, true), Metric::kStepTime, 0.2579, "LoRA r16, CP8 DP64"},
      {"mlperf-v5.0-lora-tyche_144", kMLP, "tyche-gb200", 144, "llama2-70b", 0, 0, 0,
       lora(1, 8, 18, true), Metric::kStepTime, 0.2441, "LoRA r16, CP8 DP18"},
      {"mlperf-v5.0-lora-tyche_72 (3 systems)", kMLP, "tyche-gb200", 72, "llama2-70b", 0, 0, 0,
       lora(1, 8, 9, true), Metric::kStepTime, 0.2386, "LoRA r16, CP8 DP9"},
      {"mlperf-v5.0-lora-tyche_8 (2 systems)", kMLP, "tyche-gb200", 8, "llama2-70b", 0, 0, 0,
       lora(1, 1, 8, true), Metric::kStepTime, 1.4866, "LoRA r16, DP8"},
      // Megatron-Bridge pretraining (NeMo 25.11), tokens/s per GPU.
      {"S0160 DeepSeek-V3 256 B200", kBridge, "hgx-b200*32", 256, "deepseek-v3", 0, 0, 0, ds_b200,
       Metric::kTokensPerGpu, 2139, "TP1 PP16 EP8, MXFP8, GBS 2048, mla_up_proj recompute"},
      {"S0162 Qwen3-235B-A22B 64 B200", kBridge, "hgx-b200*8", 64, "qwen3-235b-a22b", 0, 0, 0,
       bridge(1, 8, 1, 2, 8, 1, 1024, 4096, DType::kFp8), Metric::kTokensPerGpu, 3269,
       "TP1 PP8 VPP2 EP8, MXFP8, GBS 1024"},
      {"S0164 Llama 3.1 405B 128 B200", kBridge, "hgx-b200*16", 128, "llama3.1-405b", 0, 0, 0,
       bridge(4, 8, 2, 8, 1, 1, 64, 8192, DType::kFp8), Metric::kTokensPerGpu, 661,
       "TP4 PP8 VPP8 CP2, FP8-CS, GBS 64"},
      {"S0166 Llama 3.1 405B 1024 H100", kBridge, "hgx-h100*128", 1024, "llama3.1-405b", 0, 0, 0,
       bridge(8, 8, 2, 8, 1, 1, 512, 8192, DType::kFp8), Metric::kTokensPerGpu, 292,
       "TP8 PP8 VPP8 CP2, FP8-CS, GBS 512"},
      {"S0168 Llama 3 70B 64 H100", kBridge, "hgx-h100*8", 64, "llama3.1-70b", 0, 0, 0,
       bridge(4, 8, 1, 5, 1, 1, 128, 8192, DType::kFp8), Metric::kTokensPerGpu, 1602,
       "TP4 PP8 VPP5, FP8-CS, GBS 128"},
      {"S0170 GPT-OSS 120B 64 H100", kBridge, "hgx-h100*8", 64, "gpt-oss-120b", 0, 0, 0, gpt_oss,
       Metric::kTokensPerGpu, 5630, "TP1 PP4 EP8, BF16, MBS1 GBS 512 (recipe), norm+act recompute"},
      // S0172: the source row lacks its global batch; assumed 2048, the Megatron-Bridge recipe's
      // QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V1 (TP2 PP8 VPP4 EP32, GBS 2048, alltoall
      // dispatcher with the 1F1B A2A overlap).
      {"S0172 Qwen3-235B-A22B 256 H100 FP8 (GBS 2048 assumed)", kBridge, "hgx-h100*32", 256,
       "qwen3-235b-a22b", 0, 0, 0, qwen_h100_fp8, Metric::kModelTflopsCausal, 233,
       "TP2 PP8 VPP4 EP32, FP8-CS, GBS 2048 (assumed)"},
      // Megatron-MoE-ModelZoo Qwen3-235B-A22B on 256 H100 (step times from the source's text).
      {"S0180 Qwen3-235B EP32 DeepEP", kZoo, "hgx-h100*32", 256, "qwen3-235b-a22b", 0, 0, 0,
       zoo(2, 8, 4, 32, 1, 2048, 4096, false), Metric::kStepTime, 19.7,
       "TP2 PP8 VPP4 EP32 DP16, DeepEP, dropless"},
      {"S0181 Qwen3-235B EP32 + A2A overlap", kZoo, "hgx-h100*32", 256, "qwen3-235b-a22b", 0, 0, 0,
       zoo(2, 8, 4, 32, 1, 2048, 4096, true), Metric::kStepTime, 17.6,
       "TP2 PP8 VPP4 EP32 DP16, 1F1B A2A overlap, dropless"},
      {"S0182 Qwen3-235B EP8 NCCL A2A", kZoo, "hgx-h100*32", 256, "qwen3-235b-a22b", 0, 0, 0,
       zoo(2, 32, 3, 8, 1, 2048, 4096, false, false), Metric::kStepTime, 24.2,
       "TP2 PP32 VPP3 EP8 DP4, NCCL A2A, dropless"},
      {"S0183 Qwen3-235B 131k context", kZoo, "hgx-h100*32", 256, "qwen3-235b-a22b", 0, 0, 0,
       long_ctx, Metric::kModelTflopsCausal, 389,
       "TP4 CP8 PP8 VPP4 EP8, seq 131072, norm+moe recompute, forced balance"},
      // The same run dropless (the S0183 row: "forced balance (dropless gives 357)"): checks the
      // measured routing skew at EP8.
      {"S0183 Qwen3-235B 131k context, dropless", kZoo, "hgx-h100*32", 256, "qwen3-235b-a22b", 0, 0,
       0, long_ctx_dropless, Metric::kModelTflopsCausal, 357,
       "TP4 CP8 PP8 VPP4 EP8, seq 131072, norm+moe recompute, dropless"},
      // DeepSeek-V3 on 2,048 H800 with its own layout.
      {"DeepSeek-V3 2048 H800", kDS, "deepseek-h800", 2048, "deepseek-v3", 0, 0, 0, ds,
       Metric::kTokensPerGpu, 1e12 / (180e3 * 3600) * 1.0,
       "TP1 PP16 (DualPipe) EP64 DP128, FP8 block, GBS 15360"},
  };
}

// CUDA graphs as each run had them (execution::cuda_graph): the MLPerf rows' other_flags in
// mlperf-training-configs.csv ("CUDA graphs=per-layer(TE)" and "=mcore": every decoder layer
// captured; "=full-iteration"; "=off"). The Megatron-Bridge recipes of S0162 / S0170 set none, the
// ModelZoo commands none, the older papers ran eager PyTorch (or, DeepSeek-V3, their own
// framework, run as eager Megatron here); the Bridge dense recipes are not given and run eager.
uint32_t recipe_cuda_graphs(std::string_view id) {
  namespace cg = execution::cuda_graph;
  for (std::string_view per_layer :
       {"gpt3-eos-dfw_n1452", "gpt3-b200_n8", "lora-b200_preview", "lora-eos_n128",
        "lora-oracle_512", "lora-eos_n8", "lora-tyche_512", "lora-tyche_144", "lora-tyche_72"}) {
    if (id.find(per_layer) != std::string_view::npos) return cg::kLayer;
  }
  for (std::string_view full : {"405b-carina", "405b-tyche"}) {
    if (id.find(full) != std::string_view::npos) return cg::kFullIteration;
  }
  return cg::kNone;
}

struct Prediction {
  double value = NAN;
  double memory_GB = 0;
  std::string why;
};

Prediction predict(const hardware::Catalog& cat, const Case& c) {
  Prediction out;
  // A catalog model, or a Megatron-style GPT of the case's shape.
  auto rig = [&]() -> base::Result<std::unique_ptr<execution::TrainingRig>> {
    if (c.model) return execution::make_training_rig(cat, c.cluster, c.model);
    auto gpt = models::gpt_model({.layers = c.layers,
                                  .hidden = c.hidden,
                                  .heads = c.heads,
                                  .vocab = 51200,
                                  .seq_len = 2048});
    if (!gpt) return base::fail(gpt.error());
    return execution::make_training_rig(cat, c.cluster, std::move(*gpt));
  }();
  if (!rig) {
    out.why = rig.error().to_string();
    return out;
  }
  const auto& model = (*rig)->model;
  auto l = c.layout;
  l.dp = static_cast<int>(c.gpus / (static_cast<int64_t>(l.tp) * l.pp * l.cp));
  auto s = (*rig)->setup(l);
  s.gpus = c.gpus;
  auto fabric = execution::serving_fabric(cat, (*rig)->topo.spec());
  if (fabric) s.moe_fabric = &*fabric;
  // Refitting fp8_overhead of catalog/calibration/training.yaml (docs/models/training.md): rerun
  // with other values.
  if (const char* f = std::getenv("CT_FP8_OVERHEAD")) s.fp8_overhead = std::atof(f);
  s.cuda_graphs = recipe_cuda_graphs(c.id);
  // What-if of the eager host time per decoder layer (docs/models/training.md, "Host issue").
  if (const char* h = std::getenv("CT_EAGER_HOST_PER_LAYER"))
    s.eager_host_per_layer = base::seconds(std::atof(h));
  // Refitting host_per_expert_gemm of catalog/calibration/training.yaml (docs/models/training.md):
  // rerun with other values.
  if (const char* h = std::getenv("CT_HOST_PER_EXPERT_GEMM"))
    s.host_per_expert_gemm = base::seconds(std::atof(h));
  auto r = execution::simulate_training_step(s);
  if (!r) {
    out.why = r.error().to_string();
    return out;
  }
  out.memory_GB = r->memory.total().base() / 1e9;
  const double g = static_cast<double>(c.gpus);
  switch (c.metric) {
    case Metric::kHardwareTflops:
      out.value = r->hardware_tflops_per_gpu;
      break;
    case Metric::kModelTflops:
      out.value = r->model_tflops_per_gpu;
      break;
    case Metric::kModelTflopsCausal:
      out.value = models::training_flops_per_token(model, l.seq_len, /*causal=*/true) *
                  static_cast<double>(l.tokens_per_step()) / r->step_time_s / g / 1e12;
      break;
    case Metric::kStepTime:
      out.value = r->step_time_s;
      break;
    case Metric::kTokensPerGpu:
      out.value = r->tokens_per_s / g;
      break;
  }
  return out;
}

std::string fmt_error(double e) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * e);
  return buf;
}

// Every case runs with its published layout (no refusal), within 20%; median under 8%. Cases whose
// model is not in the catalog yet are listed as pending and fail once the model exists and the
// case does not run.
TEST(TrainingValidation, PublishedRunsWithin20PercentAndMedianUnder8) {
  const auto& cat = workload::test_support::catalog();
  std::vector<double> errors;
  for (const auto& c : cases()) {
    if (c.model && !models::load_model(cat, c.model)) {
      std::printf("%-44s pending: model %s not in the catalog\n", c.id, c.model);
      continue;
    }
    const Prediction p = predict(cat, c);
    if (c.pending) {
      // A pending case still runs with its published layout: a refusal is a failure here too.
      EXPECT_FALSE(std::isnan(p.value)) << c.id << " (" << c.layout_text << ") refused: " << p.why;
      const double e = std::isnan(p.value) ? NAN : (p.value - c.measured) / c.measured;
      EXPECT_FALSE(!std::isnan(e) && std::fabs(e) < c.tolerance)
          << c.id << " now within " << c.tolerance << ": remove its pending mark";
      std::printf("%-44s pending (%s): %s\n", c.id, c.pending,
                  std::isnan(p.value) ? p.why.c_str() : fmt_error(e).c_str());
      if (!std::isnan(p.value)) {
        std::printf("| %s | %s | %.4g | %.4g | %+.1f%% (pending) | %.1f |\n", c.id, c.layout_text,
                    c.measured, p.value, 100 * e, p.memory_GB);
      }
      continue;
    }
    if (std::isnan(p.value)) {
      ADD_FAILURE() << c.id << " (" << c.layout_text << "): " << p.why;
      continue;
    }
    double err = (p.value - c.measured) / c.measured;
    errors.push_back(std::fabs(err));
    EXPECT_LT(std::fabs(err), c.tolerance)
        << c.id << " (" << c.source << "): predicted " << p.value << ", measured " << c.measured;
    std::printf("| %s | %s | %.4g | %.4g | %+.1f%% | %.1f |\n", c.id, c.layout_text, c.measured,
                p.value, 100 * err, p.memory_GB);
  }
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  EXPECT_LT(median, 0.08) << "median absolute error";
  std::printf("median absolute error %.1f%% over %zu cases\n", 100 * median, errors.size());
}

}  // namespace
}  // namespace clustertwin
