#include "clustertwin/execution/training_calibration.h"

#include "clustertwin/config/reader.h"
#include "clustertwin/execution/serving_calibration.h"
#include "clustertwin/execution/training.h"
#include "clustertwin/hardware/catalog_document.h"

namespace clustertwin::execution {

namespace {
constexpr const char* kPath = "calibration/training.yaml";
}

void TrainingCalibration::apply(TrainingSetup& s) const {
  s.fp8_overhead = fp8_overhead;
  s.host_per_expert_gemm = host_per_expert_gemm;
  s.eager_host_per_layer = eager_host_per_layer;
}

base::Result<TrainingCalibration> training_calibration(const hardware::Catalog& catalog) {
  using Need = config::Reader::Need;
  TrainingCalibration out;
  auto read = hardware::read_catalog_document(
      catalog, kPath, "the training step model's fitted constants", [&](config::Reader& top) {
        out.path = top.context().file;
        if (auto c = top.child("training_calibration")) {
          if (auto e = c->cited_figure_entry("fp8_overhead", out.sources, Need::kRequired)) {
            out.fp8_overhead = e->number("value", Need::kRequired, 0.0, 10.0).value_or(0.0);
            e->finish();
          }
          if (auto e =
                  c->cited_figure_entry("host_per_expert_gemm", out.sources, Need::kRequired)) {
            out.host_per_expert_gemm = e->quantity<base::Seconds>("value", Need::kRequired, true)
                                           .value_or(base::Seconds{});
            if (out.host_per_expert_gemm.base() > 1.0) {
              e->error("host_per_expert_gemm: expected at most 1 s per GEMM issue, got " +
                           std::to_string(out.host_per_expert_gemm.base()) + " s",
                       "value");
            }
            e->finish();
          }
          c->finish();
        }
      });
  if (!read) return base::fail(read.error());
  auto serving = serving_step_calibration(catalog);
  if (!serving) return base::fail(serving.error());
  out.eager_host_per_layer = serving->eager_host_per_layer;
  return out;
}

}  // namespace clustertwin::execution
