#pragma once
/// The one checked way in for a number (issue 19). Every count, size and rate that reaches the
/// library from a CLI flag, a scenario file, a Hugging Face config or a trace goes through here:
///  - parse strictly: decimal digits (with an optional sign, and for reals a fraction and an
///    exponent), nothing before or after, no wrap-around on overflow, no NaN or infinity;
///  - check the range, with a message that says what was expected and what came
///    ("expected an integer >= 1, got 0"); the caller adds its word (the flag, or file:line);
///  - check the products and sums that size work (GPUs of a layout, tokens of a step, requests,
///    jobs, events) against the named limits below *before* any allocation or loop, so a huge
///    but well-formed input is a clear refusal instead of an overflow, a hang or a bad_alloc.
///
/// Each limit is far beyond any machine that exists or is announced (the largest clusters have
/// ~10^5-10^6 GPUs) and far below where int64 arithmetic, a double's 2^53 exact integers or the
/// engine's integer-nanosecond clock (2^63 ns = 292 years) break. docs/limits.md lists them.

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "clustertwin/base/result.h"

namespace clustertwin::base {

/// GPUs of a cluster or a job (and the product tp*pp*cp*dp of a layout): 2^26 = 67M, 64x the
/// largest cluster announced.
inline constexpr int64_t kMaxGpus = int64_t{1} << 26;
/// Sequences in one step or batch (a global batch, a micro-batch, a serving batch).
inline constexpr int64_t kMaxBatch = int64_t{1} << 30;
/// Tokens of one sequence (a context length, an input or output length): 2^30.
inline constexpr int64_t kMaxSequence = int64_t{1} << 30;
/// Tokens of one training step (global batch x sequence length): 2^40 = 1.1e12, 10^4 x the
/// 16M-token batches of Llama 3 405B pre-training.
inline constexpr int64_t kMaxTokensPerStep = int64_t{1} << 40;
/// One dimension of a model (hidden size, MLP width, heads, vocabulary, experts): 2^24.
inline constexpr int64_t kMaxModelDim = int64_t{1} << 24;
/// Layers of a model.
inline constexpr int64_t kMaxLayers = 100000;
/// Requests one serving simulation may run (--requests, or rate x horizon).
inline constexpr int64_t kMaxRequests = 10'000'000;
/// Jobs one scheduling run may hold (a trace, or a synthetic mix over its horizon).
inline constexpr int64_t kMaxJobs = 10'000'000;
/// Simulated time of any run: 100 years, in seconds (the integer-nanosecond clock holds 292).
inline constexpr double kMaxSimSeconds = 100.0 * 365.25 * 86400.0;
/// Events one simulation may process before it stops with an error (a bound on run time:
/// ~10^9 events is minutes to an hour; --max-events raises or lowers it where offered).
inline constexpr int64_t kMaxEvents = int64_t{1} << 30;
/// Worker threads of a parallel search.
inline constexpr int64_t kMaxThreads = 1024;

/// An integer in [min, max].
struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

/// A finite real in [min, max] (or (min, max] when `min_exclusive`).
struct RealRange {
  double min = -std::numeric_limits<double>::max();
  double max = std::numeric_limits<double>::max();
  bool min_exclusive = false;
};

/// "an integer >= 1", "an integer in [0, 3]", "an integer": what `r` accepts, for messages.
std::string describe_range(const IntRange& r);
/// "a number > 0", "a number in [0, 1]", "a number".
std::string describe_range(const RealRange& r);

/// Strict integer: [+-]digits, nothing else (no spaces, no "0x", no "1e3", no "12abc"); refuses
/// values outside int64 instead of wrapping, and values outside `r` with
/// "expected an integer >= 1, got 0".
Result<int64_t> parse_integer(std::string_view text, IntRange r = {});
/// Strict real: [+-]digits[.digits][e[+-]digits] (".5" and "5." too); no NaN, no infinity, no
/// overflow to infinity ("1e999"), nothing after the number; then the range.
Result<double> parse_real(std::string_view text, RealRange r = {});

/// A count with an optional decimal suffix, K (1e3), M (1e6), B or G (1e9), T (1e12): "15T",
/// "2e12", "500B". Strict as parse_real (no "inf", no "nan", no junk), then the range.
Result<double> parse_scaled_count(std::string_view text, RealRange r = {});

/// The range check alone, for values already typed (YAML readers, library requests).
Status check_integer(int64_t v, IntRange r);
Status check_real(double v, RealRange r);

/// a*b and a+b, or nullopt when the result does not fit in int64.
std::optional<int64_t> checked_mul(int64_t a, int64_t b);
std::optional<int64_t> checked_add(int64_t a, int64_t b);

/// The product of named non-negative factors, checked against `limit` as it grows (so it never
/// overflows): "tp*pp*cp*dp = 2^70... exceeds" comes back as
/// "tp*pp*cp*dp = 8 x 1 x 1 x 4611686018427387904 is more than the limit of 67108864 GPUs".
/// `what` names the unit of the limit ("GPUs", "tokens per step").
Result<int64_t> checked_product(std::initializer_list<std::pair<std::string_view, int64_t>> factors,
                                int64_t limit, std::string_view what);

/// A real product (rate x horizon) checked to be finite and at most `limit`.
Result<double> checked_product_real(
    std::initializer_list<std::pair<std::string_view, double>> factors, double limit,
    std::string_view what);

}  // namespace clustertwin::base
