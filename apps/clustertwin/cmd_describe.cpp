// `clustertwin describe [NAME|FILE|SYSTEM*COUNT] [--json FILE|-]`: what the cluster is.

#include <iostream>

#include "clustertwin/report/json_out.h"
#include "commands.h"

namespace clustertwin::app {
namespace {

struct DescribeOptions {
  std::string cluster = "azure-ndv6-gb300";
  std::string json;
  std::string format = "table";
};

int describe(const Context& ctx, const DescribeOptions& o) {
  auto d = describe_cluster(ctx, o.cluster);
  if (!d) return bad_input(d.error());
  if (!o.json.empty()) {
    if (auto st = report::write_json(d->json, o.json); !st) return bad_input(st.error());
  }
  if (o.json != "-") std::cout << (o.format == "json" ? report::dump(d->json) : d->text);
  return kExitOk;
}

}  // namespace

Verb add_describe(CLI::App& app, const Context& ctx) {
  auto opts = std::make_shared<DescribeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "describe",
      "What a cluster is: GPUs, CPUs, NVLink domains, compute per precision, memory, bandwidth, "
      "fabric switches and nameplate power, all derived from catalog parts.\n"
      "Example: clustertwin describe azure-ndv6-gb300 --json -");
  cmd->add_option("cluster", opts->cluster,
                  "catalog cluster name, a cluster YAML file, or SYSTEM*COUNT (e.g. gb300-nvl72*8)")
      ->capture_default_str();
  cmd->add_option("--cluster", opts->cluster, "same as the positional argument");
  cmd->add_option("--json", opts->json, "write the description as JSON to FILE ('-' for stdout)");
  cmd->add_option("--format", opts->format, "stdout format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  return {cmd, [&ctx, opts] { return describe(ctx, *opts); }};
}

}  // namespace clustertwin::app
