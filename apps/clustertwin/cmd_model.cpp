// `clustertwin model list` and `clustertwin model show NAME|FILE|gpt [--json FILE|-]`: what a
// model is (architecture, parameters, FLOPs and bytes per token, layer structure), computed by
// the models layer from the catalog entry, a model YAML file, a Hugging Face config.json or the
// custom-GPT flags (docs/models/models.md). The pages are the library's (scenario/catalog.h).

#include <iostream>

#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/catalog.h"
#include "commands.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct ModelOptions {
  scenario::ModelQuery query;
  std::string json;
};

int list(const Context& ctx) {
  auto text = scenario::model_list(ctx);
  if (!text) return bad_input(text.error());
  std::cout << *text;
  return kExitOk;
}

int show(const Context& ctx, const ModelOptions& o) {
  auto page = scenario::model_show(ctx, o.query);
  if (!page) return bad_input(page.error());
  if (!o.json.empty()) {
    if (auto st = report::write_json(page->json, o.json); !st) return bad_input(st.error());
    if (o.json == "-") return kExitOk;
  }
  std::cout << page->text;
  return kExitOk;
}

}  // namespace

Verb add_model(CLI::App& app, const Context& ctx) {
  auto opts = std::make_shared<ModelOptions>();
  auto& q = opts->query;
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
  show_cmd->add_option("model", q.name, "catalog name, FILE, or gpt")->required();
  show_cmd->add_option("--json", opts->json, "write JSON to FILE ('-' for stdout)");
  show_cmd->add_option("--seq-len", q.seq_len, "sequence length for FLOPs per token")
      ->capture_default_str()
      ->check(flags::positive(q.seq_len, base::kMaxSequence));
  show_cmd->add_option("--layers", q.layers, "custom GPT: layers")
      ->check(flags::positive(q.layers, base::kMaxLayers));
  show_cmd->add_option("--hidden", q.hidden, "custom GPT: hidden size")
      ->check(flags::positive(q.hidden, base::kMaxModelDim));
  show_cmd->add_option("--heads", q.heads, "custom GPT: attention heads")
      ->check(flags::positive(q.heads, base::kMaxModelDim));
  show_cmd->add_option("--kv-heads", q.kv_heads, "custom GPT: key/value heads (default: heads)")
      ->check(flags::positive(q.kv_heads, base::kMaxModelDim));
  show_cmd->add_option("--ffn", q.ffn, "custom GPT: MLP width (default: 4 x hidden)")
      ->check(flags::positive(q.ffn, base::kMaxModelDim));
  show_cmd->add_option("--vocab", q.vocab, "custom GPT: vocabulary")
      ->capture_default_str()
      ->check(flags::positive(q.vocab, base::kMaxModelDim));
  return {cmd,
          [&ctx, opts, list_cmd] { return list_cmd->parsed() ? list(ctx) : show(ctx, *opts); }};
}

}  // namespace clustertwin::app
