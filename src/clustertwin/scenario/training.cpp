// The training request, its field table and its resolution (docs/models/training.md for the
// models it resolves into; DESIGN.md §2 for the one-path-whatever-the-door rule).

#include "clustertwin/scenario/training.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "clustertwin/base/file.h"
#include "clustertwin/base/number.h"
#include "clustertwin/base/text.h"
#include "clustertwin/base/units_parse.h"
#include "clustertwin/calibration/kernel_fit.h"
#include "clustertwin/calibration/serving_fit.h"
#include "clustertwin/calibration/step_fit.h"
#include "clustertwin/collective/sweep.h"
#include "clustertwin/execution/collective_comm.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/power/training_power.h"
#include "clustertwin/report/power.h"
#include "clustertwin/report/training.h"
#include "clustertwin/scenario/power_settings.h"

namespace clustertwin::scenario {
namespace {

using R = TrainingRequest;
using F = Field<R>;

FieldTable<R> make_training_fields() {
  const base::IntRange gpus = positive(base::kMaxGpus);
  const base::IntRange dim = positive(base::kMaxModelDim);
  const FieldTable<R> rows = {
      F{.key = "layers",
        .flag = "layers",
        .name = "layers",
        .member = &R::layers,
        .help = "custom GPT: layers",
        .ints = positive(base::kMaxLayers)},
      F{.key = "hidden",
        .flag = "hidden",
        .name = "hidden size",
        .member = &R::hidden,
        .help = "custom GPT: hidden size",
        .ints = dim},
      F{.key = "heads",
        .flag = "heads",
        .name = "attention heads",
        .member = &R::heads,
        .help = "custom GPT: attention heads",
        .ints = dim},
      F{.key = "kv_heads",
        .flag = "kv-heads",
        .name = "KV heads",
        .member = &R::kv_heads,
        .help = "custom GPT: KV heads (default: heads)",
        .ints = dim},
      F{.key = "ffn",
        .flag = "ffn",
        .name = "MLP width",
        .member = &R::ffn,
        .help = "custom GPT: MLP width (default: 4 x hidden)",
        .ints = dim},
      F{.key = "vocab",
        .flag = "vocab",
        .name = "vocabulary",
        .member = &R::vocab,
        .help = "custom GPT: vocabulary",
        .ints = dim,
        .show_default = true},
      F{.key = "tp",
        .flag = "tp",
        .name = "tensor parallel",
        .member = &R::tp,
        .help = "tensor parallel",
        .ints = gpus,
        .show_default = true},
      F{.key = "pp",
        .flag = "pp",
        .name = "pipeline stages",
        .member = &R::pp,
        .help = "pipeline stages",
        .ints = gpus,
        .show_default = true},
      F{.key = "dp",
        .flag = "dp",
        .name = "data parallel",
        .member = &R::dp,
        .help = "data parallel (default: gpus / (tp*pp*cp))",
        .ints = gpus},
      F{.key = "cp",
        .flag = "cp",
        .name = "context parallel",
        .member = &R::cp,
        .help = "context parallel",
        .ints = gpus,
        .show_default = true},
      F{.key = "ep",
        .flag = "ep",
        .name = "expert parallel",
        .member = &R::ep,
        .help = "expert parallel (MoE parallel folding: etp*ep must divide tp*cp*dp)",
        .ints = gpus,
        .show_default = true},
      F{.key = "etp",
        .flag = "etp",
        .name = "expert tensor parallel",
        .member = &R::etp,
        .help = "expert tensor parallel: ranks splitting each expert's width",
        .ints = gpus,
        .show_default = true},
      F{.key = "vpp",
        .flag = "vpp",
        .name = "virtual pipeline stages",
        .member = &R::vpp,
        .help = "virtual pipeline stages per stage (interleaved 1F1B)",
        .ints = positive(base::kMaxLayers),
        .show_default = true},
      F{.key = "micro_batch",
        .flag = "micro-batch",
        .name = "micro-batch",
        .member = &R::micro_batch,
        .help = "sequences per micro-batch",
        .ints = positive(base::kMaxBatch),
        .show_default = true},
      F{.key = "global_batch",
        .flag = "global-batch",
        .name = "global batch",
        .member = &R::global_batch,
        .help = "sequences per step (default: micro_batch*dp*4*pp; search: gpus/8)",
        .ints = positive(base::kMaxBatch)},
      F{.key = "seq_len",
        .flag = "seq-len",
        .name = "sequence length",
        .member = &R::seq_len,
        .help = "sequence length (default: the model's, at most 8192)",
        .ints = positive(base::kMaxSequence)},
      F{.key = "precision",
        .flag = "precision",
        .name = "precision",
        .member = &R::precision,
        .help = "bf16, fp8 or fp4",
        .choices = {"bf16", "fp8", "fp4"},
        .show_default = true},
      F{.key = "recompute",
        .flag = "recompute",
        .name = "recomputation",
        .member = &R::recompute,
        .help = "none, selective or full",
        .choices = {"none", "selective", "full"},
        .show_default = true},
      F{.key = "zero",
        .flag = "zero",
        .name = "ZeRO stage",
        .member = &R::zero,
        .help = "0, 1 (distributed optimizer), 2 or 3 (FSDP)",
        .ints = {.min = 0, .max = 3},
        .show_default = true},
      F{.key = "sequence_parallel",
        .flag = "no-sequence-parallel",
        .name = "sequence parallel",
        .member = &R::no_sp,
        .help = "tensor parallelism without sequence parallelism",
        .inverted = true},
      F{.key = "tp_comm_overlap",
        .flag = "tp-overlap",
        .name = "TP overlap",
        .member = &R::tp_overlap,
        .help = "overlap TP collectives with GEMMs"},
      F{.key = "dp_overlap",
        .flag = "no-dp-overlap",
        .name = "DP overlap",
        .member = &R::no_dp_overlap,
        .help = "do not overlap the DP gradient reduction",
        .inverted = true},
      F{.key = "ep_overlap",
        .flag = "ep-overlap",
        .name = "EP overlap",
        .member = &R::ep_overlap,
        .help = "overlap EP all-to-all with compute (DualPipe)"},
      F{.key = "moe_dispatch",
        .flag = "moe-dispatch",
        .name = "MoE dispatch",
        .member = &R::moe_dispatch,
        .help = "MoE token dispatch kernel of the collective layer: alltoall (nccl; a copy per "
                "expert), deepep (dedup, deepep-normal; a copy per domain, forwarded over "
                "NVLink) or nvlink-onesided (stores inside one NVL72 domain); auto: "
                "nvlink-onesided inside an NVL72 domain, deepep across domains for "
                "group-limited routing, else alltoall",
        .choices = {"auto", "alltoall", "nccl", "deepep", "dedup", "deepep-normal",
                    "nvlink-onesided"},
        .show_default = true},
      F{.key = "recompute_modules",
        .flag = "recompute-modules",
        .name = "recomputed modules",
        .member = &R::recompute_modules,
        .help = "Megatron selective recomputation by module, comma-separated: core_attn, mlp, "
                "moe_act, layernorm, mla_up_proj, moe, shared_experts (implies selective)"},
      F{.key = "cuda_graphs",
        .flag = "cuda-graphs",
        .name = "CUDA graphs",
        .member = &R::cuda_graphs,
        .help = "what the recipe captures in CUDA graphs (Megatron-Core --cuda-graph-scope, "
                "comma-separated): attn, moe_router, moe_preprocess, full (whole decoder "
                "layers), full_iteration; none: eager PyTorch, whose host issue the GPU waits "
                "for where it is slower than the kernels (docs/models/training.md)",
        .show_default = true},
      F{.key = "schedule",
        .flag = "schedule",
        .name = "pipeline schedule",
        .member = &R::schedule,
        .help = "pipeline schedule: 1f1b (interleaved when {vpp} > 1) or dualpipe (DeepSeek-V3)",
        .choices = {"1f1b", "interleaved", "dualpipe"},
        .show_default = true},
      F{.key = "routing",
        .flag = "routing",
        .name = "MoE routing",
        .member = &R::routing,
        .help = "MoE routing: balanced (forced, as benchmarks run) or measured (skew of the "
                "measured MoE kernel tables on the busiest EP rank)",
        .choices = {"balanced", "measured"},
        .show_default = true},
      F{.key = "capacity_factor",
        .flag = "capacity-factor",
        .name = "capacity factor",
        .member = &R::capacity_factor,
        .help = "MoE expert capacity as a multiple of the uniform share (0 = dropless)",
        .reals = {.min = 0, .max = 64}},
      F{.key = "offload",
        .flag = "offload",
        .name = "activation offloading",
        .member = &R::offload,
        .help = "offload stored activations to host memory (Grace LPDDR5X, host DRAM)"},
      F{.key = "lora_rank",
        .flag = "lora-rank",
        .name = "LoRA rank",
        .member = &R::lora_rank,
        .help = "LoRA fine-tuning with adapters of this rank (frozen base weights)",
        .ints = {.min = 1, .max = 4096}},
      F{.key = "fp8_attention",
        .flag = "fp8-attention",
        .name = "FP8 attention",
        .member = &R::fp8_attention,
        .help = "FP8 dot-product attention (Q, K, V, O in FP8; Transformer Engine)"},
      F{.key = "fp8_act_store",
        .flag = "fp8-act-store",
        .name = "FP8 activation store",
        .member = &R::fp8_act_store,
        .help = "keep the MLP activation's input in FP8 for the backward pass (Megatron "
                "--activation-func-fp8-input-store)"},
      F{.key = "bf16_moments",
        .flag = "bf16-moments",
        .name = "bf16 moments",
        .member = &R::bf16_moments,
        .help = "Adam moments in bf16 (DeepSeek-V3; Megatron --exp-avg-dtype bf16)"},
      F{.key = "attention",
        .flag = "attention",
        .name = "attention",
        .member = &R::attention,
        .help = "flash (fused) or unfused (2021-22 Megatron-LM)",
        .choices = {"flash", "unfused"},
        .show_default = true},
      F{.key = "comm",
        .flag = "comm",
        .name = "communication model",
        .member = &R::comm,
        .help = "communication model: analytical (closed forms, fastest), collective (NCCL "
                "algorithms, calibrated) or flow (collective on the flow-level network: "
                "contention between concurrent groups)",
        .choices = {"analytical", "collective", "flow"},
        .show_default = true},
      F{.key = "calibration",
        .flag = "calibration",
        .name = "calibration profile",
        .member = &R::calibration,
        .help = "a calibration profile (from `clustertwin calibrate --out`) or the name of a "
                "built-in one (`clustertwin calibrate --list`), laid over the catalog's "
                "collective lines ({comm} collective or flow); its training: mapping (a "
                "compute-time scale and host time), compute: mapping (kernel tables, laid "
                "over the catalog's) and its serving: mapping's eager_host_per_layer_s (the "
                "eager issue per decoder layer) wherever a training job runs"},
      F{.key = "framework_overhead",
        .flag = "framework-overhead",
        .name = "framework overhead",
        .member = &R::overhead,
        .help = "fraction of compute lost to launch gaps and host overhead",
        .reals = {.min = 0, .max = 10}},
      F{.key = "tokens",
        .flag = "tokens",
        .name = "token budget",
        .member = &R::tokens,
        .help = "token budget (e.g. 15T): time to train; with power, the energy, cost and carbon "
                "of the run"},
  };
  return join<R>(
      {cluster_rows<R>(
           "GPUs of the job (default: the whole cluster)",
           "catalog model, YAML file, HF config.json, or 'gpt' with {layers}/{hidden}/{heads}"),
       rows});
}

FieldTable<R> make_power_fields() {
  return power_view_rows<R>("add the power view (GPU, rack, cluster, facility, energy per token)",
                            "with {power}: a GPU power limit (\"1000W\"; default: the GPU's TGP)");
}

base::Result<models::ModelSpec> resolve_model(const hardware::Catalog& cat, const R& o) {
  if (o.model == "gpt") {
    if (o.layers <= 0 || o.hidden <= 0 || o.heads <= 0) {
      return base::fail("{model} gpt needs {layers}, {hidden} and {heads} (> 0)");
    }
    models::GptParams p{.layers = o.layers,
                        .hidden = o.hidden,
                        .heads = o.heads,
                        .kv_heads = o.kv_heads,
                        .ffn = o.ffn,
                        .vocab = o.vocab,
                        .seq_len = o.seq_len > 0 ? o.seq_len : 2048};
    return models::gpt_model(p);
  }
  return models::load_model(cat, o.model);
}

/// The layout's settings that are not its parallel sizes: precision, recomputation, overlaps,
/// MoE dispatch and routing, attention, memory savers. The same for a fixed layout and a search.
base::Status apply_settings(const R& o, workload::TrainingLayout& l) {
  auto dtype = compute::parse_dtype(o.precision);
  if (!dtype)
    return base::fail("{precision}: expected bf16, fp8 or fp4, got '" + o.precision + "'");
  l.dtype = *dtype;
  auto rc = models::parse_recompute(o.recompute);
  if (!rc) {
    return base::fail("{recompute}: expected none, selective or full, got '" + o.recompute + "'");
  }
  l.recompute = *rc;
  l.sequence_parallel = !o.no_sp;
  l.tp_comm_overlap = o.tp_overlap;
  l.dp_overlap = !o.no_dp_overlap;
  l.ep_overlap = o.ep_overlap;
  auto dispatch = workload::parse_moe_dispatch(o.moe_dispatch);
  if (!dispatch) {
    return base::fail("{moe_dispatch}: expected auto, alltoall, deepep or nvlink-onesided, got '" +
                      o.moe_dispatch + "'");
  }
  l.moe_dispatch = *dispatch;
  l.flash_attention = o.attention == "flash";
  auto modules = workload::parse_recompute_modules(o.recompute_modules);
  if (!modules) return base::fail("{recompute_modules}: " + modules.error().message);
  l.recompute_modules = *modules;
  if (l.recompute_modules != 0) {
    if (l.recompute == models::Recompute::kFull) {
      return base::fail("{recompute_modules} " + o.recompute_modules +
                        " with {recompute} full: full recomputation already re-runs every module");
    }
    l.recompute = models::Recompute::kSelective;
  }
  auto schedule = workload::parse_pipeline_schedule(o.schedule);
  if (!schedule) {
    return base::fail("{schedule}: expected 1f1b, interleaved or dualpipe, got '" + o.schedule +
                      "'");
  }
  l.schedule = *schedule;
  auto routing = workload::parse_moe_routing(o.routing);
  if (!routing) {
    return base::fail("{routing}: expected balanced or measured, got '" + o.routing + "'");
  }
  l.routing = *routing;
  l.capacity_factor = o.capacity_factor;
  l.offload_activations = o.offload;
  l.lora_rank = o.lora_rank;
  l.moment_bytes = o.bf16_moments ? 2 : 4;
  l.fp8_attention = o.fp8_attention;
  l.fp8_activation_store = o.fp8_act_store;
  return {};
}

/// The cluster, the model, the job's GPUs, the token budget and the compute model: what a fixed
/// layout and a search both start from.
base::Result<std::unique_ptr<TrainingJob>> start_job(const Environment& env, const R& o) {
  if (auto st = check_training(o); !st) return base::fail(st.error());
  auto job = std::make_unique<TrainingJob>();
  auto lc = env.load_cluster(o.cluster);
  if (!lc) return base::fail(lc.error());
  job->cluster = std::make_unique<LoadedCluster>(std::move(*lc));
  auto model = resolve_model(job->cluster->catalog, o);
  if (!model) return base::fail(model.error());
  job->model = std::move(*model);
  const auto& topo = job->cluster->topo;
  job->gpus = o.gpus > 0 ? o.gpus : topo.gpus();
  if (job->gpus > topo.gpus()) {
    return base::fail("{gpus} " + std::to_string(job->gpus) + " is more than cluster '" +
                      job->cluster->spec.name + "' has (" + std::to_string(topo.gpus()) + ")");
  }
  auto graphs = execution::parse_cuda_graphs(o.cuda_graphs);
  if (!graphs) return base::fail("{cuda_graphs}: " + graphs.error().message);
  job->cuda_graphs = *graphs;
  auto tc = execution::training_calibration(job->cluster->catalog);
  if (!tc) return base::fail(tc.error());
  job->training_calibration = std::move(*tc);
  if (!o.tokens.empty()) {
    // At least one token: 1e-300 once printed "0.0 h for 0.000000000000 tokens".
    auto t = base::parse_scaled_count(o.tokens, {.min = 1, .max = 1e18});
    if (!t) return base::fail("{tokens}: " + t.error().message);
    job->token_budget = *t;
  }
  auto cm = compute::ComputeModel::for_gpu(job->cluster->gpu(), job->cluster->catalog);
  if (!cm) return base::fail(cm.error());
  // A profile's kernel tables (its compute: mapping), laid over the catalog's table by table.
  if (!o.calibration.empty()) {
    // Read once: the compute, training, serving and collective readers below all take it.
    auto source =
        collective::read_profile_source(job->cluster->catalog, o.calibration, o.calibration_where);
    if (!source) return base::fail(source.error());
    job->profile = std::move(*source);
    auto pm =
        calibration::compute_calibration_of(job->profile, job->cluster->gpu(), o.calibration_where);
    if (!pm) return base::fail(pm.error());
    if (*pm) {
      cm = cm->with_profile(**pm);
      job->compute_note = calibration::compute_calibration_note(**pm, o.calibration);
    }
  }
  job->compute.emplace(std::move(*cm));
  return job;
}

/// The setup of a layout on the job's GPU (memory, peak, host memory), before communication.
void fill_setup(TrainingJob& job, const workload::TrainingLayout& l) {
  const auto& gpu = job.cluster->gpu();
  const auto& sys = job.cluster->system();
  const auto peak_prec = compute::peak_precision(job.compute->effective(l.dtype));
  job.layout = l;
  job.setup = execution::TrainingSetup{.model = &job.model,
                                       .layout = l,
                                       .compute = &*job.compute,
                                       .comm = job.comm.get(),
                                       .memory_capacity = gpu.hbm_usable,
                                       .peak = gpu.peak_for(peak_prec)->dense};
  job.setup.gpus = job.gpus;
  job.setup.cuda_graphs = job.cuda_graphs;
  job.training_calibration.apply(job.setup);
  if (auto cpu = job.cluster->catalog.cpu(sys.cpu); cpu && sys.gpus_per_node > 0) {
    // Host memory per GPU (the node's CPUs' memory shared by its GPUs) and the CPU<->GPU link.
    job.setup.host_memory =
        base::bytes((*cpu)->memory_capacity.base() * sys.cpus_per_node / sys.gpus_per_node);
    job.setup.host_bandwidth = (*cpu)->c2c_bandwidth;
  }
}

/// A profile's eager issue time per decoder layer: its `serving:` mapping's
/// `eager_host_per_layer_s`, the software stack's figure (calibration/serving_fit.h). The
/// training step's eager issue takes serving.yaml's `eager_host_per_layer` (the same PyTorch
/// issuing kernels layer by layer), so it takes the profile's in its place. A built-in profile's
/// name carries serving.yaml's own figure, so only a file can change it.
base::Status read_eager_issue(TrainingJob& job, const R& o) {
  // A built-in name, or a file the profile readers refuse by name.
  if (!job.profile.text) return {};
  auto sc = calibration::read_serving_calibration({o.calibration, *job.profile.text});
  if (!sc) return base::fail(sc.error());
  if (!*sc || !(*sc)->eager_host_per_layer_s) return {};
  const std::string& gpu = job.cluster->system().gpu;
  if ((*sc)->gpu != gpu) {
    return base::fail(o.calibration_where + ": " + base::verbatim(o.calibration) +
                      " fitted the serving model on " + (*sc)->gpu + "; this cluster's GPU is " +
                      gpu);
  }
  auto& eager = job.training_calibration.eager_host_per_layer;
  job.stack_note = fmt::format(
      "eager issue per decoder layer {:.4g} ms (catalog {:.4g} ms) from the serving: mapping of "
      "calibration profile {}",
      1e3 * *(*sc)->eager_host_per_layer_s, 1e3 * eager.base(), o.calibration);
  eager = base::seconds(*(*sc)->eager_host_per_layer_s);
  return {};
}

/// A profile's compute-time scale (a `training:` mapping, calibration/step_fit.h), if any.
base::Status read_compute_scale(TrainingJob& job, const R& o) {
  if (o.calibration.empty()) return {};
  auto tc = calibration::training_calibration_of(job.profile, job.cluster->system().gpu,
                                                 o.calibration_where);
  if (!tc) return base::fail(tc.error());
  if (*tc) {
    job.compute_scale = (*tc)->compute_scale;
    job.host_time = base::seconds((*tc)->host_time_s);
    job.calibration_path = (*tc)->path;
    // The step model's constants the profile's fit constrained replace training.yaml's, through
    // the same TrainingCalibration::apply every setup runs (fill_setup).
    auto& cal = job.training_calibration;
    if ((*tc)->fp8_overhead) {
      cal.fp8_overhead = *(*tc)->fp8_overhead;
      job.constants_note = fmt::format("FP8 GEMM overhead {:.4g}", cal.fp8_overhead);
    }
    if ((*tc)->host_per_expert_gemm_s) {
      cal.host_per_expert_gemm = base::seconds(*(*tc)->host_per_expert_gemm_s);
      job.constants_note +=
          (job.constants_note.empty() ? "" : " and ") +
          fmt::format("host time per expert GEMM {:.4g} us", cal.host_per_expert_gemm.base() * 1e6);
    }
  }
  return read_eager_issue(job, o);
}

/// The framework overhead: the request's, else the profile's compute-time scale - 1; and the
/// profile's per-iteration host time (fitted with the scale, kept when the overhead is given).
void apply_overhead(TrainingJob& job, const R& o) {
  if (o.overhead >= 0) {
    job.setup.framework_overhead = o.overhead;
  } else if (job.compute_scale) {
    job.setup.framework_overhead = *job.compute_scale - 1.0;
    job.calibration_note = "compute-time scale " + fmt::format("{:.4g}", *job.compute_scale);
  }
  job.setup.host_time = job.host_time;
  if (job.host_time.base() > 0) {
    job.calibration_note += (job.calibration_note.empty() ? "" : " and ") +
                            fmt::format("per-iteration host time {:.4g} s", job.host_time.base());
  }
  if (!job.constants_note.empty()) {
    job.calibration_note += (job.calibration_note.empty() ? "" : " and ") + job.constants_note;
  }
  if (!job.calibration_note.empty()) {
    job.calibration_note +=
        " fitted to measured steps (calibration profile " + job.calibration_path + ")";
  }
}

}  // namespace

const FieldTable<TrainingRequest>& training_fields() {
  static const FieldTable<TrainingRequest> kTable = make_training_fields();
  return kTable;
}

const FieldTable<TrainingRequest>& training_power_fields() {
  static const FieldTable<TrainingRequest> kTable = make_power_fields();
  return kTable;
}

const std::vector<FieldWord>& training_words() {
  static const std::vector<FieldWord> kWords =
      words_of<R>({&training_fields(), &training_power_fields()});
  return kWords;
}

base::Status check_training(const TrainingRequest& r) {
  return check_fields<R>(r, {&training_fields(), &training_power_fields()});
}

base::Result<std::unique_ptr<TrainingJob>> resolve_training(const Environment& env,
                                                            const TrainingRequest& o) {
  auto started = start_job(env, o);
  if (!started) return base::fail(started.error());
  auto job = std::move(*started);
  const auto& cat = job->cluster->catalog;
  const auto& topo = job->cluster->topo;
  const auto& model = job->model;
  const int64_t gpus = job->gpus;

  workload::TrainingLayout l;
  l.tp = o.tp;
  l.pp = o.pp;
  l.cp = o.cp;
  l.ep = o.ep;
  l.etp = o.etp;
  l.vpp = o.vpp;
  l.zero = o.zero;
  l.micro_batch = o.micro_batch;
  l.seq_len = o.seq_len > 0
                  ? o.seq_len
                  : std::min<int64_t>(model.max_seq_len > 0 ? model.max_seq_len : 4096, 8192);
  auto mp_r = workload::model_parallel_size(l);
  if (!mp_r) return base::fail(mp_r.error());
  const int64_t mp = *mp_r;
  if (o.dp > 0) {
    l.dp = o.dp;
  } else {
    if (mp <= 0 || gpus % mp != 0) {
      return base::fail("{gpus} " + std::to_string(gpus) + " is not a multiple of tp*pp*cp = " +
                        std::to_string(mp) + " (give {dp} or change the layout)");
    }
    l.dp = static_cast<int>(gpus / mp);
  }
  auto gb = o.global_batch > 0 ? base::Result<int64_t>(o.global_batch)
                               : workload::default_global_batch(l);
  if (!gb) return base::fail(gb.error());
  l.global_batch = *gb;
  if (auto st = apply_settings(o, l); !st) return base::fail(st.error());
  if (auto st = read_compute_scale(*job, o); !st) return base::fail(st.error());
  const auto& sys = job->cluster->system();
  if (o.comm == "analytical") {
    // The closed forms read no collective lines: a profile with nothing else given with them
    // would change nothing, so it is refused rather than ignored.
    if (!o.calibration.empty() && !job->compute_scale && job->compute_note.empty() &&
        job->stack_note.empty()) {
      return base::fail(o.calibration_where +
                        ": a calibration profile sets the collective model's lines, which the "
                        "analytical communication model does not use; use {comm} collective or "
                        "flow with it");
    }
    job->comm = std::make_unique<execution::AnalyticalComm>(topo);
  } else {
    auto calib = o.calibration.empty() ? collective::Calibration::load(cat)
                                       : collective::calibration_with_profile(
                                             cat, sys.gpu, job->profile, o.calibration_where);
    if (!calib) return base::fail(calib.error());
    collective::ModelOptions mo;
    mo.network = o.comm == "flow" ? collective::NetworkModelKind::kFlow
                                  : collective::NetworkModelKind::kAnalytical;
    job->comm = std::make_unique<execution::CollectiveComm>(cat, topo, std::move(*calib), mo);
  }
  if (model.moe && l.ep > 1) {
    // The dispatch kernel `auto` stands for, and the kernels' fabric (collective/moe_a2a.h).
    l.moe_dispatch = workload::resolve_moe_dispatch(l.moe_dispatch, *model.moe, l.ep, l.etp,
                                                    job->comm->domain_size());
    auto fabric = execution::serving_fabric(cat, job->cluster->spec);
    if (!fabric) return base::fail(fabric.error());
    job->moe_fabric = std::move(*fabric);
  }
  fill_setup(*job, l);
  if (job->moe_fabric) job->setup.moe_fabric = &*job->moe_fabric;
  if (o.offload && job->setup.host_memory.base() <= 0) {
    return base::fail("{offload}: system '" + sys.name + "' has no host memory in the catalog");
  }
  apply_overhead(*job, o);
  return job;
}

base::Result<std::unique_ptr<TrainingJob>> resolve_training_search(const Environment& env,
                                                                   const TrainingRequest& o) {
  // The parallel layout is what the search chooses: a request that fixes part of it would be
  // silently ignored, so it is refused.
  const R d;
  const std::pair<const char*, bool> fixed[] = {{"tp", o.tp != d.tp},
                                                {"pp", o.pp != d.pp},
                                                {"dp", o.dp != d.dp},
                                                {"cp", o.cp != d.cp},
                                                {"ep", o.ep != d.ep},
                                                {"etp", o.etp != d.etp},
                                                {"vpp", o.vpp != d.vpp},
                                                {"micro_batch", o.micro_batch != d.micro_batch},
                                                {"recompute", o.recompute != d.recompute},
                                                {"zero", o.zero != d.zero}};
  for (const auto& [key, given] : fixed) {
    if (given) {
      return base::fail(std::string("{") + key +
                        "}: the layout search chooses the parallel layout (tp, pp, dp, cp, ep, "
                        "vpp, micro-batch, recomputation); fix a layout with train instead");
    }
  }
  if (o.comm != d.comm) {
    return base::fail("{comm}: the layout search prices communication with closed forms");
  }
  auto started = start_job(env, o);
  if (!started) return base::fail(started.error());
  auto job = std::move(*started);
  workload::TrainingLayout l;
  const auto& model = job->model;
  l.seq_len = o.seq_len > 0
                  ? o.seq_len
                  : std::min<int64_t>(model.max_seq_len > 0 ? model.max_seq_len : 4096, 8192);
  // A sequence per 8 GPUs (and at least one: 7 GPUs once gave a global batch of 0).
  l.global_batch = o.global_batch > 0 ? o.global_batch : std::max<int64_t>(1, job->gpus / 8);
  if (auto st = apply_settings(o, l); !st) return base::fail(st.error());
  if (auto st = read_compute_scale(*job, o); !st) return base::fail(st.error());
  if (!o.calibration.empty() && !job->compute_scale && job->compute_note.empty() &&
      job->stack_note.empty()) {
    // Search prices communication with closed forms (AnalyticalComm): of a profile it runs the
    // training model's compute-time scale and kernel tables, and refuses one that holds only
    // collective lines.
    return base::fail(o.calibration_where + ": " + base::verbatim(o.calibration) +
                      " has no training: or compute: mapping (the compute-time scale and kernel "
                      "efficiencies `calibrate` fits to step times and kernel tables); search "
                      "prices communication with closed forms, so collective lines alone would "
                      "change nothing");
  }
  job->comm = std::make_unique<execution::AnalyticalComm>(job->cluster->topo);
  fill_setup(*job, l);
  apply_overhead(*job, o);
  return job;
}

base::Result<TrainingRun> run_training(const Environment& env, const TrainingRequest& o,
                                       const std::string& trace_path) {
  if (!o.power && !o.power_cap.empty()) return base::fail("{power_cap} goes with {power}");
  auto job_r = resolve_training(env, o);
  if (!job_r) return base::fail(job_r.error());
  const TrainingJob& job = **job_r;
  const auto& l = job.layout;
  const auto& spec = job.cluster->spec;
  const auto& gpu = job.cluster->gpu();
  const int64_t gpus = job.gpus;
  auto r = execution::simulate_training_step(job.setup);
  if (!r) return base::fail(r.error());
  if (!job.compute_note.empty()) r->notes.push_back(job.compute_note);
  if (!job.calibration_note.empty()) r->notes.push_back(job.calibration_note);
  if (!job.stack_note.empty()) r->notes.push_back(job.stack_note);
  report::TrainingContext c{.cluster = spec.name,
                            .model = job.model.name,
                            .gpu = gpu.name,
                            .gpus = gpus,
                            .token_budget = job.token_budget};
  TrainingRun out;
  out.json = report::training_json(*r, l, c);
  out.text = report::training_text(*r, l, c);
  out.summary = fmt::format(
      "training  {} on {} GPUs ({}): step {:.2f} s, {:.0f} tokens/s per GPU, "
      "{:.0f} TFLOP/s per GPU, MFU {:.0f}%",
      job.model.name, gpus, out.json["layout"]["summary"].get<std::string>(), r->step_time_s,
      r->tokens_per_s / static_cast<double>(gpus), r->model_tflops_per_gpu, 100 * r->mfu);
  if (o.power) {
    auto pcat = power::PowerCatalog::load(job.cluster->catalog);
    if (!pcat) return base::fail(pcat.error());
    power::TrainingPowerOptions opt;
    opt.token_budget = job.token_budget;
    auto g = gpu_settings(o.power_cap, "");
    if (!g) return base::fail(g.error());
    opt.gpu = *g;
    const auto sp = pcat->system(job.cluster->spec.system);
    if (sp && (*sp)->smoothing.supported) opt.smoothing = power::SmoothingRequest{};
    power::TrainingPowerInput in{.catalog = &job.cluster->catalog,
                                 .power = &*pcat,
                                 .cluster = &job.cluster->spec,
                                 .topology = &job.cluster->topo,
                                 .setup = job.setup,
                                 .baseline = &*r};
    auto pr = power::analyze_training_power(in, opt);
    if (!pr) return base::fail(pr.error());
    out.power = report::power_json(*pr);
    out.power_summary = fmt::format(
        "power     GPU {:.0f} W avg ({:.0f} W peak); rack {:.0f} kW avg, {:.0f} kW peak; cluster "
        "{:.2f} MW IT, {:.2f} MW facility (PUE {:.2f}); {:.2f} J per token",
        pr->gpu_avg_W, pr->gpu_peak_W, pr->rack_avg_W / 1e3, pr->rack_peak_W / 1e3,
        pr->cluster_avg_W / 1e6, pr->facility.facility_W / 1e6, pr->facility.pue,
        pr->energy_per_token_J);
    out.text += "\n" + report::power_text(*pr);
  }
  if (!trace_path.empty()) {
    if (auto st = report::training_trace(*r, l).write(trace_path); !st) {
      return base::fail(st.error());
    }
  }
  return out;
}

}  // namespace clustertwin::scenario
