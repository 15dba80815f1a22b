// The collective sweep's request, its field table and its run (docs/models/collectives.md for the
// model; DESIGN.md §2 for the field tables). Moved from apps/clustertwin/cmd_collective.cpp.

#include "clustertwin/scenario/collective.h"

#include <cstdlib>
#include <sstream>

#include "clustertwin/collective/moe_a2a.h"
#include "clustertwin/collective/sweep.h"
#include "clustertwin/models/model_catalog.h"

namespace clustertwin::scenario {
namespace {

using R = CollectiveRequest;
using F = Field<R>;

FieldTable<R> make_collective_fields() {
  return {
      F{.key = "cluster",
        .flag = "cluster",
        .name = "cluster",
        .member = &R::cluster,
        .help = "catalog cluster name, a cluster YAML file, or SYSTEM*COUNT (e.g. gb300-nvl72*8)",
        .show_default = true},
      F{.key = "gpus",
        .flag = "gpus",
        .name = "GPUs",
        .member = &R::gpus,
        .help = "GPUs in the communicator (default: all), packed in NVLink domains",
        .ints = positive(base::kMaxGpus)},
      F{.key = "gpus_per_domain",
        .flag = "gpus-per-domain",
        .name = "GPUs per domain",
        .member = &R::gpus_per_domain,
        .help = "GPUs taken from each NVLink domain (default: fill each domain)",
        .ints = positive(base::kMaxGpus)},
      F{.key = "op",
        .flag = "op",
        .name = "collective",
        .member = &R::op,
        .help = "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce or sendrecv",
        .show_default = true},
      F{.key = "min_bytes",
        .flag = "min-bytes",
        .name = "smallest size",
        .member = &R::min_bytes,
        .help = "smallest size (nccl-tests -b)",
        .show_default = true,
        .short_flag = "b"},
      F{.key = "max_bytes",
        .flag = "max-bytes",
        .name = "largest size",
        .member = &R::max_bytes,
        .help = "largest size (nccl-tests -e)",
        .show_default = true,
        .short_flag = "e"},
      F{.key = "step_factor",
        .flag = "step-factor",
        .name = "size factor",
        .member = &R::step_factor,
        .help = "multiply the size by this (nccl-tests -f)",
        .reals = {.min = 1, .max = 1e6},
        .show_default = true,
        .short_flag = "f"},
      F{.key = "step_bytes",
        .flag = "step-bytes",
        .name = "size step",
        .member = &R::step_bytes,
        .help = "add this to the size instead (nccl-tests -i)",
        .short_flag = "i"},
      F{.key = "algo",
        .flag = "algo",
        .name = "algorithm",
        .member = &R::algo,
        .help = "auto, ring, tree, nvls, nvls_tree, collnet, pat, hierarchical or direct",
        .show_default = true},
      F{.key = "protocol",
        .flag = "protocol",
        .name = "protocol",
        .member = &R::protocol,
        .help = "auto, simple, ll or ll128",
        .show_default = true},
      F{.key = "model",
        .flag = "model",
        .name = "network model",
        .member = &R::model,
        .help = "network model: flow (max-min sharing: contention, oversubscription) or analytical",
        .choices = {"analytical", "flow"},
        .show_default = true},
      F{.key = "routing",
        .flag = "routing",
        .name = "routing",
        .member = &R::routing,
        .help = "flow model routing across the fabric: spray (adaptive routing in the fluid "
                "limit), adaptive (8 paths per flow) or ecmp (hash collisions)",
        .choices = {"spray", "adaptive", "ecmp"},
        .show_default = true},
      F{.key = "dtype",
        .flag = "dtype",
        .name = "element type",
        .member = &R::dtype,
        .help = "element type (nccl-tests names: float, half, bfloat16, int8, ...)",
        .show_default = true,
        .short_flag = "d"},
      F{.key = "channels",
        .flag = "channels",
        .name = "channels",
        .member = &R::channels,
        .help = "ring/tree channels (default: the GPU's calibration)",
        .ints = positive(collective::kMaxChannels)},
      F{.key = "calibration",
        .flag = "calibration",
        .name = "calibration profile",
        .member = &R::calibration,
        .help = "a calibration profile (from `clustertwin calibrate --out`) or the name of a "
                "built-in one (`clustertwin calibrate --list`), laid over the catalog's"},
      F{.key = "sharp",
        .flag = "sharp",
        .name = "SHARP",
        .member = &R::sharp,
        .help = "SHARP in-network reduction (CollNet, multi-node NVLS): on or off (default: the "
                "cluster's scale_out.sharp, off unless set, as NCCL without its SHARP plugin)",
        .choices = {"on", "off"}},
      F{.key = "tuner",
        .flag = "tuner",
        .name = "tuner",
        .member = &R::tuner,
        .help = "how auto picks across NVLink domains: nccl (what NCCL's own tuner runs) or "
                "fastest (the line this model predicts fastest, as forcing NCCL_ALGO/NCCL_PROTO "
                "to the best would); default nccl, fastest with {calibration} (a profile's lines "
                "are what NCCL ran on the cluster it was fitted to)",
        .choices = {"nccl", "fastest"}},
      F{.key = "impl",
        .flag = "impl",
        .name = "MoE kernel",
        .member = &R::impl,
        .help = "MoE dispatch/combine kernel for {op} all_to_all: nccl, deepep-normal, "
                "deepep-ll or nvlink-onesided (docs/models/collectives.md, MoE all-to-all)",
        .choices = {"nccl", "deepep-normal", "deepep-ll", "nvlink-onesided"}},
      F{.key = "moe",
        .flag = "moe",
        .name = "MoE model",
        .member = &R::moe,
        .help = "with {impl}: the MoE model whose routing is used",
        .show_default = true},
      F{.key = "tokens",
        .flag = "tokens",
        .name = "tokens per rank",
        .member = &R::tokens,
        .help = "with {impl}: tokens per rank, a comma-separated list",
        .show_default = true},
      F{.key = "token_bytes",
        .flag = "token-bytes",
        .name = "bytes per token",
        .member = &R::token_bytes,
        .help = "with {impl}: payload bytes per token (default: hidden x 2, bf16)",
        .ints = {.min = 1, .max = int64_t{1} << 30}},
      F{.key = "phase",
        .flag = "phase",
        .name = "MoE phase",
        .member = &R::phase,
        .help = "with {impl}: dispatch or combine",
        .choices = {"dispatch", "combine"},
        .show_default = true},
      F{.key = "balanced",
        .flag = "balanced",
        .name = "balanced routing",
        .member = &R::balanced,
        .help = "with {impl}: a perfect router (each token's experts on min(ranks, topk) ranks)"},
  };
}

base::Error about(const char* key, const base::Error& e) {
  base::Error out = e;
  out.message = std::string("{") + key + "}: " + e.message;
  return out;
}

/// `impl`: MoE dispatch or combine at several token counts.
base::Result<CollectiveRun> run_moe(const hardware::Catalog& cat, const R& r) {
  collective::MoeSweepSpec s;
  s.cluster = r.cluster;
  s.gpus = r.gpus;
  s.gpus_per_domain = r.gpus_per_domain;
  auto impl = collective::parse_a2a_impl(r.impl);
  if (!impl) return base::fail(about("impl", impl.error()));
  s.request.impl = *impl;
  s.request.combine = r.phase == "combine";
  auto model = models::load_model(cat, r.moe);
  if (!model) return base::fail(about("moe", model.error()));
  if (!model->moe || model->moe->experts < 1) {
    return base::fail("{moe}: " + r.moe + " has no routed experts");
  }
  s.request.routing = {.experts = model->moe->experts,
                       .topk = model->moe->topk,
                       .groups = model->moe->groups,
                       .topk_groups = model->moe->topk_groups,
                       .balanced = r.balanced};
  s.routing_from = r.moe;
  // Default payload: the hidden state in bf16 (dispatch and combine of most frameworks).
  s.request.token_bytes = r.token_bytes > 0 ? r.token_bytes : model->hidden * 2;
  s.tokens.clear();
  std::stringstream list(r.tokens);
  for (std::string item; std::getline(list, item, ',');) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 1'000'000'000) {
      return base::fail("{tokens}: expected a comma-separated list of integers in [1, 1e9], got '" +
                        r.tokens + "'");
    }
    s.tokens.push_back(v);
  }
  auto run = collective::run_moe_sweep(cat, s);
  if (!run) return base::fail(run.error());
  return CollectiveRun{.json = collective::moe_to_json(*run),
                       .table = collective::render_moe_table(*run),
                       .csv = {}};
}

}  // namespace

