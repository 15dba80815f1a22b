// `clustertwin model list` and `clustertwin model show NAME|FILE|gpt [--json FILE|-]`: what a
// model is (architecture, parameters, FLOPs and bytes per token, layer structure), computed by
// the models layer from the catalog entry, a model YAML file, a Hugging Face config.json or the
// custom-GPT flags (docs/models/models.md).

#include <iostream>

#include "clustertwin/base/text.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/report/model.h"
#include "clustertwin/report/table.h"
#include "commands.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct ModelOptions {
  std::string name;
  std::string json;
  int64_t seq_len = 4096;
  // Custom GPT (`model show gpt --layers .. --hidden .. --heads ..`).
  int layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t ffn = 0;
  int64_t vocab = 51200;
};

std::string billions(double v) { return base::format_sig(v / 1e9, 4) + " B"; }

base::Result<models::ModelSpec> resolve(const Context& ctx, const ModelOptions& o) {
  if (o.name == "gpt") {
    if (o.layers <= 0 || o.hidden <= 0 || o.heads <= 0) {
      return base::fail(
          "model gpt: --layers, --hidden and --heads are required (e.g. --layers 128 "
          "--hidden 25600 --heads 160)");
    }
    return models::gpt_model({.layers = o.layers,
                              .hidden = o.hidden,
                              .heads = o.heads,
                              .kv_heads = o.kv_heads,
                              .ffn = o.ffn,
                              .vocab = o.vocab,
                              .seq_len = o.seq_len});
  }
  auto cat = ctx.load_catalog();
  if (!cat) return base::fail(cat.error());
  return models::load_model(*cat, o.name);
}

int list(const Context& ctx) {
  auto cat = ctx.load_catalog();
  if (!cat) return bad_input(cat.error());
  auto all = models::catalog_models(*cat);
  if (!all) return bad_input(all.error());
  report::Table t({"name", "params", "active", "layers", "description"},
                  {true, false, false, false, true});
  for (const auto& m : *all) {
    const auto c = models::count_params(m);
    t.add(
        {m.name, billions(c.total), billions(c.active), std::to_string(m.layers), m.display_name});
  }
  std::cout << t.render();
  return kExitOk;
}

int show(const Context& ctx, const ModelOptions& o) {
  auto spec = resolve(ctx, o);
  if (!spec) return bad_input(spec.error());
  const auto page = report::model_page(*spec, o.seq_len);
  if (!o.json.empty()) {
    if (auto st = report::write_json(page.json, o.json); !st) return bad_input(st.error());
    if (o.json == "-") return kExitOk;
  }
  std::cout << page.text;
  return kExitOk;
}

}  // namespace

Verb add_model(CLI::App& app, const Context& ctx) {
  auto opts = std::make_shared<ModelOptions>();
  CLI::App* cmd = app.add_subcommand(
      "model",
      "LLM architectures: parameters, FLOPs and bytes per token, layer structure.\n"
      "Example: clustertwin model show deepseek-r1");
  cmd->require_subcommand(1);
  CLI::App* list_cmd =
      cmd->add_subcommand("list", "the catalog's models\nExample: clustertwin model list");
  CLI::App* show_cmd = cmd->add_subcommand(
      "show",
      "one model: a catalog name, a model YAML file, a Hugging Face config.json, or 'gpt' "
      "with --layers --hidden --heads\nExample: clustertwin model show llama3.1-405b --json -");
  show_cmd->add_option("model", opts->name, "catalog name, FILE, or gpt")->required();
  show_cmd->add_option("--json", opts->json, "write JSON to FILE ('-' for stdout)");
  show_cmd->add_option("--seq-len", opts->seq_len, "sequence length for FLOPs per token")
      ->capture_default_str()
      ->check(flags::positive(opts->seq_len, base::kMaxSequence));
  show_cmd->add_option("--layers", opts->layers, "custom GPT: layers")
      ->check(flags::positive(opts->layers, base::kMaxLayers));
  show_cmd->add_option("--hidden", opts->hidden, "custom GPT: hidden size")
      ->check(flags::positive(opts->hidden, base::kMaxModelDim));
  show_cmd->add_option("--heads", opts->heads, "custom GPT: attention heads")
      ->check(flags::positive(opts->heads, base::kMaxModelDim));
  show_cmd->add_option("--kv-heads", opts->kv_heads, "custom GPT: key/value heads (default: heads)")
      ->check(flags::positive(opts->kv_heads, base::kMaxModelDim));
  show_cmd->add_option("--ffn", opts->ffn, "custom GPT: MLP width (default: 4 x hidden)")
      ->check(flags::positive(opts->ffn, base::kMaxModelDim));
  show_cmd->add_option("--vocab", opts->vocab, "custom GPT: vocabulary")
      ->capture_default_str()
      ->check(flags::positive(opts->vocab, base::kMaxModelDim));
  return {cmd,
          [&ctx, opts, list_cmd] { return list_cmd->parsed() ? list(ctx) : show(ctx, *opts); }};
}

}  // namespace clustertwin::app
