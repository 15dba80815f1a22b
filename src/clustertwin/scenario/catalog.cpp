// `catalog list|show` and `model list|show` as library calls (moved from
// apps/clustertwin/cmd_catalog.cpp and cmd_model.cpp).

#include "clustertwin/scenario/catalog.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "clustertwin/base/text.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/report/model.h"
#include "clustertwin/report/table.h"

namespace clustertwin::scenario {
namespace {

template <class Map>
void list_into(report::Table& t, const std::string& kind, const Map& m) {
  for (const auto& [name, spec] : m) t.add({kind, name, spec.display_name});
}

// Walks an entry's YAML: `{value, source}` mappings are figures; other scalars are plain fields.
void walk(const YAML::Node& n, const std::string& path,
          const std::map<std::string, std::string>& sources, report::Table& t, nlohmann::json& j) {
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

std::string billions(double v) { return base::format_sig(v / 1e9, 4) + " B"; }

}  // namespace

const std::vector<std::string>& catalog_kinds() {
  static const std::vector<std::string> kKinds = {"gpus",         "cpus",    "nics",     "switches",
                                                  "transceivers", "systems", "clusters", "models"};
  return kKinds;
}

base::Result<std::string> catalog_list(const Environment& env, const std::string& kind) {
  auto cat = env.load_catalog();
  if (!cat) return base::fail(cat.error());
  const auto& kinds = catalog_kinds();
  if (!kind.empty() && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    return base::fail("catalog list: unknown kind '" + kind + "'" +
                      base::did_you_mean(kind, kinds));
  }
  report::Table t({"kind", "name", "description"}, {true, true, true});
  auto want = [&](const char* k) { return kind.empty() || kind == k; };
  if (want("gpus")) list_into(t, "gpu", cat->gpus());
  if (want("cpus")) list_into(t, "cpu", cat->cpus());
  if (want("nics")) list_into(t, "nic", cat->nics());
  if (want("switches")) list_into(t, "switch", cat->switches());
  if (want("transceivers")) list_into(t, "transceiver", cat->transceivers());
  if (want("systems")) list_into(t, "system", cat->systems());
  if (want("clusters")) list_into(t, "cluster", cat->clusters());
  if (want("models")) {
    auto all = models::catalog_models(*cat);
    if (!all) return base::fail(all.error());
    for (const auto& m : *all) t.add({"model", m.name, m.display_name});
  }
  return t.render();
}

base::Result<CatalogEntry> catalog_show(const Environment& env, const std::string& name) {
  auto cat = env.load_catalog();
  if (!cat) return base::fail(cat.error());
  const hardware::CatalogFile* file = nullptr;
  for (const char* kind : {"gpu", "cpu", "nic", "switch", "transceiver", "system", "cluster"}) {
    if (!file) file = cat->source_file(kind, name);
  }
  if (!file) {
    std::vector<std::string> known;
    auto add = [&known](const auto& m) {
      for (const auto& [k, v] : m) known.push_back(k);
    };
    add(cat->gpus());
    add(cat->cpus());
    add(cat->nics());
    add(cat->switches());
    add(cat->transceivers());
    add(cat->systems());
    add(cat->clusters());
    return base::fail("catalog show: unknown name '" + name + "'" +
                      base::did_you_mean(name, known));
  }
  YAML::Node root = YAML::Load(file->text);
  std::map<std::string, std::string> sources;
  if (root["sources"]) {
    for (const auto& kv : root["sources"]) sources[kv.first.Scalar()] = kv.second.Scalar();
  }
  report::Table t({"field", "value", "source"}, {true, true, true});
  nlohmann::json fields = nlohmann::json::object();
  for (const auto& kv : root) {
    if (kv.first.Scalar() == "sources") continue;
    walk(kv.second, "", sources, t, fields);
  }
  return CatalogEntry{.json = {{"name", name}, {"file", file->path}, {"fields", fields}},
                      .text = name + " (" + file->path + ")\n" + t.render(2)};
}

base::Result<std::string> model_list(const Environment& env) {
  auto cat = env.load_catalog();
  if (!cat) return base::fail(cat.error());
  auto all = models::catalog_models(*cat);
  if (!all) return base::fail(all.error());
  report::Table t({"name", "params", "active", "layers", "description"},
                  {true, false, false, false, true});
  for (const auto& m : *all) {
    const auto c = models::count_params(m);
    t.add(
        {m.name, billions(c.total), billions(c.active), std::to_string(m.layers), m.display_name});
  }
  return t.render();
}

namespace {

base::Result<models::ModelSpec> resolve_model(const Environment& env, const ModelQuery& q) {
  if (q.name == "gpt") {
    if (q.layers <= 0 || q.hidden <= 0 || q.heads <= 0) {
      return base::fail(
          "model gpt: {layers}, {hidden} and {heads} are required (e.g. {layers} 128 "
          "{hidden} 25600 {heads} 160)");
    }
    return models::gpt_model({.layers = q.layers,
                              .hidden = q.hidden,
                              .heads = q.heads,
                              .kv_heads = q.kv_heads,
                              .ffn = q.ffn,
                              .vocab = q.vocab,
                              .seq_len = q.seq_len});
  }
  auto cat = env.load_catalog();
  if (!cat) return base::fail(cat.error());
  return models::load_model(*cat, q.name);
}

}  // namespace

base::Result<CatalogEntry> model_show(const Environment& env, const ModelQuery& q) {
  auto spec = resolve_model(env, q);
  if (!spec) return base::fail(spec.error());
  auto page = report::model_page(*spec, q.seq_len);
  return CatalogEntry{.json = std::move(page.json), .text = std::move(page.text)};
}

}  // namespace clustertwin::scenario
