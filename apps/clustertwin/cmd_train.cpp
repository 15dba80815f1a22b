// `clustertwin train`: one training step of a model on a cluster under a parallel layout.
// Example: clustertwin train --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b
//          --tp 8 --pp 16 --global-batch 2048 --seq-len 8192

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "clustertwin/base/number.h"
#include "clustertwin/base/units_parse.h"
#include "clustertwin/calibration/step_fit.h"
#include "clustertwin/collective/sweep.h"
#include "clustertwin/execution/collective_comm.h"
#include "clustertwin/execution/training.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/power/training_power.h"
#include "clustertwin/report/power.h"
#include "clustertwin/report/training.h"
#include "commands.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

base::Result<models::ModelSpec> resolve_model(const hardware::Catalog& cat, const TrainOptions& o) {
  if (o.model == "gpt") {
    if (o.layers <= 0 || o.hidden <= 0 || o.heads <= 0) {
      return base::fail("--model gpt needs --layers, --hidden and --heads (> 0)");
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

}  // namespace

base::Result<std::unique_ptr<TrainingJob>> prepare_training(const Context& ctx,
                                                            const TrainOptions& o) {
  auto job = std::make_unique<TrainingJob>();
  auto lc = ctx.load_cluster(o.cluster);
  if (!lc) return base::fail(lc.error());
  job->cluster = std::make_unique<LoadedCluster>(std::move(*lc));
  const auto* cat = &job->cluster->catalog;
  const auto* spec = &job->cluster->spec;
  const auto* topo = &job->cluster->topo;
  auto model_r = resolve_model(*cat, o);
  if (!model_r) return base::fail(model_r.error());
  job->model = std::move(*model_r);
  const auto* model = &job->model;
  const auto& sys = **cat->system(spec->system);
  const auto& gpu = **cat->gpu(sys.gpu);

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
                  : std::min<int64_t>(model->max_seq_len > 0 ? model->max_seq_len : 4096, 8192);
  const int64_t gpus = o.gpus > 0 ? o.gpus : topo->gpus();
  if (gpus > topo->gpus()) {
    return base::fail("--gpus " + std::to_string(gpus) + " is more than cluster '" + spec->name +
                      "' has (" + std::to_string(topo->gpus()) + ")");
  }
  auto mp_r = workload::model_parallel_size(l);
  if (!mp_r) return base::fail(mp_r.error());
  const int64_t mp = *mp_r;
  if (o.dp > 0) {
    l.dp = o.dp;
  } else {
    if (mp <= 0 || gpus % mp != 0) {
      return base::fail("--gpus " + std::to_string(gpus) + " is not a multiple of tp*pp*cp = " +
                        std::to_string(mp) + " (give --dp or change the layout)");
    }
    l.dp = static_cast<int>(gpus / mp);
  }
  auto gb = o.global_batch > 0 ? base::Result<int64_t>(o.global_batch)
                               : workload::default_global_batch(l);
  if (!gb) return base::fail(gb.error());
  l.global_batch = *gb;
  auto dtype = compute::parse_dtype(o.precision);
  if (!dtype)
    return base::fail("--precision: expected bf16, fp8 or fp4, got '" + o.precision + "'");
  l.dtype = *dtype;
  auto rc = models::parse_recompute(o.recompute);
  if (!rc)
    return base::fail("--recompute: expected none, selective or full, got '" + o.recompute + "'");
  l.recompute = *rc;
  l.sequence_parallel = !o.no_sp;
  l.tp_comm_overlap = o.tp_overlap;
  l.dp_overlap = !o.no_dp_overlap;
  l.ep_overlap = o.ep_overlap;
  auto dispatch = workload::parse_moe_dispatch(o.moe_dispatch);
  if (!dispatch) {
    return base::fail("--moe-dispatch: expected auto, alltoall, deepep or nvlink-onesided, got '" +
                      o.moe_dispatch + "'");
  }
  l.moe_dispatch = *dispatch;
  l.flash_attention = o.attention == "flash";
  auto modules = workload::parse_recompute_modules(o.recompute_modules);
  if (!modules) return base::fail("--recompute-modules: " + modules.error().message);
  l.recompute_modules = *modules;
  if (l.recompute_modules != 0) {
    if (l.recompute == models::Recompute::kFull) {
      return base::fail("--recompute-modules " + o.recompute_modules +
                        " with --recompute full: full recomputation already re-runs every module");
    }
    l.recompute = models::Recompute::kSelective;
  }
  auto schedule = workload::parse_pipeline_schedule(o.schedule);
  if (!schedule) {
    return base::fail("--schedule: expected 1f1b, interleaved or dualpipe, got '" + o.schedule +
                      "'");
  }
  l.schedule = *schedule;
  auto routing = workload::parse_moe_routing(o.routing);
  if (!routing) {
    return base::fail("--routing: expected balanced or measured, got '" + o.routing + "'");
  }
  l.routing = *routing;
  l.capacity_factor = o.capacity_factor;
  l.offload_activations = o.offload;
  l.lora_rank = o.lora_rank;
  l.moment_bytes = o.bf16_moments ? 2 : 4;
  l.fp8_attention = o.fp8_attention;
  l.fp8_activation_store = o.fp8_act_store;
  double budget = 0;
  if (!o.tokens.empty()) {
    auto t = base::parse_scaled_count(o.tokens, {.min = 0, .max = 1e18, .min_exclusive = true});
    if (!t) return base::fail("--tokens: " + t.error().message);
    budget = *t;
  }
  auto cm_r = compute::ComputeModel::for_gpu(gpu, *cat);
  if (!cm_r) return base::fail(cm_r.error());
  job->compute.emplace(std::move(*cm_r));
  const auto* cm = &*job->compute;
  // A profile file may also carry the training model's compute-time scale (`calibrate` on step
  // times, calibration/step_fit.h); a built-in name is a catalog collective file and has none.
  std::optional<calibration::TrainingCalibration> fitted;
  if (!o.calibration.empty()) {
    auto tc = calibration::training_calibration_of(o.calibration, sys.gpu, o.calibration_where);
    if (!tc) return base::fail(tc.error());
    fitted = *tc;
  }
  auto& comm = job->comm;
  if (o.comm == "analytical") {
    // The closed forms read no collective lines: a profile with nothing else given with them
    // would change nothing, so it is refused rather than ignored.
    if (!o.calibration.empty() && !fitted) {
      return base::fail(o.calibration_where +
                        ": a calibration profile sets the collective model's lines, which the "
                        "analytical communication model does not use; use comm collective or "
                        "flow with it");
    }
    comm = std::make_unique<execution::AnalyticalComm>(*topo);
  } else {
    auto calib = o.calibration.empty() ? collective::Calibration::load(*cat)
                                       : collective::calibration_with_profile(
                                             *cat, sys.gpu, o.calibration, o.calibration_where);
    if (!calib) return base::fail(calib.error());
    collective::ModelOptions mo;
    mo.network = o.comm == "flow" ? collective::NetworkModelKind::kFlow
                                  : collective::NetworkModelKind::kAnalytical;
    comm = std::make_unique<execution::CollectiveComm>(*cat, *topo, std::move(*calib), mo);
  }
  if (job->model.moe && l.ep > 1) {
    l.moe_dispatch = workload::resolve_moe_dispatch(l.moe_dispatch, *job->model.moe, l.ep, l.etp,
                                                    comm->domain_size());
    auto fabric = execution::serving_fabric(*cat, job->cluster->spec);
    if (!fabric) return base::fail(fabric.error());
    job->moe_fabric = std::move(*fabric);
  }
  const auto peak_prec = compute::peak_precision(cm->effective(l.dtype));
  job->layout = l;
  job->gpus = gpus;
  job->token_budget = budget;
  auto& setup = job->setup;
  setup = execution::TrainingSetup{.model = model,
                                   .layout = l,
                                   .compute = &*cm,
                                   .comm = comm.get(),
                                   .memory_capacity = gpu.hbm_usable,
                                   .peak = gpu.peak_for(peak_prec)->dense};
  setup.gpus = gpus;
  if (job->moe_fabric) setup.moe_fabric = &*job->moe_fabric;
  if (auto cpu = cat->cpu(sys.cpu); cpu && sys.gpus_per_node > 0) {
    // Host memory per GPU (the node's CPUs' memory shared by its GPUs) and the CPU<->GPU link.
    setup.host_memory =
        base::bytes((*cpu)->memory_capacity.base() * sys.cpus_per_node / sys.gpus_per_node);
    setup.host_bandwidth = (*cpu)->c2c_bandwidth;
  }
  if (o.offload && setup.host_memory.base() <= 0) {
    return base::fail("--offload: system '" + sys.name + "' has no host memory in the catalog");
  }
  if (o.overhead >= 0) {
    setup.framework_overhead = o.overhead;
  } else if (fitted) {
    setup.framework_overhead = fitted->compute_scale - 1.0;
    job->calibration_note = "compute-time scale " + fmt::format("{:.4g}", fitted->compute_scale) +
                            " fitted to measured steps (calibration profile " + fitted->path + ")";
  }
  return job;
}

base::Result<RunOutput> run_training(const Context& ctx, const TrainOptions& o) {
  auto job_r = prepare_training(ctx, o);
  if (!job_r) return base::fail(job_r.error());
  const TrainingJob& job = **job_r;
  const auto& l = job.layout;
  const auto& spec = job.cluster->spec;
  const auto& gpu = job.cluster->gpu();
  const int64_t gpus = job.gpus;
  auto r = execution::simulate_training_step(job.setup);
  if (!r) return base::fail(r.error());
  if (!job.calibration_note.empty()) r->notes.push_back(job.calibration_note);
  report::TrainingContext c{.cluster = spec.name,
                            .model = job.model.name,
                            .gpu = gpu.name,
                            .gpus = gpus,
                            .token_budget = job.token_budget};
  RunOutput out;
  out.json = report::training_json(*r, l, c);
  out.text = report::training_text(*r, l, c);
  out.summary = fmt::format(
      "training  {} on {} GPUs ({}): step {:.2f} s, {:.0f} tokens/s per GPU, "
      "{:.0f} TFLOP/s per GPU, MFU {:.0f}%",
      job.model.name, gpus, out.json["layout"]["summary"].get<std::string>(), r->step_time_s,
      r->tokens_per_s / static_cast<double>(gpus), r->model_tflops_per_gpu, 100 * r->mfu);
  if (!o.power && !o.power_cap.empty()) return base::fail("--power-cap goes with --power");
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
  if (!o.trace.empty()) {
    if (auto st = report::training_trace(*r, l).write(o.trace); !st) return base::fail(st.error());
  }
  return out;
}

namespace {

int train(const Context& ctx, const TrainOptions& o) {
  auto r = run_training(ctx, o);
  if (!r) return bad_input(r.error());
  if (!o.json.empty()) {
    report::Json j = {{"training", r->json}};
    if (!r->power.is_null()) j["power"] = r->power;
    if (auto st = report::write_json(j, o.json); !st) return bad_input(st.error());
  }
  if (o.json != "-") std::cout << r->text;
  return kExitOk;
}

}  // namespace

Verb add_train(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "One training step of a model on a cluster: step time, tokens/s, TFLOP/s per GPU, MFU, "
      "memory per GPU and where the time goes.\n"
      "Example: clustertwin train --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b "
      "--tp 8 --pp 16 --global-batch 2048 --seq-len 8192");
  cmd->add_option("--cluster", o->cluster, "catalog name, cluster file or SYSTEM*COUNT")
      ->capture_default_str();
  cmd->add_option("--gpus", o->gpus, "GPUs of the job (default: the whole cluster)")
      ->check(flags::positive(o->gpus, base::kMaxGpus));
  cmd->add_option(
         "--model", o->model,
         "catalog model, YAML file, HF config.json, or 'gpt' with --layers/--hidden/--heads")
      ->capture_default_str();
  cmd->add_option("--layers", o->layers, "custom GPT: layers")
      ->check(flags::positive(o->layers, base::kMaxLayers));
  cmd->add_option("--hidden", o->hidden, "custom GPT: hidden size")
      ->check(flags::positive(o->hidden, base::kMaxModelDim));
  cmd->add_option("--heads", o->heads, "custom GPT: attention heads")
      ->check(flags::positive(o->heads, base::kMaxModelDim));
  cmd->add_option("--kv-heads", o->kv_heads, "custom GPT: KV heads (default: heads)")
      ->check(flags::positive(o->kv_heads, base::kMaxModelDim));
  cmd->add_option("--ffn", o->ffn, "custom GPT: MLP width (default: 4 x hidden)")
      ->check(flags::positive(o->ffn, base::kMaxModelDim));
  cmd->add_option("--vocab", o->vocab, "custom GPT: vocabulary")
      ->check(flags::positive(o->vocab, base::kMaxModelDim))
      ->capture_default_str();
  cmd->add_option("--tp", o->tp, "tensor parallel")
      ->check(flags::positive(o->tp, base::kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--pp", o->pp, "pipeline stages")
      ->check(flags::positive(o->pp, base::kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--dp", o->dp, "data parallel (default: gpus / (tp*pp*cp))")
      ->check(flags::positive(o->dp, base::kMaxGpus));
  cmd->add_option("--cp", o->cp, "context parallel")
      ->check(flags::positive(o->cp, base::kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--ep", o->ep,
                  "expert parallel (MoE parallel folding: etp*ep must divide tp*cp*dp)")
      ->check(flags::positive(o->ep, base::kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--etp", o->etp, "expert tensor parallel: ranks splitting each expert's width")
      ->check(flags::positive(o->etp, base::kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--vpp", o->vpp, "virtual pipeline stages per stage (interleaved 1F1B)")
      ->check(flags::positive(o->vpp, base::kMaxLayers))
      ->capture_default_str();
  cmd->add_option("--micro-batch", o->micro_batch, "sequences per micro-batch")
      ->check(flags::positive(o->micro_batch, base::kMaxBatch))
      ->capture_default_str();
  cmd->add_option("--global-batch", o->global_batch,
                  "sequences per step (default: micro_batch*dp*4*pp)")
      ->check(flags::positive(o->global_batch, base::kMaxBatch));
  cmd->add_option("--seq-len", o->seq_len, "sequence length (default: the model's, at most 8192)")
      ->check(flags::positive(o->seq_len, base::kMaxSequence));
  cmd->add_option("--precision", o->precision, "bf16, fp8 or fp4")->capture_default_str();
  cmd->add_option("--recompute", o->recompute, "none, selective or full")->capture_default_str();
  cmd->add_option("--zero", o->zero, "0, 1 (distributed optimizer), 2 or 3 (FSDP)")
      ->check(flags::range(o->zero, 0, 3))
      ->capture_default_str();
  cmd->add_flag("--no-sequence-parallel", o->no_sp,
                "tensor parallelism without sequence parallelism");
  cmd->add_flag("--tp-overlap", o->tp_overlap, "overlap TP collectives with GEMMs");
  cmd->add_flag("--no-dp-overlap", o->no_dp_overlap, "do not overlap the DP gradient reduction");
  cmd->add_flag("--ep-overlap", o->ep_overlap, "overlap EP all-to-all with compute (DualPipe)");
  cmd->add_option("--moe-dispatch", o->moe_dispatch,
                  "MoE token dispatch across NVLink domains: alltoall (a copy per expert), dedup "
                  "(a copy per domain, forwarded over NVLink: DeepEP) or auto (dedup for "
                  "group-limited routing)")
      ->check(CLI::IsMember({"auto", "alltoall", "dedup"}))
      ->default_str("auto");
  cmd->add_option("--recompute-modules", o->recompute_modules,
                  "Megatron selective recomputation by module, comma-separated: core_attn, mlp, "
                  "moe_act, layernorm, mla_up_proj, moe, shared_experts (implies selective)");
  cmd->add_option("--schedule", o->schedule,
                  "pipeline schedule: 1f1b (interleaved when --vpp > 1) or dualpipe (DeepSeek-V3)")
      ->check(CLI::IsMember({"1f1b", "interleaved", "dualpipe"}))
      ->capture_default_str();
  cmd->add_option("--routing", o->routing,
                  "MoE routing: balanced (forced, as benchmarks run) or measured (skew of the "
                  "measured MoE kernel tables on the busiest EP rank)")
      ->check(CLI::IsMember({"balanced", "measured"}))
      ->capture_default_str();
  cmd->add_option("--capacity-factor", o->capacity_factor,
                  "MoE expert capacity as a multiple of the uniform share (0 = dropless)")
      ->check(flags::range(o->capacity_factor, 0.0, 64.0));
  cmd->add_flag("--offload", o->offload,
                "offload stored activations to host memory (Grace LPDDR5X, host DRAM)");
  cmd->add_option("--lora-rank", o->lora_rank,
                  "LoRA fine-tuning with adapters of this rank (frozen base weights)")
      ->check(flags::range(o->lora_rank, 1, 4096));
  cmd->add_flag("--fp8-attention", o->fp8_attention,
                "FP8 dot-product attention (Q, K, V, O in FP8; Transformer Engine)");
  cmd->add_flag("--fp8-act-store", o->fp8_act_store,
                "keep the MLP activation's input in FP8 for the backward pass (Megatron "
                "--activation-func-fp8-input-store)");
  cmd->add_flag("--bf16-moments", o->bf16_moments,
                "Adam moments in bf16 (DeepSeek-V3; Megatron --exp-avg-dtype bf16)");
  cmd->add_option("--attention", o->attention, "flash (fused) or unfused (2021-22 Megatron-LM)")
      ->check(CLI::IsMember({"flash", "unfused"}))
      ->capture_default_str();
  cmd->add_option("--comm", o->comm,
                  "communication model: analytical (closed forms, fastest), collective (NCCL "
                  "algorithms, calibrated) or flow (collective on the flow-level network: "
                  "contention between concurrent groups)")
      ->check(CLI::IsMember({"analytical", "collective", "flow"}))
      ->capture_default_str();
  cmd->add_option("--calibration", o->calibration,
                  "a calibration profile (from `clustertwin calibrate --out`) or the name of a "
                  "built-in one (`clustertwin calibrate --list`), laid over the catalog's "
                  "collective lines (--comm collective or flow)");
  cmd->add_option("--framework-overhead", o->overhead,
                  "fraction of compute lost to launch gaps and host overhead")
      ->check(flags::range(o->overhead, 0.0, 10.0));
  cmd->add_option("--tokens", o->tokens, "token budget for time-to-train (e.g. 15T)");
  cmd->add_flag("--power", o->power,
                "add the power view (GPU, rack, cluster, facility, energy per token)");
  cmd->add_option("--power-cap", o->power_cap,
                  "with --power: a GPU power limit (\"1000W\"; default: the GPU's TGP)");
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  cmd->add_option("--trace", o->trace, "write a Chrome trace of the step to FILE");
  return {cmd, [&ctx, o] { return train(ctx, *o); }};
}

}  // namespace clustertwin::app
