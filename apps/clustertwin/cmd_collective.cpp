// `clustertwin collective --cluster C --gpus N --op OP ...`: the nccl-tests table for a collective
// on a cluster (docs/models/collectives.md). The request, its flags and its run are the
// library's (scenario/collective.h); this is the door.

#include <iostream>

#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/collective.h"
#include "commands.h"
#include "field_options.h"

namespace clustertwin::app {
namespace {

struct CollectiveCli {
  scenario::CollectiveRequest request;
  std::string json;
  std::string format = "table";
};

int collective(const Context& ctx, const CollectiveCli& o) {
  auto r = scenario::run_collective(ctx, o.request);
  if (!r) return bad_input(r.error());
  if (!o.json.empty()) {
    if (auto st = report::write_json(r->json, o.json); !st) return bad_input(st.error());
  }
  if (o.json == "-") return kExitOk;
  if (o.format == "json") {
    std::cout << report::dump(r->json);
  } else if (o.format == "csv" && !r->csv.empty()) {
    std::cout << r->csv;
  } else {
    std::cout << r->table;
  }
  return kExitOk;
}

}  // namespace

Verb add_collective(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<CollectiveCli>();
  CLI::App* cmd = app.add_subcommand(
      "collective",
      "Predicted nccl-tests table for a collective on a cluster: time, algbw and busbw per size "
      "(GB/s = 1e9 B/s, nccl-tests bus bandwidth factors), with the NCCL algorithm and protocol "
      "chosen at each size. Sizes take nccl-tests' K/M/G suffixes (powers of 1024) or units "
      "('1 GB').\n"
      "Example: clustertwin collective --cluster hgx-h100*1 --gpus 8 --op all_reduce "
      "--min-bytes 1M --max-bytes 8G");
  add_fields(cmd, scenario::collective_fields(), o->request, scenario::collective_words());
  cmd->add_option("--json", o->json, "write the results as JSON to FILE ('-' for stdout)");
  cmd->add_option("--format", o->format, "stdout format")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  return {cmd, [&ctx, o] { return collective(ctx, *o); }};
}

}  // namespace clustertwin::app
