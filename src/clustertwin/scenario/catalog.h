#pragma once
/// What the catalog holds, as `catalog list`, `catalog show` and `model list|show` print it:
/// entries by kind (hardware and models), every figure of one entry with the source it was taken
/// from, and one model's page (the catalog's, a model file, a Hugging Face config.json or a
/// custom GPT).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/scenario/environment.h"

namespace clustertwin::scenario {

/// The kinds `catalog list` takes, in the order it lists them.
const std::vector<std::string>& catalog_kinds();

/// The table of every entry of one kind (`kind` empty: all kinds, models last).
base::Result<std::string> catalog_list(const Environment& env, const std::string& kind = {});

/// One hardware entry: every figure with its source, as JSON and as a text table.
struct CatalogEntry {
  nlohmann::json json;
  std::string text;
};
base::Result<CatalogEntry> catalog_show(const Environment& env, const std::string& name);

/// The catalog's models: name, parameters (total, active), layers, description.
base::Result<std::string> model_list(const Environment& env);

/// A model to show: a catalog name, a model YAML file, a Hugging Face config.json, or "gpt" with
/// the custom GPT's dimensions.
struct ModelQuery {
  std::string name;
  int64_t seq_len = 4096;  ///< sequence length for FLOPs per token
  int layers = 0;
  int64_t hidden = 0, heads = 0, kv_heads = 0, ffn = 0;
  int64_t vocab = 51200;
};
/// The model's page (report::model_page): JSON and text.
base::Result<CatalogEntry> model_show(const Environment& env, const ModelQuery& q);

}  // namespace clustertwin::scenario
