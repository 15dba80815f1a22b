// The serving request, its field table and its run (docs/models/inference.md; DESIGN.md §2 for
// the one-path-whatever-the-door rule). Moved from apps/clustertwin/cmd_serve.cpp.

#include "clustertwin/scenario/serving.h"

#include <fmt/format.h>

#include <fstream>
#include <initializer_list>
#include <mutex>
#include <utility>

#include "clustertwin/base/file.h"
#include "clustertwin/base/text.h"
#include "clustertwin/base/units_parse.h"
#include "clustertwin/calibration/kernel_fit.h"
#include "clustertwin/calibration/serving_fit.h"
#include "clustertwin/execution/serving_sim.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/power/serving_power.h"
#include "clustertwin/report/power.h"
#include "clustertwin/report/progress.h"
#include "clustertwin/report/serving.h"
#include "clustertwin/scenario/power_settings.h"
#include "clustertwin/search/serving_search.h"

namespace clustertwin::scenario {
namespace {

using R = ServingRequest;
using F = Field<R>;

FieldTable<R> make_serving_fields() {
  const base::IntRange gpus = positive(base::kMaxGpus);
  const base::IntRange tokens = positive(base::kMaxTokensPerStep);
  const FieldTable<R> rows = {
      F{.key = "dataset",
        .flag = "dataset",
        .name = "dataset",
        .member = &R::dataset,
        .help = "request lengths: a catalog dataset (default: the model's MLPerf set)"},
      F{.key = "isl",
        .flag = "isl",
        .name = "input length",
        .member = &R::isl,
        .help = "fixed input tokens per request (with {osl})",
        .ints = positive(base::kMaxSequence)},
      F{.key = "osl",
        .flag = "osl",
        .name = "output length",
        .member = &R::osl,
        .help = "fixed output tokens per request (with {isl})",
        .ints = positive(base::kMaxSequence)},
      F{.key = "scenario",
        .flag = "scenario",
        .name = "scenario",
        .member = &R::scenario,
        .help = "offline, server or interactive (MLPerf LoadGen)",
        .choices = {"offline", "server", "interactive"},
        .show_default = true},
      F{.key = "precision",
        .flag = "precision",
        .name = "precision",
        .member = &R::precision,
        .help = "weights: bf16, fp8 or fp4",
        .choices = {"bf16", "fp8", "fp4"},
        .show_default = true},
      F{.key = "kv_precision",
        .flag = "kv-precision",
        .name = "KV precision",
        .member = &R::kv,
        .help = "KV cache: fp8 or bf16",
        .choices = {"fp8", "bf16"},
        .show_default = true},
      F{.key = "serving",
        .flag = "serving",
        .name = "serving layout",
        .member = &R::serving,
        .help = "'auto' (search) or a serving layout FILE (default: auto unless layout fields "
                "are given)"},
      F{.key = "ttft_limit",
        .flag = "ttft-limit",
        .name = "TTFT limit",
        .member = &R::ttft_limit,
        .help = "p99 time to first token, e.g. '2 s' (default: the dataset's MLPerf limit)"},
      F{.key = "tpot_limit",
        .flag = "tpot-limit",
        .name = "TPOT limit",
        .member = &R::tpot_limit,
        .help = "p99 time per output token, e.g. '80 ms'"},
      F{.key = "tp",
        .flag = "tp",
        .name = "tensor parallel",
        .member = &R::tp,
        .help = "tensor parallel per instance",
        .ints = gpus},
      F{.key = "pp",
        .flag = "pp",
        .name = "pipeline stages",
        .member = &R::pp,
        .help = "pipeline stages per instance",
        .ints = gpus},
      F{.key = "ep",
        .flag = "ep",
        .name = "expert parallel",
        .member = &R::ep,
        .help = "expert parallel (divides tp)",
        .ints = gpus},
      F{.key = "dp_attention",
        .flag = "dp-attention",
        .name = "attention DP",
        .member = &R::dp_attention,
        .help = "attention data parallel over the tp GPUs, EP = tp (wide EP)"},
      F{.key = "max_batch",
        .flag = "max-batch",
        .name = "max batch",
        .member = &R::max_batch,
        .help = "sequences per rank",
        .ints = positive(base::kMaxBatch)},
      F{.key = "max_tokens",
        .flag = "max-tokens",
        .name = "max tokens",
        .member = &R::max_tokens,
        .help = "tokens per rank per iteration",
        .ints = tokens},
      F{.key = "chunked_prefill",
        .flag = "no-chunked-prefill",
        .name = "chunked prefill",
        .member = &R::no_chunked,
        .help = "run each prompt in one iteration (with the search: only such layouts are tried)",
        .inverted = true},
      F{.key = "chunk_unit",
        .flag = "chunk-unit",
        .name = "chunk unit",
        .member = &R::chunk_unit,
        .help = "chunked prefill: a prompt chunk that is not the prompt's last is a multiple of "
                "this many tokens (TensorRT-LLM: the KV block size, tokens_per_block, 32 in "
                "NVIDIA's MLPerf configs; default 1: no alignment)",
        .ints = {.min = 1, .max = 1 << 16}},
      F{.key = "pp_chunk_overlap",
        .flag = "pp-chunk-overlap",
        .name = "pipeline chunk overlap",
        .member = &R::pp_chunk_overlap,
        .help = "pipeline parallelism: a prompt still chunking goes into the next micro-batch "
                "before its previous chunk has left the pipeline (TensorRT-LLM from PR #9308, "
                "2025-11; default: one chunk per pass, as in MLPerf v5.0/v5.1)"},
      F{.key = "redundant_experts",
        .flag = "redundant-experts",
        .name = "redundant experts",
        .member = &R::redundant_experts,
        .help = "expert copies placed by the EP load balancer (EPLB): {ep} divides experts + "
                "these",
        .ints = {.min = 0, .max = 1 << 16}},
      F{.key = "two_batch_overlap",
        .flag = "two-batch-overlap",
        .name = "two-batch overlap",
        .member = &R::two_batch_overlap,
        .help = "attention DP: overlap one micro-batch's MoE exchange with the other's compute"},
      F{.key = "adp_timeout_iters",
        .flag = "adp-timeout-iters",
        .name = "attention-DP balance timeout",
        .member = &R::adp_timeout_iters,
        .help = "attention DP: hold prompts until every rank has one, at most this many "
                "iterations (TensorRT-LLM attention_dp_config timeout_iters; 0: off)",
        .ints = {.min = 0, .max = 1 << 20}},
      F{.key = "adp_batching_wait_iters",
        .flag = "adp-batching-wait-iters",
        .name = "attention-DP batching wait",
        .member = &R::adp_batching_wait_iters,
        .help = "attention DP with {adp_timeout_iters}: once every rank has prompts, wait this "
                "many iterations more to batch them (batching_wait_iters)",
        .ints = {.min = 0, .max = 1 << 20}},
      F{.key = "cuda_graph_batches",
        .flag = "cuda-graph-batches",
        .name = "CUDA-graph batch sizes",
        .member = &R::cuda_graph_batches,
        .help = "decode batch sizes captured as CUDA graphs, e.g. 128,256,384,512: decode-only "
                "iterations pad every rank to the next one (TensorRT-LLM cuda_graph_config with "
                "padding; default: none)"},
      F{.key = "replicas",
        .flag = "replicas",
        .name = "replicas",
        .member = &R::replicas,
        .help = "instances (default: the GPUs / instance size)",
        .ints = gpus},
      F{.key = "disaggregated",
        .flag = "disaggregated",
        .name = "disaggregation",
        .member = &R::disaggregated,
        .help = "separate prefill and decode pools ({prefill_tp}, {prefill_ep}, "
                "{prefill_replicas}, ...)"},
      F{.key = "prefill_tp",
        .flag = "prefill-tp",
        .name = "prefill tensor parallel",
        .member = &R::prefill_tp,
        .help = "disaggregated: prefill instance tp",
        .ints = gpus},
      F{.key = "prefill_ep",
        .flag = "prefill-ep",
        .name = "prefill expert parallel",
        .member = &R::prefill_ep,
        .help = "disaggregated: prefill instance ep",
        .ints = gpus},
      F{.key = "prefill_dp_attention",
        .flag = "prefill-dp-attention",
        .name = "prefill attention DP",
        .member = &R::prefill_dp_attention,
        .help = "disaggregated: prefill attention DP"},
      F{.key = "prefill_replicas",
        .flag = "prefill-replicas",
        .name = "prefill replicas",
        .member = &R::prefill_replicas,
        .help = "disaggregated: prefill instances",
        .ints = gpus},
      F{.key = "prefill_max_tokens",
        .flag = "prefill-max-tokens",
        .name = "prefill max tokens",
        .member = &R::prefill_max_tokens,
        .help = "disaggregated: prefill tokens per rank per iteration",
        .ints = tokens,
        .show_default = true},
      F{.key = "mtp",
        .flag = "mtp",
        .name = "MTP draft tokens",
        .member = &R::mtp,
        .help = "speculative draft tokens per step from the MTP module",
        .ints = {.min = 0, .max = 8}},
      F{.key = "mtp_acceptance",
        .flag = "mtp-acceptance",
        .name = "MTP acceptance",
        .member = &R::mtp_acceptance,
        .help = "acceptance probability of each draft token",
        .reals = {.min = 0, .max = 1},
        .show_default = true},
      F{.key = "kv_policy",
        .flag = "kv-policy",
        .name = "KV policy",
        .member = &R::kv_policy,
        .help = "preempt (admit by prompt, evict on overflow) or reserve",
        .choices = {"preempt", "reserve"},
        .show_default = true},
      F{.key = "adp_assign",
        .flag = "adp-assign",
        .name = "attention-DP assignment",
        .member = &R::adp_assign,
        .help = "attention-DP request assignment: balanced (the rank with the fewest active "
                "requests, TensorRT-LLM) or fill (rank 0 first)",
        .choices = {"balanced", "fill"},
        .show_default = true},
      F{.key = "runtime",
        .flag = "runtime",
        .name = "serving runtime",
        .member = &R::runtime,
        .help = "host side of the runtime: pytorch (TensorRT-LLM's PyTorch flow, vLLM, SGLang: an "
                "iteration that is not a CUDA graph waits for Python to issue its kernels) or "
                "trt-engine (TensorRT engines under the C++ executor: every iteration pays its "
                "host time between iterations, catalog/calibration/serving.yaml)",
        .choices = {"pytorch", "trt-engine"},
        .show_default = true},
      F{.key = "stream_interval",
        .flag = "stream-interval",
        .name = "stream interval",
        .member = &R::stream_interval,
        .help = "server/interactive: iterations between the streamed responses of a sequence "
                "(TensorRT-LLM stream_interval); with {runtime} pytorch every response costs "
                "host time in the instance's front end",
        .ints = {.min = 1, .max = 100000},
        .show_default = true},
      F{.key = "dispatch",
        .flag = "dispatch",
        .name = "dispatch",
        .member = &R::dispatch,
        .help = "server/interactive: how arrivals reach the instances: least-loaded (the fewest "
                "requests in flight; NVIDIA's harness for Server), round-robin (each in turn; "
                "its Interactive runs) or auto (what that harness does for the scenario)",
        .choices = {"auto", "least-loaded", "round-robin"},
        .show_default = true},
      F{.key = "tp_overlap",
        .flag = "tp-overlap",
        .name = "TP overlap",
        .member = &R::tp_overlap,
        .help = "fraction of TP all-reduce hidden behind GEMMs (default 0.5)",
        .reals = {.min = 0, .max = 1}},
      F{.key = "norm_quant_fusion",
        .flag = "no-norm-quant-fusion",
        .name = "norm-quant fusion",
        .member = &R::no_norm_quant_fusion,
        .help = "NVFP4: the GEMMs after a norm (QKV, gate/up) quantise their input in a kernel of "
                "their own (TensorRT-LLM without norm_quant_fusion, as NVIDIA's B200 Llama 2 "
                "Interactive config)",
        .inverted = true},
      F{.key = "rate",
        .flag = "rate",
        .name = "arrival rate",
        .member = &R::rate,
        .help = "server/interactive: simulate this arrival rate (requests/s) instead of "
                "searching the highest compliant one",
        // At most one request per tick of the nanosecond clock: faster arrivals share a tick,
        // and 1e308/s once wrapped the steady-state note's request count to -2^63.
        .reals = {.min = 0, .max = 1e9, .min_exclusive = true}},
      F{.key = "requests",
        .flag = "requests",
        .name = "requests",
        .member = &R::requests,
        .help = "requests to simulate (default: LoadGen-like run length)",
        .ints = positive(base::kMaxRequests)},
      F{.key = "seed",
        .flag = "seed",
        .name = "seed",
        .member = &R::seed,
        .help = "random seed of request lengths and arrivals",
        .ints = {.min = 0},
        .show_default = true},
      F{.key = "threads",
        .flag = "threads",
        .name = "threads",
        .member = &R::threads,
        .help = "search threads (default: all cores)",
        .ints = {.min = 0, .max = base::kMaxThreads}},
      F{.key = "compare",
        .flag = "compare",
        .name = "comparison cluster",
        .member = &R::compare,
        .help = "also break down the per-GPU ratio to this cluster (e.g. 'hgx-h200*1'): GPU, "
                "memory, FP4, NVLink domain"},
      F{.key = "calibration",
        .flag = "calibration",
        .name = "calibration profile",
        .member = &R::calibration,
        .help = "a calibration profile: a built-in one's name (`clustertwin calibrate --list`; "
                "it carries the catalog's serving step constants), or a file fitted to measured "
                "serving results (`clustertwin calibrate` of LoadGen summaries or "
                "benchmark_serving JSON with their setup) or kernel tables: its serving: mapping "
                "sets the step model's kernel-time factor and host time per iteration, and "
                "tp_overlap, stream_host_per_response_s, eager_host_per_layer_s or "
                "engine_host_per_iteration_s where it gives them (in place of "
                "catalog/calibration/serving.yaml's), its compute: mapping "
                "lays kernel tables over the catalog's; a profile for another GPU, or one with "
                "neither mapping, is refused"},
  };
  const FieldTable<R> power_rows = {
      F{.key = "clock_lock",
        .flag = "clock-lock",
        .name = "clock lock",
        .member = &R::clock_lock,
        .help = "with {power}: lock the SM clock (e.g. 1500MHz); slowed kernels are fed back"},
  };
  const FieldTable<R> smoothing_rows = {
      F{.key = "smoothing",
        .flag = "smoothing",
        .name = "smoothing",
        .member = &R::smoothing,
        .help = "with {power}: power smoothing of the racks, 'on' (the system's profile) or "
                "floor=0.6,ramp-up=2000W/s,ramp-down=500W/s,hysteresis=2s,storage=65J,"
                "efficiency=0.95,average=10s (default: on where the system has it)"},
      F{.key = "no_smoothing",
        .flag = "no-smoothing",
        .name = "no smoothing",
        .member = &R::no_smoothing,
        .help = "with {power}: no smoothed rack waveform"},
  };
  return join<R>({cluster_rows<R>("GPUs to serve on (default: the whole cluster)",
                                  "catalog model, YAML file or HF config.json"),
                  rows,
                  power_view_rows<R>(
                      "add the power view of the run (GPU power of prompt and decode phases, "
                      "racks, facility, energy per output token)",
                      "with {power}: GPU power limit (e.g. 1000W); slowed kernels are fed back"),
                  power_rows, cooling_rows<R>("with {power}: "), smoothing_rows});
}

base::Result<ServingPowerRun> serving_power(const ServingRequest& o,
                                            const hardware::Catalog& catalog,
                                            const hardware::ClusterSpec& cluster,
                                            const execution::ServingSetup& setup,
                                            const execution::ServingResult& result) {
  auto pcat = power::PowerCatalog::load(catalog);
  if (!pcat) return base::fail(pcat.error());
  auto topo = topology::Topology::build(catalog, cluster);
  if (!topo) return base::fail(topo.error());
  power::ServingPowerOptions opt;
  auto g = scenario::gpu_settings(o.power_cap, o.clock_lock);
  if (!g) return base::fail(g.error());
  opt.gpu = *g;
  opt.cooling = scenario::cooling_settings(o.pue, o.supply_temp, o.delta_t, o.coolant);
  auto sp = pcat->system(cluster.system);
  if (!sp) return base::fail(sp.error());
  auto sr = scenario::smoothing_request(o.smoothing, o.no_smoothing, (*sp)->smoothing.supported);
  if (!sr) return base::fail(sr.error());
  opt.smoothing = *sr;
  power::ServingPowerInput in{.catalog = &catalog,
                              .power = &*pcat,
                              .cluster = &cluster,
                              .topology = &*topo,
                              .setup = &setup,
                              .result = &result};
  auto r = power::analyze_serving_power(in, opt);
  if (!r) return base::fail(r.error());
  ServingPowerRun out;
  out.json = report::serving_power_json(*r);
  out.text = report::serving_power_text(*r);
  out.summary = fmt::format(
      "power     GPU {:.0f} W avg (prompt kernels {:.0f} W, decode {:.0f} W); rack {:.0f} kW avg, "
      "{:.0f} kW peak; {:.3g} J per output token (IT), PUE {:.2f}",
      r->gpu_avg_W, r->gpu_prefill_W, r->gpu_decode_W, r->rack_avg_W / 1e3, r->rack_peak_W / 1e3,
      r->energy_per_token_J, r->facility.pue);
  return out;
}

workload::ServingRuntime runtime_of(const ServingRequest& o) {
  return o.runtime == "trt-engine" ? workload::ServingRuntime::kTrtEngine
                                   : workload::ServingRuntime::kPytorch;
}

workload::ServingDispatch dispatch_of(const ServingRequest& o) {
  return workload::dispatch_from_name(o.dispatch).value_or(workload::ServingDispatch::kAuto);
}

// The request's settings that hold whatever the instances (chunked prefill, MTP, KV policy, TP
// overlap, fusion, ADP assignment, runtime, streaming, dispatch): one place for the explicit
// layout and the base layout the search starts from. The base layout once set neither kv_policy
// nor chunked prefill, so `serve --kv-policy reserve` without layout flags searched and reported
// "preempt", and `--no-chunked-prefill` searched chunked layouts too.
void apply_request_settings(const ServingRequest& o, workload::ServingLayout& l) {
  // The search's constraint too (it tries only unchunked layouts then).
  l.instance.chunked_prefill = !o.no_chunked;
  l.mtp = o.mtp;
  l.mtp_acceptance = o.mtp_acceptance;
  l.kv_policy =
      o.kv_policy == "reserve" ? workload::KvPolicy::kReserve : workload::KvPolicy::kPreempt;
  if (o.tp_overlap >= 0) l.tp_overlap = o.tp_overlap;
  l.norm_quant_fusion = !o.no_norm_quant_fusion;
  l.adp_balance = o.adp_assign == "balanced";
  l.runtime = runtime_of(o);
  l.stream_interval = o.stream_interval;
  l.dispatch = dispatch_of(o);
}

// The first field given of a list of (given?, "{key}") pairs, or nullptr.
using GivenFields = std::initializer_list<std::pair<bool, const char*>>;
const char* first_given(GivenFields fields) {
  for (const auto& [on, key] : fields) {
    if (on) return key;
  }
  return nullptr;
}

// The first layout field the request gives ({tp}, ...): any of them asks for an explicit layout.
const char* layout_field_given(const ServingRequest& o) {
  return first_given({{o.tp > 0, "{tp}"},
                      {o.pp > 0, "{pp}"},
                      {o.ep > 0, "{ep}"},
                      {o.dp_attention, "{dp_attention}"},
                      {o.max_batch > 0, "{max_batch}"},
                      {o.max_tokens > 0, "{max_tokens}"},
                      {o.disaggregated, "{disaggregated}"},
                      {o.replicas > 0, "{replicas}"},
                      {o.redundant_experts > 0, "{redundant_experts}"},
                      {o.two_batch_overlap, "{two_batch_overlap}"},
                      {o.adp_timeout_iters > 0, "{adp_timeout_iters}"},
                      {o.adp_batching_wait_iters > 0, "{adp_batching_wait_iters}"},
                      {!o.cuda_graph_batches.empty(), "{cuda_graph_batches}"},
                      {o.chunk_unit > 0, "{chunk_unit}"},
                      {o.pp_chunk_overlap, "{pp_chunk_overlap}"}});
}

bool layout_flags_given(const ServingRequest& o) { return layout_field_given(o) != nullptr; }

// Fields the run would read nowhere are refused, not dropped: layout fields beside {serving}
// ('auto' searched and a layout file set the layout, whatever {tp} said), request settings beside
// a layout file (which sets them too), and a prefill pool's fields without {disaggregated}.
base::Status check_unread_fields(const ServingRequest& o) {
  if (const char* key = o.serving.empty() ? nullptr : layout_field_given(o)) {
    return base::fail(fmt::format(
        "{} given with {{serving}} '{}', which sets the layout{}: give the layout in one place",
        key, o.serving, o.serving == "auto" ? " by search" : ""));
  }
  if (!o.serving.empty() && o.serving != "auto") {
    // A layout file sets these too (its keys or the layout's defaults): a request's own value
    // beside it was dropped with exit 0. A value equal to the default cannot be told from none.
    const ServingRequest d;
    if (const char* key = first_given(
            {{o.no_chunked != d.no_chunked, "{chunked_prefill}"},
             {o.mtp != d.mtp, "{mtp}"},
             {o.mtp_acceptance != d.mtp_acceptance, "{mtp_acceptance}"},
             {o.kv_policy != d.kv_policy, "{kv_policy}"},
             {o.adp_assign != d.adp_assign, "{adp_assign}"},
             {o.runtime != d.runtime, "{runtime}"},
             {o.stream_interval != d.stream_interval, "{stream_interval}"},
             {o.dispatch != d.dispatch, "{dispatch}"},
             {o.tp_overlap != d.tp_overlap, "{tp_overlap}"},
             {o.no_norm_quant_fusion != d.no_norm_quant_fusion, "{norm_quant_fusion}"}})) {
      return base::fail(fmt::format(
          "{} given with {{serving}} '{}', a layout file, which sets it: give it in the file", key,
          o.serving));
    }
  }
  if (o.disaggregated) return {};
  if (const char* key = first_given({{o.prefill_tp > 0, "{prefill_tp}"},
                                     {o.prefill_ep > 0, "{prefill_ep}"},
                                     {o.prefill_dp_attention, "{prefill_dp_attention}"},
                                     {o.prefill_replicas > 0, "{prefill_replicas}"},
                                     {o.prefill_max_tokens != ServingRequest{}.prefill_max_tokens,
                                      "{prefill_max_tokens}"}})) {
    return base::fail(std::string(key) + " sizes the prefill pool: it goes with {disaggregated}");
  }
  return {};
}

base::Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return base::fail("cannot read serving file '" + base::verbatim(path) + "'");
  auto text = base::read_all(in);
  if (!text)
    return base::fail("serving file '" + base::verbatim(path) + "': " + text.error().message);
  return text;
}

// The explicit layout of the flags (or of a file); replicas default to what the GPUs hold.
// `cal`: the catalog's fitted constants, whose TP overlap a layout takes unless it sets its own.
base::Result<workload::ServingLayout> explicit_layout(
    const ServingRequest& o, int64_t gpus, compute::DType weights, double kv_bytes,
    const execution::ServingStepCalibration& cal) {
  workload::ServingLayout l;
  cal.apply(l);
  if (!o.serving.empty() && o.serving != "auto") {
    auto text = read_text(o.serving);
    if (!text) return base::fail(text.error());
    auto f = workload::parse_serving_yaml(*text, o.serving, cal.tp_overlap);
    if (!f) return f;
    l = *f;
  } else {
    l.weights = weights;
    l.kv_bytes = kv_bytes;
    auto& i = l.instance;
    i.tp = std::max(1, o.tp);
    i.pp = std::max(1, o.pp);
    i.dp_attention = o.dp_attention;
    i.ep = o.ep > 0 ? o.ep : (o.dp_attention ? i.tp : 1);
    i.max_batch = o.max_batch > 0 ? o.max_batch : 256;
    i.max_tokens = o.max_tokens > 0 ? o.max_tokens : 8192;
    if (o.chunk_unit > 0) i.chunk_unit = o.chunk_unit;
    i.pp_chunk_overlap = o.pp_chunk_overlap;
    i.redundant_experts = o.redundant_experts;
    i.two_batch_overlap = o.two_batch_overlap;
    i.adp_timeout_iters = o.adp_timeout_iters;
    i.adp_batching_wait_iters = o.adp_batching_wait_iters;
    if (!o.cuda_graph_batches.empty()) {
      auto g = workload::parse_graph_batches(o.cuda_graph_batches);
      if (!g) return base::fail("{cuda_graph_batches}: " + g.error().message);
      i.cuda_graph_batches = *g;
    }
    l.replicas = o.replicas;
    if (o.disaggregated) {
      l.disaggregated = true;
      l.prefill.tp = std::max(1, o.prefill_tp);
      l.prefill.dp_attention = o.prefill_dp_attention;
      l.prefill.ep = o.prefill_ep > 0 ? o.prefill_ep : (o.prefill_dp_attention ? l.prefill.tp : 1);
      l.prefill.max_tokens = o.prefill_max_tokens;
      l.prefill.max_batch = o.prefill_max_batch;
      l.prefill.two_batch_overlap = o.two_batch_overlap;
      l.prefill_replicas = std::max(1, o.prefill_replicas);
    }
    apply_request_settings(o, l);
  }
  if (l.replicas <= 0) {
    const int64_t rest = gpus - (l.disaggregated ? l.prefill_replicas * l.prefill.gpus() : 0);
    const int per = l.instance.gpus();
    if (rest <= 0 || rest % per != 0) {
      return base::fail(fmt::format(
          "layout {} needs {} GPUs per instance, which does not divide the {} GPUs{} (give "
          "{{replicas}}, change {{gpus}} or the layout)",
          l.instance.label(), per, rest, l.disaggregated ? " left after the prefill pool" : ""));
    }
    l.replicas = static_cast<int>(rest / per);
  }
  return l;
}

base::Result<workload::LatencyLimits> limits_of(const ServingRequest& o, const workload::Dataset& d,
                                                workload::ServingScenario sc) {
  auto from_dataset = d.limits(sc);
  workload::LatencyLimits l;
  if (from_dataset) l = *from_dataset;
  auto read = [](const std::string& text, const char* flag) -> base::Result<base::Seconds> {
    auto v = base::parse<base::Seconds>(text);
    if (!v) return base::fail(std::string(flag) + ": " + v.error().message);
    if (v->base() <= 0) return base::fail(std::string(flag) + ": expected a time > 0");
    return *v;
  };
  if (!o.ttft_limit.empty()) {
    auto v = read(o.ttft_limit, "{ttft_limit}");
    if (!v) return base::fail(v.error());
    l.ttft = *v;
  }
  if (!o.tpot_limit.empty()) {
    auto v = read(o.tpot_limit, "{tpot_limit}");
    if (!v) return base::fail(v.error());
    l.tpot = *v;
  }
  if (l.ttft.base() <= 0 || l.tpot.base() <= 0) {
    return base::fail(std::string("the ") + workload::scenario_name(sc) + " scenario needs p99 " +
                      "limits: dataset '" + d.name +
                      "' has none, give {ttft_limit} and {tpot_limit}");
  }
  return l;
}

}  // namespace

