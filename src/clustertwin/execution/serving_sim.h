#pragma once
/// Request-level discrete-event simulation of LLM serving (docs/models/inference.md, "serving
/// simulation"), on the engine.
///
/// Requests arrive (offline: all at t = 0, LoadGen's one query; server / interactive: Poisson at
/// a rate), wait in their instance's queue and are admitted by a continuous-batching scheduler
/// like TensorRT-LLM's in-flight batching and vLLM's: every iteration of a rank runs all its
/// decoding sequences plus prompt chunks up to `max_tokens` (chunked prefill) and `max_batch`
/// sequences; a prompt is admitted when the KV cache holds it (KvPolicy::kPreempt, evicting the
/// newest sequence when decoding would overflow and recomputing it later) or holds prompt +
/// maximum output (kReserve). Each iteration's time comes from StepModel. Attention-DP ranks of an
/// instance step together. Pipeline parallelism runs as TensorRT-LLM's in-flight batching does
/// (trtGptModelInflightBatching.cpp, trtGptModel.h): pp micro-batches in flight, each stage
/// running one at a time, first come first served (a pass split evenly over the stages); each
/// micro-batch holds at most max_batch sequences and max_tokens tokens, the instance at most
/// max_batch x pp (maxNumSequences) in one KV cache; a micro-batch takes only requests not in
/// flight in another, so a sequence -- its prompt chunks, then its decoding -- stays in the
/// micro-batch that first took it while the others stay busy. A sequence emits its first
/// token when its prompt completes and then 1 + a + ... + a^k tokens per decode step with MTP
/// (expected value: acceptance is not drawn per step).
/// Disaggregated: prompts run on prefill instances, the KV cache moves to a decode instance over
/// NVLink or the NICs (StepModel::kv_transfer_s), and decoding continues there.
///
/// Streaming front end (server / interactive with the PyTorch runtime; TensorRT-LLM blog 8,
/// "Support Stream Interval"): LoadGen needs each sample's first token, so these runs stream, and
/// every iteration hands the instance's front end one response per decoding sequence every
/// `stream_interval` iterations plus every first token. Each costs
/// StepCalibration::stream_host_per_response_s of host time (detokenization, OpenAI protocol
/// objects, inter-process messages, under Python's GIL); the front end handles them first come
/// first served, one iteration's responses as one batch, without holding the GPU back (the
/// executor runs ahead). Tokens, first tokens and completions reach the user when the front end
/// has handled them, so near its capacity (stream_interval x tokens per step / that time per
/// instance) its queue delays first tokens by seconds while TPOT, an average over a sample's
/// tokens, barely moves -- what the measured DeepSeek-R1 servers show (TTFT p99 1.2-1.7 s, TPOT
/// p99 67-72 ms of 80). Offline runs do not stream (their responses are whole answers).
///
/// LoadGen rules (shared/reference/mlperf-inference-setups.md §0.1): latency counts from the
/// scheduled arrival; TTFT = first token - arrival; TPOT per sample = (e2e - TTFT)/(n - 1);
/// p99 over samples; throughput = output tokens / time of the last completion.
///
/// Symmetry: offline, identical instances receive identical shares of the load (round robin),
/// so one instance is simulated with 1/replicas of the requests and the deployment's throughput
/// is replicas x its own; a disaggregated deployment is reduced by the gcd of its pool sizes.
/// Server / interactive arrivals go to the least loaded instance (the harness's load balancing;
/// the default for server) or to each instance in turn (workload::ServingDispatch::kRoundRobin;
/// the default for interactive, as NVIDIA's harness deals them); either couples the
/// instances (least loaded: a queue one instance would build is absorbed by another; round
/// robin: each instance sees every n-th arrival, a smoother stream than its own Poisson share),
/// so up to kDispatchInstances instances are simulated side by side (more only by a divisor that
/// keeps the pools' proportions).
///
/// Run length (docs/models/inference.md, "run length"): a run says whether it reached a steady
/// state -- offline, the ranks stayed loaded (requests still queued) for at least one mean
/// request lifetime; server, arrivals lasted at least one mean end-to-end latency, so that the
/// concurrency rate x latency of Little's law was built up -- and gives the output tokens/s
/// over that loaded window beside LoadGen's figure (which counts the drain of the last long
/// requests). LoadGen's own minimum (600 s; the offline sample floor) is checked too.
/// Cost: O(requests x log + iterations x ranks); one event per arrival and per iteration.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/execution/serving_step.h"
#include "clustertwin/workload/serving.h"
#include "clustertwin/workload/serving_dataset.h"

