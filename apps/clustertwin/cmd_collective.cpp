// `clustertwin collective --cluster C --gpus N --op OP ...`: the nccl-tests table for a collective
// on a cluster (docs/models/collectives.md). Parsing and orchestration only; the numbers come
// from the collective layer (collective::run_sweep).

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "clustertwin/collective/moe_a2a.h"
#include "clustertwin/collective/sweep.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/report/json_out.h"
#include "commands.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct CollectiveOptions {
  std::string cluster = "azure-ndv6-gb300";
  int gpus = 0;
  int gpus_per_domain = 0;
  std::string op = "all_reduce";
  std::string min_bytes = "8";
  std::string max_bytes = "16G";
  double step_factor = 2;
  std::string step_bytes = "0";
  std::string algo = "auto";
  std::string protocol = "auto";
  std::string model = "flow";
  std::string routing = "spray";
  std::string dtype = "float";
  int channels = 0;
  std::string calibration;
  std::string sharp;
  std::string tuner;  // empty: collective::resolve_tuner's rule
  std::string impl;
  std::string moe = "deepseek-v3";
  std::string tokens = "1,128,2048";
  int64_t token_bytes = 0;
  std::string phase = "dispatch";
  bool balanced = false;
  std::string json;
  std::string format = "table";
};

/// `--op all_to_all --impl KERNEL`: MoE dispatch or combine at several token counts.
int run_moe(const hardware::Catalog& cat, const CollectiveOptions& o) {
  collective::MoeSweepSpec s;
  s.cluster = o.cluster;
  s.gpus = o.gpus;
  s.gpus_per_domain = o.gpus_per_domain;
  auto impl = collective::parse_a2a_impl(o.impl);
  if (!impl) return bad_input("--impl: " + impl.error().message);
  s.request.impl = *impl;
  s.request.combine = o.phase == "combine";
  auto model = models::load_model(cat, o.moe);
  if (!model) return bad_input("--moe: " + model.error().message);
  if (!model->moe || model->moe->experts < 1)
    return bad_input("--moe: " + o.moe + " has no routed experts");
  s.request.routing = {.experts = model->moe->experts,
                       .topk = model->moe->topk,
                       .groups = model->moe->groups,
                       .topk_groups = model->moe->topk_groups,
                       .balanced = o.balanced};
  s.routing_from = o.moe;
  // Default payload: the hidden state in bf16 (dispatch and combine of most frameworks).
  s.request.token_bytes = o.token_bytes > 0 ? o.token_bytes : model->hidden * 2;
  s.tokens.clear();
  std::stringstream list(o.tokens);
  for (std::string item; std::getline(list, item, ',');) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 1'000'000'000) {
      return bad_input("--tokens: expected a comma-separated list of integers in [1, 1e9], got '" +
                       o.tokens + "'");
    }
    s.tokens.push_back(v);
  }
  auto r = collective::run_moe_sweep(cat, s);
  if (!r) return bad_input(r.error());
  if (!o.json.empty()) {
    if (auto st = report::write_json(collective::moe_to_json(*r), o.json); !st)
      return bad_input(st.error());
  }
  if (o.json != "-") {
    if (o.format == "json") {
      std::cout << report::dump(collective::moe_to_json(*r));
    } else {
      std::cout << collective::render_moe_table(*r);
    }
  }
  return kExitOk;
}

