#pragma once
/// Where ModelSpecs come from: catalog/models/*.yaml (top key `model:`, every figure with its
/// source), a user's YAML file of the same shape, a Hugging Face `config.json`
/// (LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, DeepseekV3ForCausalLM,
/// DeepseekV2ForCausalLM), or a custom dense GPT from its hyper-parameters.

#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/models/model.h"

namespace clustertwin::models {

/// Every model in the catalog, sorted by name; all errors of all model files at once.
base::Result<std::vector<ModelSpec>> catalog_models(const hardware::Catalog& catalog);

/// What users type after --model: a catalog name (`llama3.1-405b`), a YAML file holding a
/// `model:` mapping, or a Hugging Face config.json (a JSON file with `architectures`).
/// An unknown name suggests the closest catalog names.
base::Result<ModelSpec> load_model(const hardware::Catalog& catalog, std::string_view name_or_path);

/// Parses a `model:` document (catalog or user file); `file` names it in messages.
base::Result<ModelSpec> parse_model_yaml(std::string_view text, const std::string& file);

/// Parses a Hugging Face config.json. Unknown keys are ignored (those files carry many that do
/// not matter here); missing required keys and unsupported architectures are errors.
base::Result<ModelSpec> parse_hf_config(std::string_view text, const std::string& file);

/// A Megatron-style dense GPT (GELU MLP, LayerNorm, learned positions, biases, tied
/// embeddings), as `--model gpt --layers 128 --hidden 25600 --heads 160` builds it.
struct GptParams {
  int layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;  ///< 0: = heads
  int64_t ffn = 0;       ///< 0: 4 x hidden
  int64_t vocab = 51200;
  int64_t seq_len = 2048;
  std::string name = "gpt";
};
base::Result<ModelSpec> gpt_model(const GptParams& p);

}  // namespace clustertwin::models
