// `clustertwin catalog list [KIND]` and `clustertwin catalog show NAME`: what the catalog holds,
// every figure with the source it was taken from.

#include <yaml-cpp/yaml.h>

#include <iostream>

#include "clustertwin/base/text.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/report/table.h"
#include "commands.h"

namespace clustertwin::app {
namespace {

struct CatalogOptions {
  std::string kind;
  std::string name;
  std::string json;
};

const std::vector<std::string> kKinds = {"gpus",         "cpus",    "nics",    "switches",
                                         "transceivers", "systems", "clusters"};

template <class Map>
void list_into(report::Table& t, const std::string& kind, const Map& m) {
  for (const auto& [name, spec] : m) t.add({kind, name, spec.display_name});
}

int list(const Context& ctx, const CatalogOptions& o) {
  auto cat = ctx.load_catalog();
  if (!cat) return bad_input(cat.error());
  if (!o.kind.empty() && std::find(kKinds.begin(), kKinds.end(), o.kind) == kKinds.end()) {
    return bad_input("catalog list: unknown kind '" + o.kind + "'" +
                     base::did_you_mean(o.kind, kKinds));
  }
  report::Table t({"kind", "name", "description"}, {true, true, true});
  auto want = [&](const char* k) { return o.kind.empty() || o.kind == k; };
  if (want("gpus")) list_into(t, "gpu", cat->gpus());
  if (want("cpus")) list_into(t, "cpu", cat->cpus());
  if (want("nics")) list_into(t, "nic", cat->nics());
  if (want("switches")) list_into(t, "switch", cat->switches());
  if (want("transceivers")) list_into(t, "transceiver", cat->transceivers());
  if (want("systems")) list_into(t, "system", cat->systems());
  if (want("clusters")) list_into(t, "cluster", cat->clusters());
  std::cout << t.render();
  return kExitOk;
}

// Walks an entry's YAML: `{value, source}` mappings are figures; other scalars are plain fields.
void walk(const YAML::Node& n, const std::string& path,
          const std::map<std::string, std::string>& sources, report::Table& t, report::Json& j) {
  if (n.IsMap()) {
    if (n["value"] && n["source"]) {
      std::string value = n["value"].Scalar();
      if (n["sparse"]) value += " (sparse " + n["sparse"].Scalar() + ")";
      const std::string ref = n["source"].Scalar();
      auto it = sources.find(ref);
      std::string cite = it == sources.end() ? ref : it->second;
      if (n["note"]) cite = n["note"].Scalar() + "; " + cite;
      t.add({path, value, cite});
      j[path] = {{"value", value}, {"source", cite}};
      return;
    }
    for (const auto& kv : n) {
      walk(kv.second, path.empty() ? kv.first.Scalar() : path + "." + kv.first.Scalar(), sources, t,
           j);
    }
    return;
  }
  if (n.IsSequence()) {
    std::string v;
    for (const auto& item : n) v += (v.empty() ? "" : ", ") + item.Scalar();
    t.add({path, v, ""});
    j[path] = {{"value", v}};
    return;
  }
  t.add({path, n.Scalar(), ""});
  j[path] = {{"value", n.Scalar()}};
}

int show(const Context& ctx, const CatalogOptions& o) {
  auto cat = ctx.load_catalog();
  if (!cat) return bad_input(cat.error());
  const hardware::CatalogFile* file = nullptr;
  std::vector<std::string> known;
  for (const char* kind : {"gpu", "cpu", "nic", "switch", "transceiver", "system", "cluster"}) {
    if (!file) file = cat->source_file(kind, o.name);
  }
  if (!file) {
    for (const auto& [k, v] : cat->gpus()) known.push_back(k);
    for (const auto& [k, v] : cat->cpus()) known.push_back(k);
    for (const auto& [k, v] : cat->nics()) known.push_back(k);
    for (const auto& [k, v] : cat->switches()) known.push_back(k);
    for (const auto& [k, v] : cat->transceivers()) known.push_back(k);
    for (const auto& [k, v] : cat->systems()) known.push_back(k);
    for (const auto& [k, v] : cat->clusters()) known.push_back(k);
    return bad_input("catalog show: unknown name '" + o.name + "'" +
                     base::did_you_mean(o.name, known));
  }
  YAML::Node root = YAML::Load(file->text);
  std::map<std::string, std::string> sources;
  if (root["sources"]) {
    for (const auto& kv : root["sources"]) sources[kv.first.Scalar()] = kv.second.Scalar();
  }
  report::Table t({"field", "value", "source"}, {true, true, true});
  report::Json j = report::Json::object();
  for (const auto& kv : root) {
    if (kv.first.Scalar() == "sources") continue;
    walk(kv.second, "", sources, t, j);
  }
  if (!o.json.empty()) {
    report::Json out = {{"name", o.name}, {"file", file->path}, {"fields", j}};
    if (auto st = report::write_json(out, o.json); !st) return bad_input(st.error());
    if (o.json == "-") return kExitOk;
  }
  std::cout << o.name << " (" << file->path << ")\n" << t.render(2);
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
  list_cmd->add_option("kind", opts->kind,
                       "gpus, cpus, nics, switches, transceivers, systems, clusters");
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