base::Result<std::unique_ptr<ServingJob>> prepare_serving(const Environment& ctx,
                                                          const ServingRequest& o) {
  if (auto st = check_serving(o); !st) return base::fail(st.error());
  auto job = std::make_unique<ServingJob>();
  auto cat = ctx.load_catalog();
  if (!cat) return base::fail(cat.error());
  job->catalog = std::move(*cat);
  auto spec = ctx.resolve_cluster(job->catalog, o.cluster);
  if (!spec) return base::fail(spec.error());
  job->cluster = std::move(*spec);
  const auto& sys = **job->catalog.system(job->cluster.system);
  job->gpu = *job->catalog.gpu(sys.gpu);
  const auto& gpu = *job->gpu;
  const int64_t total = static_cast<int64_t>(job->cluster.count) * sys.gpus();
  job->gpus = o.gpus > 0 ? o.gpus : total;
  if (job->gpus > total) {
    return base::fail(fmt::format("{{gpus}} {} is more than cluster '{}' has ({})", job->gpus,
                                  job->cluster.name, total));
  }
  auto model = models::load_model(job->catalog, o.model);
  if (!model) return base::fail(model.error());
  job->model = std::move(*model);
  auto sc = workload::parse_scenario(o.scenario);
  if (!sc)
    return base::fail("{scenario}: expected offline, server or interactive, got '" + o.scenario +
                      "'");
  job->scenario = *sc;
  base::Result<workload::Dataset> dataset = base::fail("");
  if (o.isl > 0 || o.osl > 0) {
    if (o.isl <= 0 || o.osl <= 0) return base::fail("{isl} and {osl} go together (both > 0)");
    // Both name the request lengths: a dataset beside fixed lengths was ignored, even a name
    // that is no dataset.
    if (!o.dataset.empty()) {
      return base::fail("{dataset} '" + o.dataset +
                        "' and {isl}/{osl} both give the request lengths: give one");
    }
    dataset = workload::fixed_dataset(o.isl, o.osl);
  } else if (!o.dataset.empty()) {
    dataset = workload::find_dataset(job->catalog, o.dataset);
  } else {
    dataset = workload::dataset_for_model(job->catalog, job->model.name);
  }
  if (!dataset) return base::fail(dataset.error());
  auto cm = compute::ComputeModel::for_gpu(gpu, job->catalog);
  if (!cm) return base::fail(cm.error());
  // A profile's kernel tables (its compute: mapping), laid over the catalog's table by table.
  bool compute_profile = false;
  // Read once: the compute and serving readers take the same bytes (a pipe reads only once).
  collective::ProfileSource source;
  if (!o.calibration.empty()) {
    auto s = collective::read_profile_source(job->catalog, o.calibration, o.calibration_where);
    if (!s) return base::fail(s.error());
    source = std::move(*s);
    auto pm = calibration::compute_calibration_of(source, gpu, o.calibration_where);
    if (!pm) return base::fail(pm.error());
    if (*pm) {
      cm = cm->with_profile(**pm);
      compute_profile = true;
      job->notes.push_back(calibration::compute_calibration_note(**pm, o.calibration));
    }
  }
  job->compute.emplace(std::move(*cm));
  auto dtype = compute::parse_dtype(o.precision);
  if (!dtype)
    return base::fail("{precision}: expected bf16, fp8 or fp4, got '" + o.precision + "'");
  job->precision = *dtype;
  if (o.kv != "fp8" && o.kv != "bf16")
    return base::fail("{kv_precision}: expected fp8 or bf16, got '" + o.kv + "'");
  job->weights = job->compute->effective(*dtype);
  if (job->weights != *dtype) {
    job->notes.push_back(fmt::format("{} has no {} GEMMs: weights run as {}", gpu.name,
                                     compute::dtype_name(*dtype),
                                     compute::dtype_name(job->weights)));
  }
  auto fabric = execution::serving_fabric(job->catalog, job->cluster);
  if (!fabric) return base::fail(fabric.error());

  auto sc_cal = execution::serving_step_calibration(job->catalog);
  if (!sc_cal) return base::fail(sc_cal.error());
  job->serving_calibration = std::move(*sc_cal);
  // A profile's serving: mapping (calibration/serving_fit.h): the step model's constants of its
  // software stack in place of the catalog's, and the kernel-time factor and host time per
  // iteration fitted to measured serving results. A built-in profile carries the catalog's.
  std::optional<calibration::ServingCalibration> profile;
  if (!o.calibration.empty()) {
    auto c = calibration::serving_calibration_of(job->catalog, source, gpu.name,
                                                 o.calibration_where, compute_profile);
    if (!c) return base::fail(c.error());
    profile = std::move(*c);
  }
  if (profile) {
    const execution::ServingStepCalibration catalog_constants = job->serving_calibration;
    profile->apply(job->serving_calibration);
    const auto& p = job->serving_calibration;
    std::vector<std::string> moved;
    if (p.tp_overlap != catalog_constants.tp_overlap)
      moved.push_back(fmt::format("tp_overlap {:.4g}", p.tp_overlap));
    if (p.stream_host_per_response.base() != catalog_constants.stream_host_per_response.base()) {
      moved.push_back(fmt::format("stream_host_per_response {:.4g} us",
                                  1e6 * p.stream_host_per_response.base()));
    }
    if (p.eager_host_per_layer.base() != catalog_constants.eager_host_per_layer.base()) {
      moved.push_back(
          fmt::format("eager_host_per_layer {:.4g} ms", 1e3 * p.eager_host_per_layer.base()));
    }
    if (p.engine_host_per_iteration.base() != catalog_constants.engine_host_per_iteration.base()) {
      moved.push_back(fmt::format("engine_host_per_iteration {:.4g} ms",
                                  1e3 * p.engine_host_per_iteration.base()));
    }
    if (!moved.empty()) {
      job->notes.push_back(
          fmt::format("serving step constants {} (calibration profile {}) in "
                      "place of the catalog's ({})",
                      base::join(moved), profile->path, catalog_constants.path));
    }
  }

  execution::ServingSetup& s = job->setup;
  job->serving_calibration.apply(s);
  s.model = &job->model;
  s.compute = &*job->compute;
  s.fabric = *fabric;
  s.memory_capacity = gpu.hbm_usable;
  s.dataset = *dataset;
  s.scenario = *sc;
  s.seed = static_cast<uint64_t>(o.seed);
  s.requests = o.requests;
  s.layout.weights = job->weights;
  s.layout.kv_bytes = o.kv == "fp8" ? 1.0 : 2.0;
  apply_request_settings(o, s.layout);
  if (*sc != workload::ServingScenario::kOffline) {
    auto lim = limits_of(o, *dataset, *sc);
    if (!lim) return base::fail(lim.error());
    s.limits = *lim;
  }
  if (profile && profile->fitted) {
    s.calibration.gpu_factor = profile->gpu_factor;
    s.calibration.host_s = profile->host_s;
    job->notes.push_back(fmt::format(
        "kernel-time factor {:.4g} and host time per iteration {:.4g} ms fitted to measured "
        "serving results (calibration profile {})",
        profile->gpu_factor, 1e3 * profile->host_s, profile->path));
  }
  return job;
}