namespace clustertwin::execution {

struct ServingSetup {
  const models::ModelSpec* model = nullptr;
  workload::ServingLayout layout;
  const compute::ComputeModel* compute = nullptr;
  const CommModel* comm = nullptr;
  ServingFabric fabric;
  base::Bytes memory_capacity;  ///< usable HBM per GPU
  workload::Dataset dataset;
  workload::ServingScenario scenario = workload::ServingScenario::kOffline;
  double rate_qps = 0;   ///< server / interactive: arrivals per second for the whole deployment
  int64_t requests = 0;  ///< 0: LoadGen-like default (see default_request_count)
  uint64_t seed = 1;
  std::optional<workload::LatencyLimits> limits;  ///< p99 limits results are checked against
  double moe_imbalance = 0;                       ///< 0: StepModel's default
  /// The step model's framework constants: the catalog's fits are applied by
  /// ServingStepCalibration::apply (serving_calibration.h); none until then.
  StepCalibration calibration;
  /// Kernel-time multiplier of a GPU power cap or SM clock lock (StepSetup::cap_slowdown).
  double cap_slowdown = 1.0;
  /// Harness cap on requests in flight per instance (TensorRT-LLM max_concurrency); 0 = none.
  int64_t max_concurrency = 0;
  int64_t trace_iterations = 0;  ///< iterations kept per simulated instance for the trace
  /// Stop as soon as the p99 limits are provably missed (more samples over a limit than the
  /// 1% p99 allows); the result is then partial (ServingResult::stopped_early). For rate search.
  bool stop_when_limits_fail = false;
};

/// Instances of a server / interactive deployment simulated side by side (see the header note).
inline constexpr int kDispatchInstances = 16;

struct LatencyStats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

/// One iteration of one simulated instance (for traces).
struct IterationRecord {
  int instance = 0;  ///< simulated instance index (prefill instances first when disaggregated)
  int group = 0;     ///< pipeline slot (0 otherwise)
  double start_s = 0, duration_s = 0;
  int32_t decode = 0;          ///< decoding sequences over the group's ranks
  int32_t prefill_tokens = 0;  ///< prompt tokens over the group's ranks
  double kv_utilization = 0;
};

struct ServingResult {
  double duration_s = 0;    ///< LoadGen: until the last completion
  double tokens_per_s = 0;  ///< output tokens/s of the whole deployment
  double tokens_per_s_per_gpu = 0;
  double requests_per_s = 0;
  double tokens_per_s_per_user = 0;  ///< 1 / median TPOT
  LatencyStats ttft_s, tpot_s, e2e_s;
  double mean_input_tokens = 0, mean_output_tokens = 0;
  double kv_utilization_mean = 0, kv_utilization_peak = 0;  ///< of the decode ranks
  double mean_decode_batch = 0;  ///< decoding sequences per rank per iteration (decode ranks)
  int64_t iterations = 0, preemptions = 0, events = 0;
  int64_t prompt_iterations = 0;    ///< iterations that carried prompt tokens
  int64_t adp_held_iterations = 0;  ///< iterations whose prompts attention-DP balance held back
  int64_t requests = 0;             ///< the deployment's request count
  int64_t simulated_requests = 0;   ///< what the representative instances ran
  int simulated_instances = 0;
  /// Requests the harness handed each simulated instance (server / interactive arrivals by
  /// ServingLayout::dispatch; offline: the round-robin deal); disaggregated: the prefill pool.
  std::vector<int64_t> dispatched;
  int symmetry = 1;  ///< deployment = symmetry x simulated
  double rate_qps = 0;
  bool meets_limits = true;    ///< true when no limits were given
  std::string limit_note;      ///< what missed, by how much
  bool stopped_early = false;  ///< stop_when_limits_fail: the limits were provably missed
  /// Run length: whether the run reached a steady state (header note), the loaded window
  /// (offline: until the last admission; server: from one mean latency, at most half the
  /// arrivals, to the last arrival) and the output tokens/s emitted in it.
  bool steady = true;
  std::string steady_note;          ///< when not: why, and about how many requests it would take
  int64_t steady_min_requests = 0;  ///< that estimate (0 when steady)
  double steady_window_s = 0;
  double steady_tokens_per_s = 0, steady_tokens_per_s_per_gpu = 0;
  bool loadgen_length = true;   ///< at least LoadGen's minimum duration and sample count
  double arrival_window_s = 0;  ///< server: first to last arrival; offline: to the last admission
  StepTime mean_step;           ///< per iteration, decode (or aggregated) instances
  workload::ServingMemory memory, prefill_memory;
  std::vector<IterationRecord> trace;
  std::vector<std::string> notes;
};

/// LoadGen-like request count: offline max(dataset size, 1.1 x 600 s x expected rate), server
/// 600 s x rate (at least the dataset size), each capped so one simulated instance runs at most
/// 60,000 requests.
int64_t default_request_count(const ServingSetup& s, double expected_qps);

base::Result<ServingResult> simulate_serving(const ServingSetup& s);

/// Steady-state estimate without events (AIConfigurator-style): each rank runs its batch at the
/// length-biased mean context, with prompts amortised per iteration; for search. `batch` = 0
/// takes the layout's max_batch capped by the KV cache.
struct SteadyEstimate {
  double tokens_per_s_per_gpu = 0;
  double tokens_per_s_per_user = 0;
  double tpot_s = 0;
  double ttft_s = 0;          ///< of a p99-long prompt at that load
  double requests_per_s = 0;  ///< deployment
  int64_t batch = 0;          ///< decode sequences per rank
  bool kv_limited = false;
  StepTime step;
  int prefill_replicas = 0, decode_replicas = 0;  ///< disaggregated: the layout's split
  /// Disaggregated: requests/s one prefill instance feeds and one decode instance serves (for
  /// choosing the split).
  double prefill_instance_rps = 0, decode_instance_rps = 0;
};
/// Moments of a dataset the estimator uses (sampled once; pass to avoid resampling).
struct LengthMoments {
  double input = 0, output = 0, input_p99 = 0, context = 0;  ///< context: length-biased mean
};
LengthMoments length_moments(const workload::Dataset& d, uint64_t seed = 1);
base::Result<SteadyEstimate> estimate_serving(const ServingSetup& s, const LengthMoments& lm,
                                              int64_t batch = 0);

/// The step models and memory plans of a setup's layout (what estimate_serving and
/// simulate_serving build first), checked as they are (memory, validity).
struct PreparedServing {
  StepModel agg, pre;  ///< aggregated / decode instance; prefill instance when disaggregated
  workload::ServingMemory mem, pre_mem;
  bool has_pre = false;
};
/// `table_batch` / `table_tokens` extend the (aggregated or decode) step model's tables to
/// those per-rank limits when they exceed the layout's; memory is checked at the layout's own.
base::Result<PreparedServing> prepare_serving(const ServingSetup& s, int64_t table_batch = 0,
                                              int64_t table_tokens = 0);
/// The estimate with step models built beforehand, for a search that scores one instance layout
/// at many batch and token limits: a StepModel's tables depend on the layout's limits only
/// through how far they reach (serving_step.h), so one built at the largest limits serves every
/// smaller one, with the memory plan `p.mem` of the point's own limits. Same figures as
/// estimate_serving.
base::Result<SteadyEstimate> estimate_serving(const ServingSetup& s, const LengthMoments& lm,
                                              const PreparedServing& p, int64_t batch = 0);

/// MLPerf server / interactive mode: the highest arrival rate whose run meets the p99 limits,
/// by bisection on the rate between 0 and a bracket from the steady-state estimate. Probes stop
/// as soon as the limits are provably missed, and pause as soon as they are provably met: once
/// so few samples are unfinished that they could not change the verdict, or once only the drain
/// is left (every sample has its first token, no prompt is left) and an upper bound of every
/// remaining iteration (the step time at the contexts each iteration will have, with the batch
/// that stays until the next sequence finishes) keeps enough unfinished samples' TPOT under the
/// limit. Only the highest compliant probe's run is continued to its end, for its figures; the
/// drain of the long answers after LoadGen's 600 s of arrivals is ~60% of a DeepSeek-R1 server
/// run's iterations. Same verdicts, same rate, same result as running every probe to its end
/// (should the one assumption of the bound, an iteration not faster with more context, fail, the
/// continued run shows it and the search is repeated without pausing). The probes of one search
/// share the step models and the sampled requests. With a fixed request count (s.requests > 0), a
/// probe that ends before a steady state is an error (it could not judge the rate); the default
/// count is LoadGen's 600 s of arrivals.
struct RateProbe {
  double rate_qps = 0, ttft_p99_s = 0, tpot_p99_s = 0, tokens_per_s_per_gpu = 0;
  bool meets = false;
};
struct RateSearch {
  bool found = false;    ///< some probed rate met the limits
  double rate_qps = 0;   ///< the highest compliant rate (0 when none)
  ServingResult result;  ///< at that rate; when none met, the lowest probed rate (best effort)
  /// Every probe; one stopped early (missed, or met and paused) has partial figures, except the
  /// probe at `rate_qps`, whose run was continued to its end.
  std::vector<RateProbe> probes;
  int paused = 0;  ///< compliant probes paused once their verdict was in (see find_max_rate)
};
/// How a rate search probes. The defaults are the MLPerf-style search above; a search over
/// layouts starts near the steady-state estimate with small steps, and once some layout met a
/// rate it starts just above that rate with `floor_at_start`: a first probe that misses the
/// limits ends the search at once (found = false, the partial probe as the result), since the
/// layout cannot beat the one that met that rate.
struct RateSearchOptions {
  int max_probes = 14;
  double start_qps = 0;  ///< first probe (0: 0.6 x the estimated capacity)
  bool floor_at_start = false;
  double grow = 1.5;    ///< factor up while compliant, before the bisection
  double shrink = 0.5;  ///< factor down while not
};
base::Result<RateSearch> find_max_rate(const ServingSetup& s, const RateSearchOptions& o);
inline base::Result<RateSearch> find_max_rate(const ServingSetup& s, int max_probes = 14) {
  return find_max_rate(s, RateSearchOptions{.max_probes = max_probes});
}

}  // namespace clustertwin::execution
