#include "clustertwin/execution/training_calibration.h"

#include "clustertwin/config/reader.h"
#include "clustertwin/execution/serving_calibration.h"
#include "clustertwin/execution/training.h"

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
  for (const auto& f : catalog.other_files()) {
    if (f.path != kPath) continue;
    auto doc = config::parse_document(f.text, "catalog/" + f.path);
    if (!doc) return base::fail(doc.error());
    config::ReadContext ctx{.file = doc->file};
    config::Reader top(doc->root, ctx);
    top.read_sources();
    TrainingCalibration out;
    out.path = doc->file;
    if (auto c = top.child("training_calibration")) {
      if (auto e = c->cited_figure_entry("fp8_overhead", out.sources, Need::kRequired)) {
        out.fp8_overhead = e->number("value", Need::kRequired, 0.0, 10.0).value_or(0.0);
        e->finish();
      }
      if (auto e = c->cited_figure_entry("host_per_expert_gemm", out.sources, Need::kRequired)) {
        out.host_per_expert_gemm =
            e->quantity<base::Seconds>("value", Need::kRequired, true).value_or(base::Seconds{});
        if (out.host_per_expert_gemm.base() > 1.0) {
          e->error("host_per_expert_gemm: expected at most 1 s per GEMM issue, got " +
                       std::to_string(out.host_per_expert_gemm.base()) + " s",
                   "value");
        }
        e->finish();
      }
      c->finish();
    }
    top.finish();
    if (!ctx.errors.empty()) return base::fail(ctx.errors.combined());
    auto serving = serving_step_calibration(catalog);
    if (!serving) return base::fail(serving.error());
    out.eager_host_per_layer = serving->eager_host_per_layer;
    return out;
  }
  return base::fail(std::string("the catalog has no ") + kPath +
                    " (the training step model's fitted constants)");
}

}  // namespace clustertwin::execution