int run(const Context& ctx, const CollectiveOptions& o) {
  auto cat = ctx.load_catalog();
  if (!cat) return bad_input(cat.error());
  if (!o.impl.empty()) {
    if (o.op != "all_to_all")
      return bad_input("--impl: expected --op all_to_all, got --op " + o.op);
    return run_moe(*cat, o);
  }
  collective::SweepSpec s;
  s.cluster = o.cluster;
  s.gpus = o.gpus;
  s.gpus_per_domain = o.gpus_per_domain;
  s.step_factor = o.step_factor;
  s.channels = o.channels;
  s.calibration = o.calibration;
  s.routing = o.routing == "ecmp"       ? network::Routing::kEcmp
              : o.routing == "adaptive" ? network::Routing::kAdaptive
                                        : network::Routing::kSpray;
  auto with_flag = [](const char* flag, const base::Error& e) {
    return bad_input(std::string(flag) + ": " + e.message);
  };
  auto op = collective::parse_op(o.op);
  if (!op) return with_flag("--op", op.error());
  s.op = *op;
  auto lo = collective::parse_size(o.min_bytes);
  if (!lo) return with_flag("--min-bytes", lo.error());
  s.min_bytes = *lo;
  auto hi = collective::parse_size(o.max_bytes);
  if (!hi) return with_flag("--max-bytes", hi.error());
  s.max_bytes = *hi;
  auto step = collective::parse_size(o.step_bytes);
  if (!step) return with_flag("--step-bytes", step.error());
  s.step_bytes = *step;
  auto algo = collective::parse_algorithm(o.algo);
  if (!algo) return with_flag("--algo", algo.error());
  s.algorithm = *algo;
  auto proto = collective::parse_protocol(o.protocol);
  if (!proto) return with_flag("--protocol", proto.error());
  s.protocol = *proto;
  auto model = collective::parse_network_model(o.model);
  if (!model) return with_flag("--model", model.error());
  s.model = *model;
  auto dt = collective::parse_dtype(o.dtype);
  if (!dt) return with_flag("--dtype", dt.error());
  s.dtype = *dt;

  if (!o.sharp.empty()) s.sharp = o.sharp == "on";
  if (!o.tuner.empty()) {  // unset: collective::resolve_tuner's rule
    auto tuner = collective::parse_tuner(o.tuner);
    if (!tuner) return with_flag("--tuner", tuner.error());
    s.tuner = *tuner;
  }
  auto r = collective::run_sweep(*cat, s);
  if (!r) return bad_input(r.error());
  if (!o.json.empty()) {
    if (auto st = report::write_json(collective::to_json(*r), o.json); !st)
      return bad_input(st.error());
  }
  if (o.json != "-") {
    if (o.format == "json") {
      std::cout << report::dump(collective::to_json(*r));
    } else if (o.format == "csv") {
      std::cout << collective::render_csv(*r);
    } else {
      std::cout << collective::render_table(*r);
    }
  }
  return kExitOk;
}

}  // namespace

