#include "clustertwin/execution/serving_calibration.h"

#include "clustertwin/config/reader.h"
#include "clustertwin/hardware/catalog_document.h"

namespace clustertwin::execution {

namespace {
constexpr const char* kPath = "calibration/serving.yaml";
}

void ServingStepCalibration::apply(StepCalibration& c) const {
  c.stream_host_per_response_s = stream_host_per_response.base();
  c.eager_host_per_layer_s = eager_host_per_layer.base();
  c.engine_host_per_iteration_s = engine_host_per_iteration.base();
}

void ServingStepCalibration::apply(workload::ServingLayout& l) const { l.tp_overlap = tp_overlap; }

void ServingStepCalibration::apply(ServingSetup& s) const {
  apply(s.calibration);
  apply(s.layout);
}

void ServingStepCalibration::apply(StepSetup& s) const {
  apply(s.calibration);
  s.tp_overlap = tp_overlap;
}

base::Result<ServingStepCalibration> serving_step_calibration(const hardware::Catalog& catalog) {
  using Need = config::Reader::Need;
  ServingStepCalibration out;
  auto read = hardware::read_catalog_document(
      catalog, kPath, "the serving step model's fitted constants", [&](config::Reader& top) {
        out.path = top.context().file;
        // A host time per response, per layer or per iteration above this is not the serving
        // loop the step model describes (an iteration of milliseconds); the bound catches a unit
        // slip (1.11 s for ms).
        constexpr double kMaxHost = 0.1;
        auto host_time = [&](config::Reader& c, const char* key, base::Seconds& into) {
          if (auto e = c.cited_figure_entry(key, out.sources, Need::kRequired)) {
            into = e->quantity<base::Seconds>("value", Need::kRequired, true)
                       .value_or(base::Seconds{});
            if (into.base() > kMaxHost) {
              e->error(std::string(key) + ": expected at most 100 ms, got " +
                           std::to_string(into.base()) + " s",
                       "value");
            }
            e->finish();
          }
        };
        if (auto c = top.child("serving_calibration")) {
          if (auto e = c->cited_figure_entry("tp_overlap", out.sources, Need::kRequired)) {
            out.tp_overlap = e->number("value", Need::kRequired, 0.0, 1.0).value_or(0.0);
            e->finish();
          }
          host_time(*c, "stream_host_per_response", out.stream_host_per_response);
          host_time(*c, "eager_host_per_layer", out.eager_host_per_layer);
          host_time(*c, "engine_host_per_iteration", out.engine_host_per_iteration);
          c->finish();
        }
      });
  if (!read) return base::fail(read.error());
  return out;
}

}  // namespace clustertwin::execution
