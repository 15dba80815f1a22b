// `clustertwin serve`: LLM serving on a cluster: throughput, TTFT/TPOT, the highest request rate
// that meets MLPerf's latency limits, and (--serving auto) the best layout with its Pareto
// frontier. Example: clustertwin serve --cluster azure-ndv6-gb300 --gpus 72 --model deepseek-r1
//                    --scenario server

#include <iostream>

#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/serving.h"
#include "commands.h"
#include "field_options.h"

namespace clustertwin::app {
namespace {

struct ServeCli {
  scenario::ServingRequest request;
  std::string json, trace, format = "text";
};

int serve(const Context& ctx, const ServeCli& o) {
  auto run = scenario::run_serving(ctx, o.request, ctx.quiet, o.trace);
  if (!run) return bad_input(run.error());
  const auto& out = *run;
  report::Json j = {{"inference", out.json}};
  if (out.power) j["power"] = out.power->json;
  if (!o.json.empty()) {
    if (auto st = report::write_json(j, o.json); !st) return bad_input(st.error());
  }
  if (o.json != "-") {
    if (o.format == "json") {
      std::cout << report::dump(j);
    } else if (o.format == "csv") {
      std::cout << out.csv;
    } else {
      std::cout << out.text;
      if (out.power) std::cout << out.power->text;
    }
  }
  return kExitOk;
}

}  // namespace

Verb add_serve(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<ServeCli>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "LLM serving on a cluster: tokens/s per GPU and per user, TTFT and TPOT percentiles, the "
      "highest request rate meeting MLPerf's p99 limits, and with --serving auto the best layout "
      "and the Pareto frontier.\n"
      "Example: clustertwin serve --cluster azure-ndv6-gb300 --gpus 72 --model deepseek-r1 "
      "--scenario server");
  add_fields(cmd, scenario::serving_fields(), o->request, scenario::serving_words());
  cmd->add_option("--format", o->format, "text, json or csv (the searched points)")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->capture_default_str();
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  cmd->add_option("--trace", o->trace, "write a Chrome trace of batches per instance to FILE");
  return {cmd, [&ctx, o] { return serve(ctx, *o); }};
}

}  // namespace clustertwin::app
