#pragma once
/// Rendering of `clustertwin model show`: what a model is (architecture, parameters, FLOPs and
/// bytes per token, weights and KV cache, the layer structure as op tables), as JSON and as a
/// text page, from the models layer's figures (docs/models/models.md).

#include <cstdint>
#include <string>

#include "clustertwin/models/model_catalog.h"
#include "clustertwin/report/json_out.h"

namespace clustertwin::report {

/// The JSON and the text page of one model; FLOPs per token at `seq_len`.
struct ModelPage {
  Json json;
  std::string text;
};
ModelPage model_page(const models::ModelSpec& m, int64_t seq_len);

}  // namespace clustertwin::report