const FieldTable<CollectiveRequest>& collective_fields() {
  static const FieldTable<CollectiveRequest> kTable = make_collective_fields();
  return kTable;
}

const std::vector<FieldWord>& collective_words() {
  static const std::vector<FieldWord> kWords = words_of(collective_fields());
  return kWords;
}

base::Result<CollectiveRun> run_collective(const Environment& env, const CollectiveRequest& r) {
  if (auto st = check_fields<R>(r, {&collective_fields()}); !st) return base::fail(st.error());
  auto cat = env.load_catalog();
  if (!cat) return base::fail(cat.error());
  if (!r.impl.empty()) {
    if (r.op != "all_to_all") {
      return base::fail("{impl}: expected {op} all_to_all, got {op} " + r.op);
    }
    return run_moe(*cat, r);
  }
  collective::SweepSpec s;
  s.cluster = r.cluster;
  s.gpus = r.gpus;
  s.gpus_per_domain = r.gpus_per_domain;
  s.step_factor = r.step_factor;
  s.channels = r.channels;
  s.calibration = r.calibration;
  s.routing = r.routing == "ecmp"       ? network::Routing::kEcmp
              : r.routing == "adaptive" ? network::Routing::kAdaptive
                                        : network::Routing::kSpray;
  auto op = collective::parse_op(r.op);
  if (!op) return base::fail(about("op", op.error()));
  s.op = *op;
  auto lo = collective::parse_size(r.min_bytes);
  if (!lo) return base::fail(about("min_bytes", lo.error()));
  s.min_bytes = *lo;
  auto hi = collective::parse_size(r.max_bytes);
  if (!hi) return base::fail(about("max_bytes", hi.error()));
  s.max_bytes = *hi;
  auto step = collective::parse_size(r.step_bytes);
  if (!step) return base::fail(about("step_bytes", step.error()));
  s.step_bytes = *step;
  auto algo = collective::parse_algorithm(r.algo);
  if (!algo) return base::fail(about("algo", algo.error()));
  s.algorithm = *algo;
  auto proto = collective::parse_protocol(r.protocol);
  if (!proto) return base::fail(about("protocol", proto.error()));
  s.protocol = *proto;
  auto model = collective::parse_network_model(r.model);
  if (!model) return base::fail(about("model", model.error()));
  s.model = *model;
  auto dt = collective::parse_dtype(r.dtype);
  if (!dt) return base::fail(about("dtype", dt.error()));
  s.dtype = *dt;
  if (!r.sharp.empty()) s.sharp = r.sharp == "on";
  if (!r.tuner.empty()) {  // unset: collective::resolve_tuner's rule
    auto tuner = collective::parse_tuner(r.tuner);
    if (!tuner) return base::fail(about("tuner", tuner.error()));
    s.tuner = *tuner;
  }
  auto run = collective::run_sweep(*cat, s);
  if (!run) return base::fail(run.error());
  return CollectiveRun{.json = collective::to_json(*run),
                       .table = collective::render_table(*run),
                       .csv = collective::render_csv(*run)};
}

}  // namespace clustertwin::scenario
