#pragma once
/// Request populations for serving (docs/models/inference.md, "request lengths"): the input and
/// output token-length distributions of MLPerf Inference's LLM datasets (catalog/datasets/*.yaml,
/// every figure with its source), the scenario's latency limits, and seeded sampling.
///
/// A length distribution is a piecewise-linear quantile function through the published
/// percentiles (min, p10, p25, p50, p75, p90, p95, p99, max), scaled by one factor so that its
/// mean equals the stated mean (the dataset mean for inputs; for outputs, what the serving engines
/// generate, which differs from the reference answers by a few percent), then clamped to the
/// maximum. Input and output lengths are coupled by a Gaussian copula with the published Pearson
/// correlation (DeepSeek-R1: short prompts, long reasoning).
///
/// Random numbers: our own tiny transforms (uniform from 53 bits, Box-Muller normal, inverse-CDF
/// exponential) over std::mt19937_64, whose output sequence the standard fixes; libstdc++'s
/// distributions are implementation-defined (STYLE.md "Deterministic output").

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"
#include "clustertwin/config/reader.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::workload {

/// MLPerf Inference scenarios (LoadGen): offline = every sample at t = 0; server = Poisson
/// arrivals at a target rate with p99 TTFT/TPOT limits; interactive = server with tighter limits.
enum class ServingScenario { kOffline, kServer, kInteractive };
const char* scenario_name(ServingScenario s);
std::optional<ServingScenario> parse_scenario(std::string_view s);

/// p99 limits of a scenario.
struct LatencyLimits {
  base::Seconds ttft;
  base::Seconds tpot;
};

/// A token-length distribution: quantile knots (cumulative probability -> tokens).
struct LengthDistribution {
  std::vector<double> cdf;     ///< 0 .. 1, increasing
  std::vector<double> tokens;  ///< non-decreasing, >= 1
  double mean = 0;             ///< target mean after scaling
  int64_t max = 0;             ///< cap after scaling

  /// Mean of the piecewise-linear quantile function before scaling.
  [[nodiscard]] double knot_mean() const;
  /// The factor applied to every quantile so that the mean is `mean` (1 when mean is 0).
  [[nodiscard]] double scale() const;
  /// Tokens at cumulative probability u in [0, 1]: scaled, rounded, in [1, max].
  [[nodiscard]] int64_t quantile(double u) const;
};

struct Dataset {
  std::string name;  ///< "mlperf-deepseek-r1", or "fixed" for --isl/--osl
  std::string display_name;
  std::string model;    ///< the model it belongs to ("" for fixed lengths)
  int64_t samples = 0;  ///< dataset size (LoadGen's performance sample count)
  LengthDistribution input, output;
  double correlation = 0;  ///< Pearson r(input, output) of the copula
  std::optional<LatencyLimits> server, interactive;
  config::Provenance provenance;

  /// The scenario's p99 limits (none for offline, or when the dataset has none).
  [[nodiscard]] std::optional<LatencyLimits> limits(ServingScenario s) const;
};

/// Every dataset in the catalog (catalog/datasets/), sorted by name; all errors at once.
base::Result<std::vector<Dataset>> catalog_datasets(const hardware::Catalog& catalog);
base::Result<Dataset> parse_dataset_yaml(std::string_view text, const std::string& file);
/// A catalog dataset by name; an unknown name lists the known ones.
base::Result<Dataset> find_dataset(const hardware::Catalog& catalog, std::string_view name);
/// The catalog dataset whose `model` is `model`; an error that says how to give lengths when
/// there is none.
base::Result<Dataset> dataset_for_model(const hardware::Catalog& catalog, std::string_view model);
/// Every request `isl` tokens in, `osl` out (no latency limits).
Dataset fixed_dataset(int64_t isl, int64_t osl);

/// Deterministic random numbers for the simulator and the samplers.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  /// Uniform in [0, 1) from the top 53 bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  /// Standard normal (Box-Muller; the second value is discarded for simplicity).
  double normal();
  /// Exponential with the given rate (> 0).
  double exponential(double rate);

 private:
  std::mt19937_64 engine_;
};

/// One request's lengths.
struct RequestLengths {
  int32_t input = 0;
  int32_t output = 0;
};

/// `n` requests drawn from the dataset with `seed`.
std::vector<RequestLengths> sample_requests(const Dataset& d, int64_t n, uint64_t seed);

}  // namespace clustertwin::workload