Verb add_collective(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<CollectiveOptions>();
  CLI::App* cmd = app.add_subcommand(
      "collective",
      "Predicted nccl-tests table for a collective on a cluster: time, algbw and busbw per size "
      "(GB/s = 1e9 B/s, nccl-tests bus bandwidth factors), with the NCCL algorithm and protocol "
      "chosen at each size. Sizes take nccl-tests' K/M/G suffixes (powers of 1024) or units "
      "('1 GB').\n"
      "Example: clustertwin collective --cluster hgx-h100*1 --gpus 8 --op all_reduce "
      "--min-bytes 1M --max-bytes 8G");
  cmd->add_option("--cluster", o->cluster,
                  "catalog cluster name, a cluster YAML file, or SYSTEM*COUNT (e.g. gb300-nvl72*8)")
      ->capture_default_str();
  cmd->add_option("--gpus", o->gpus,
                  "GPUs in the communicator (default: all), packed in NVLink domains")
      ->check(flags::positive(o->gpus, base::kMaxGpus));
  cmd->add_option("--gpus-per-domain", o->gpus_per_domain,
                  "GPUs taken from each NVLink domain (default: fill each domain)")
      ->check(flags::positive(o->gpus_per_domain, base::kMaxGpus));
  cmd->add_option(
         "--op", o->op,
         "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce or sendrecv")
      ->capture_default_str();
  cmd->add_option("--min-bytes,-b", o->min_bytes, "smallest size (nccl-tests -b)")
      ->capture_default_str();
  cmd->add_option("--max-bytes,-e", o->max_bytes, "largest size (nccl-tests -e)")
      ->capture_default_str();
  cmd->add_option("--step-factor,-f", o->step_factor, "multiply the size by this (nccl-tests -f)")
      ->capture_default_str()
      ->check(flags::range(o->step_factor, 1, 1e6));
  cmd->add_option("--step-bytes,-i", o->step_bytes, "add this to the size instead (nccl-tests -i)");
  cmd->add_option("--algo", o->algo,
                  "auto, ring, tree, nvls, nvls_tree, collnet, pat, hierarchical or direct")
      ->capture_default_str();
  cmd->add_option("--protocol", o->protocol, "auto, simple, ll or ll128")->capture_default_str();
  cmd->add_option(
         "--model", o->model,
         "network model: flow (max-min sharing: contention, oversubscription) or analytical")
      ->check(CLI::IsMember({"analytical", "flow"}))
      ->capture_default_str();
  cmd->add_option("--routing", o->routing,
                  "flow model routing across the fabric: spray (adaptive routing in the fluid "
                  "limit), adaptive (8 paths per flow) or ecmp (hash collisions)")
      ->check(CLI::IsMember({"spray", "adaptive", "ecmp"}))
      ->capture_default_str();
  cmd->add_option("--dtype,-d", o->dtype,
                  "element type (nccl-tests names: float, half, bfloat16, int8, ...)")
      ->capture_default_str();
  cmd->add_option("--channels", o->channels, "ring/tree channels (default: the GPU's calibration)")
      ->check(flags::positive(o->channels, collective::kMaxChannels));
  cmd->add_option("--calibration", o->calibration,
                  "a calibration profile (from `clustertwin calibrate --out`) or the name of a "
                  "built-in one (`clustertwin calibrate --list`), laid over the catalog's");
  cmd->add_option("--sharp", o->sharp,
                  "SHARP in-network reduction (CollNet, multi-node NVLS): on or off (default: the "
                  "cluster's scale_out.sharp, off unless set, as NCCL without its SHARP plugin)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option(
         "--tuner", o->tuner,
         "how auto picks across NVLink domains: nccl (what NCCL's own tuner runs) or "
         "fastest (the line this model predicts fastest, as forcing NCCL_ALGO/NCCL_PROTO "
         "to the best would); default nccl, fastest with --calibration (a profile's lines are what "
         "NCCL ran on the cluster it was fitted to)")
      ->check(CLI::IsMember({"nccl", "fastest"}));
  cmd->add_option("--impl", o->impl,
                  "MoE dispatch/combine kernel for --op all_to_all: nccl, deepep-normal, "
                  "deepep-ll or nvlink-onesided (docs/models/collectives.md, MoE all-to-all)")
      ->check(CLI::IsMember({"nccl", "deepep-normal", "deepep-ll", "nvlink-onesided"}));
  cmd->add_option("--moe", o->moe, "with --impl: the MoE model whose routing is used")
      ->capture_default_str();
  cmd->add_option("--tokens", o->tokens, "with --impl: tokens per rank, a comma-separated list")
      ->capture_default_str();
  cmd->add_option("--token-bytes", o->token_bytes,
                  "with --impl: payload bytes per token (default: hidden x 2, bf16)")
      ->check(flags::range(o->token_bytes, 1, double(int64_t{1} << 30)));
  cmd->add_option("--phase", o->phase, "with --impl: dispatch or combine")
      ->check(CLI::IsMember({"dispatch", "combine"}))
      ->capture_default_str();
  cmd->add_flag("--balanced", o->balanced,
                "with --impl: a perfect router (each token's experts on min(ranks, topk) ranks)");
  cmd->add_option("--json", o->json, "write the results as JSON to FILE ('-' for stdout)");
  cmd->add_option("--format", o->format, "stdout format")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  return {cmd, [&ctx, o] { return run(ctx, *o); }};
}

}  // namespace clustertwin::app