bool serving_layout_given(const ServingRequest& r) { return layout_flags_given(r); }

base::Result<workload::ServingLayout> serving_layout(const ServingRequest& o,
                                                     const ServingJob& job) {
  auto l =
      explicit_layout(o, job.gpus, job.weights, job.setup.layout.kv_bytes, job.serving_calibration);
  if (!l) return base::fail(l.error());
  if (auto st = workload::validate(*l, job.model, job.gpus); !st) return base::fail(st.error());
  return l;
}

namespace {

base::Status serve_impl(const Environment& ctx, const ServingRequest& o, bool quiet,
                        const std::string& trace_path, ServingRun& out) {
  if (!o.power) {
    const std::pair<bool, const char*> given[] = {{!o.power_cap.empty(), "{power_cap}"},
                                                  {!o.clock_lock.empty(), "{clock_lock}"},
                                                  {o.pue != 0, "{pue}"},
                                                  {o.supply_temp > -999, "{supply_temp}"},
                                                  {o.delta_t != 0, "{delta_t}"},
                                                  {!o.coolant.empty(), "{coolant}"},
                                                  {!o.smoothing.empty(), "{smoothing}"},
                                                  {o.no_smoothing, "{no_smoothing}"}};
    for (const auto& [on, flag] : given) {
      if (on) return base::fail(std::string(flag) + " goes with {power}");
    }
  }
  if (auto st = check_unread_fields(o); !st) return base::fail(st.error());
  auto prepared = prepare_serving(ctx, o);
  if (!prepared) return base::fail(prepared.error());
  ServingJob& job = **prepared;
  const hardware::Catalog& cat = job.catalog;
  const hardware::ClusterSpec& spec = job.cluster;
  const hardware::GpuSpec& gpu = *job.gpu;
  const int64_t gpus = job.gpus;
  const models::ModelSpec& model = job.model;
  const workload::ServingScenario sc = job.scenario;
  const compute::ComputeModel& cm = *job.compute;
  const compute::DType weights = job.weights;
  execution::ServingSetup& s = job.setup;
  const execution::ServingFabric& fabric = s.fabric;
  const workload::Dataset& dataset = s.dataset;

  report::ServingReport rep;
  rep.cluster = spec.name;
  rep.model = model.name;
  rep.gpu = gpu.name;
  rep.gpus = gpus;
  rep.dataset = dataset.name;
  rep.scenario = sc;
  rep.limits = s.limits;
  rep.notes = job.notes;
  std::optional<search::ServingSearchResult> found;
  const bool automatic = o.serving == "auto" || (o.serving.empty() && !layout_flags_given(o));
  if (automatic) {
    search::ServingSpace space{
        .gpus = gpus, .domain_size = fabric.domain_size, .verify_requests = o.requests};
    std::optional<report::Progress> bar;
    std::once_flag once;
    auto r = search::search_serving(s, space, o.threads, [&](int64_t done, int64_t all) {
      std::call_once(
          once, [&] { bar.emplace(report::Progress::to_stderr("serving search", all, quiet)); });
      bar->set(done);
    });
    if (bar) bar->finish();
    if (!r) return base::fail(r.error());
    found = std::move(*r);
    const auto& best = found->points[static_cast<size_t>(found->best)];
    rep.layout = best.layout;
    if (found->run) rep.result = *found->run;
    rep.rate = found->rate;
    rep.search = &*found;
    if (!found->run) {
      // Nothing verified (e.g. {requests} 0 with verify disabled): simulate the best once.
      s.layout = rep.layout;
      auto run = execution::simulate_serving(s);
      if (!run) return base::fail(run.error());
      rep.result = *run;
    }
  } else {
    auto l = serving_layout(o, job);
    if (!l) return base::fail(l.error());

    s.layout = *l;
    rep.layout = *l;
    if (sc == workload::ServingScenario::kOffline || o.rate > 0) {
      s.rate_qps = o.rate;
      auto r = execution::simulate_serving(s);
      if (!r) return base::fail(r.error());
      // A chosen request count must load the GPUs, or the figures describe the drain.
      if (o.requests > 0 && !r->steady) return base::fail("{requests}: " + r->steady_note);
      rep.result = *r;
    } else {
      auto r = execution::find_max_rate(s);
      if (!r) return base::fail(r.error());
      rep.result = r->result;
      rep.rate = std::move(*r);
    }
  }
  if (rep.rate && !rep.rate->found) {
    rep.notes.push_back(
        "no arrival rate meets the limits: the best achievable (lightest load "
        "probed) is reported");
  }
  if (!trace_path.empty()) {
    // Re-run the chosen configuration keeping its iterations for the timeline.
    execution::ServingSetup t = s;
    t.layout = rep.layout;
    t.rate_qps = rep.result.rate_qps;
    t.trace_iterations = 20000;
    auto r = execution::simulate_serving(t);
    if (!r) return base::fail(r.error());
    rep.result.trace = std::move(r->trace);
  }
  if (!o.compare.empty()) {
    auto other = hardware::resolve_cluster(cat, o.compare);
    if (!other) return base::fail(other.error());
    const auto& osys = **cat.system(other->system);
    const auto& ogpu = **cat.gpu(osys.gpu);
    auto ocm = compute::ComputeModel::for_gpu(ogpu, cat);
    if (!ocm) return base::fail(ocm.error());
    auto ofab = execution::serving_fabric(cat, *other);
    if (!ofab) return base::fail(ofab.error());
    const int64_t ogpus = static_cast<int64_t>(other->count) * osys.gpus();
    search::GenerationTarget from{.gpu = &ogpu,
                                  .compute = &*ocm,
                                  .fabric = *ofab,
                                  .gpus = ogpus,
                                  .weights = ocm->effective(job.precision)};
    search::GenerationTarget to{.gpu = &gpu,
                                .compute = &cm,
                                .fabric = fabric,
                                .gpus = std::min<int64_t>(gpus, fabric.domain_size),
                                .weights = weights};
    auto steps = search::generation_breakdown(s, from, to, o.threads);
    if (!steps) return base::fail(steps.error());
    rep.generation = *steps;
    rep.generation_baseline = o.compare;
    rep.generation_title = fmt::format(
        "per-GPU {} {} throughput, {} ({} GPUs, {}) over {} ({} GPUs, {}), same software "
        "assumptions (steady-state estimates, best layout at each step):",
        model.name, workload::scenario_name(sc), spec.name, to.gpus,
        compute::dtype_name(to.weights), other->name, ogpus, compute::dtype_name(from.weights));
  }

  if (o.power) {
    execution::ServingSetup ps = s;
    ps.layout = rep.layout;
    auto p = serving_power(o, cat, spec, ps, rep.result);
    if (!p) return base::fail(p.error());
    out.power = std::move(*p);
  }
  out.json = report::serving_json(rep);
  out.text = report::serving_text(rep);
  out.csv = report::serving_csv(rep);
  if (!trace_path.empty()) {
    if (auto st = report::serving_trace(rep).write(trace_path); !st) return base::fail(st.error());
  }
  return {};
}

}  // namespace

