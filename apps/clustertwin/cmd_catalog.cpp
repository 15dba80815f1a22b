// `clustertwin catalog list [KIND]` and `clustertwin catalog show NAME`: what the catalog holds,
// every figure with the source it was taken from. The listing is the library's
// (scenario/catalog.h); this is the door.

#include <iostream>

#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/catalog.h"
#include "commands.h"

namespace clustertwin::app {
namespace {

struct CatalogOptions {
  std::string kind, name, json;
};

int list(const Context& ctx, const CatalogOptions& o) {
  auto text = scenario::catalog_list(ctx, o.kind);
  if (!text) return bad_input(text.error());
  std::cout << *text;
  return kExitOk;
}

int show(const Context& ctx, const CatalogOptions& o) {
  auto entry = scenario::catalog_show(ctx, o.name);
  if (!entry) return bad_input(entry.error());
  if (!o.json.empty()) {
    if (auto st = report::write_json(entry->json, o.json); !st) return bad_input(st.error());
    if (o.json == "-") return kExitOk;
  }
  std::cout << entry->text;
  return kExitOk;
}

}  // namespace

Verb add_catalog(CLI::App& app, const Context& ctx) {
  auto opts = std::make_shared<CatalogOptions>();
  CLI::App* cmd = app.add_subcommand(
      "catalog", "What the built-in catalog holds.\nExample: clustertwin catalog show gb300");
  cmd->require_subcommand(1);
  CLI::App* list_cmd = cmd->add_subcommand("list",
                                           "list entries, optionally of one kind\n"
                                           "Example: clustertwin catalog list systems");
  std::string kinds;
  for (const auto& k : scenario::catalog_kinds()) kinds += (kinds.empty() ? "" : ", ") + k;
  list_cmd->add_option("kind", opts->kind, kinds);
  CLI::App* show_cmd = cmd->add_subcommand("show",
                                           "every figure of one entry with its source\n"
                                           "Example: clustertwin catalog show gb300-nvl72");
  show_cmd->add_option("name", opts->name, "entry name")->required();
  show_cmd->add_option("--json", opts->json, "write JSON to FILE ('-' for stdout)");
  return {cmd, [&ctx, opts, list_cmd] {
            return list_cmd->parsed() ? list(ctx, *opts) : show(ctx, *opts);
          }};
}

}  // namespace clustertwin::app