const FieldTable<ServingRequest>& serving_fields() {
  static const FieldTable<ServingRequest> kTable = make_serving_fields();
  return kTable;
}

const std::vector<FieldWord>& serving_words() {
  static const std::vector<FieldWord> kWords = words_of(serving_fields());
  return kWords;
}

base::Status check_serving(const ServingRequest& r) {
  return check_fields<R>(r, {&serving_fields()});
}

base::Result<ServingRun> run_serving(const Environment& env, const ServingRequest& o, bool quiet,
                                     const std::string& trace_path) {
  ServingRun out;
  if (auto st = serve_impl(env, o, quiet, trace_path, out); !st) return base::fail(st.error());
  const auto& j = out.json;
  auto num = [&](const char* k) {
    return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0;
  };
  out.summary = fmt::format(
      "serving   {} on {} GPUs ({}), MLPerf {}: {:.0f} tokens/s per GPU, TTFT p99 {:.2f} s, TPOT "
      "p99 {:.0f} ms",
      j.value("model", std::string("?")), j.value("gpus", 0),
      j.contains("layout") && j["layout"].contains("summary")
          ? j["layout"]["summary"].get<std::string>()
          : std::string("?"),
      j.value("scenario", std::string("?")), num("tokens_per_s_per_gpu"), num("ttft_p99_s"),
      1e3 * num("tpot_p99_s"));
  // With a comparison: the per-GPU ratio on a line of its own (the seed's question).
  if (const auto g = j.find("generation_ratio"); g != j.end() && g->contains("ratio")) {
    out.summary += fmt::format(
        "\n            x{:.2f} tokens/s per GPU over {} (steady-state estimates, "
        "best layout at each step)",
        (*g)["ratio"].get<double>(), g->value("baseline", std::string("?")));
  }
  return out;
}

}  // namespace clustertwin::scenario
