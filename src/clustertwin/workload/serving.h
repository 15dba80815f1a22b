#pragma once
/// Serving layouts and their memory (docs/models/inference.md, "layouts" and "memory").
///
/// An instance holds one copy of the model on tp x pp GPUs (TensorRT-LLM semantics):
///   tp  tensor parallelism of attention, dense MLP and shared experts (heads, widths split);
///   ep  expert parallelism of the routed experts, carved from tp (moe_tp x moe_ep = tp): each
///       GPU holds experts/ep experts of width inter/(tp/ep);
///   dp_attention  attention data parallelism (ADP, "DEP" with ep = tp): each of the tp GPUs runs
///       its own batch through attention, the dense layers and the shared experts with replicated
///       weights; the ranks meet in the MoE all-to-all (DeepSeek / SGLang / TensorRT-LLM "wide
///       EP" when tp spans a whole NVL72 rack);
///   pp  pipeline stages; each stage holds layers/pp layers.
/// The scheduler works per *rank*: one per attention-DP GPU, one per pipeline micro-batch slot,
/// or one per instance; `max_batch` and `max_tokens` are per rank, as TensorRT-LLM's
/// max_batch_size / max_num_tokens are per attention rank with ADP.
/// A deployment is `replicas` identical instances, or (disaggregated) a prefill pool and a decode
/// pool of instances with KV-cache transfer between them.
///
/// Memory per GPU = weights + buffers + KV cache:
///   weights: attention (and MLA projections) at the attention precision, / tp unless ADP;
///            dense MLP and shared experts / tp unless ADP; routed experts / tp (= / ep / etp);
///            embedding and output head (bf16) / tp unless ADP; one MTP layer when speculating;
///            the heaviest pipeline stage (first: embedding; last: head).
///   buffers: framework (CUDA context, workspaces, communication buffers, 3 GB) + activations of
///            one step: max_tokens x hidden x 2 B x 16.
///   KV cache: kv_fraction x what is left (TensorRT-LLM's free_gpu_memory_fraction), holding
///            per token: GQA 2 x kv_heads/tp (at least 1) x head_dim per layer; MLA
///            (kv_lora + rope) per layer, duplicated on every TP rank and whole on every ADP
///            rank; x layers / pp, x kv bytes (1 for FP8).
/// Precision: `weights` applies to GEMMs of the MLP and experts; with NVFP4 on a MLA model the
/// attention projections stay FP8 (NVIDIA's DeepSeek-R1 FP4 checkpoint keeps q/kv projections
/// out of FP4); embeddings, norms and the router stay bf16.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"
#include "clustertwin/compute/op.h"
#include "clustertwin/models/model.h"
#include "clustertwin/workload/serving_dataset.h"

namespace clustertwin::workload {

using base::Bytes;

struct InstanceLayout {
  int tp = 1;
  int pp = 1;
  int ep = 1;  ///< expert parallel, divides tp; 1 for dense models
  bool dp_attention = false;
  int64_t max_batch = 256;      ///< sequences per rank
  int64_t max_tokens = 8192;    ///< tokens per iteration per rank
  bool chunked_prefill = true;  ///< split prompts longer than the token budget over iterations
  /// Chunk unit of chunked prefill: a prompt chunk that is not the prompt's last is a multiple
  /// of this many tokens, rounded down from what the budget leaves (TensorRT-LLM
  /// MicroBatchScheduler, FIRST_COME_FIRST_SERVED policy: chunkUnitSize = the KV cache's
  /// tokens_per_block, "to avoid fragmentation"; NVIDIA's MLPerf Llama configs build with 32).
  /// A later prompt may still take the leftover whole if its rest fits. 1 = no alignment (vLLM,
  /// SGLang chunk at any token).
  int chunk_unit = 1;
  /// Pipeline parallelism: a prompt still chunking goes into the next micro-batch while its
  /// previous chunk is on a later stage (TensorRT-LLM PR #9308, 2025-11: context requests that
  /// are chunking are not marked in flight, "so they are scheduled in the next micro batch").
  /// false: a scheduled chunk keeps its request in flight until its micro-batch comes back, one
  /// chunk per pass, as in the TensorRT-LLM of MLPerf v5.0 / v5.1.
  bool pp_chunk_overlap = false;
  /// Redundant expert copies placed by the expert-parallel load balancer (DeepSeek EPLB; SGLang
  /// --ep-num-redundant-experts, TensorRT-LLM num_slots - experts): the EP ranks hold
  /// experts + redundant_experts expert slots, which lets ep be any divisor of that sum (256 + 32
  /// = 288 slots for EP72 in LMSYS's 96-H100 deployment) and costs their weights.
  int redundant_experts = 0;
  /// Two-batch overlap (DeepSeek's inference system, profile-data; SGLang --enable-two-batch-
  /// overlap): the batch of an attention-DP rank runs as two micro-batches whose MoE dispatch /
  /// combine overlaps the other micro-batch's computation (StepModel::time).
  bool two_batch_overlap = false;
  /// Attention-DP balance (TensorRT-LLM attention_dp_config, enable_balance; blog 10 "ADP Balance
  /// Strategy"; PyExecutor._balance_adp_requests): the ranks step together, so prompt work is held
  /// back until every rank has some. An iteration's prompt chunks run only when every rank has
  /// one and a free batch slot; otherwise they wait, up to `adp_timeout_iters` iterations (or
  /// until some rank has nothing to decode); once every rank has prompts and every rank is also
  /// decoding, they wait `adp_batching_wait_iters` more iterations to gather larger prompt
  /// batches. Trades TTFT for balanced iterations. 0 timeout = balance off. MLPerf v5.1 DeepSeek-R1
  /// configs: wait / timeout 10 / 500 (B200 Offline), 3 / 9 or 2 / 6 (Server), setups §1.3-1.4.
  int adp_timeout_iters = 0;
  int adp_batching_wait_iters = 0;
  /// CUDA-graph batch sizes captured per rank, ascending (TensorRT-LLM cuda_graph_config
  /// batch_sizes with enable_padding; NVIDIA's MLPerf harness default: powers of 2 up to the
  /// batch limit). A decode-only iteration whose largest rank batch fits one runs that graph,
  /// every rank padded to its size with dummy sequences (the graph holds the MoE exchange, so the
  /// ranks replay the same one); iterations with prompts, or beyond the largest, run eagerly
  /// without padding. Empty: no padding. Setups §1.3: 128, 256, 384, 512 (B200 DeepSeek-R1).
  std::vector<int64_t> cuda_graph_batches;

  [[nodiscard]] int gpus() const { return tp * pp; }
  /// Scheduling ranks: tp with attention DP, pp slots with pipelining, else 1.
  [[nodiscard]] int ranks() const { return dp_attention ? tp : pp; }
  /// "TP8 EP8 ADP", "TP2 PP2", "TP1".
  [[nodiscard]] std::string label() const;
};

/// What a rank does when the KV cache is full: kPreempt admits by the prompt and evicts the
/// newest running sequence when a step would overflow (TensorRT-LLM max_util, vLLM);
/// kReserve admits only when prompt + maximum output fits (guaranteed_no_evict).
enum class KvPolicy { kPreempt, kReserve };
const char* kv_policy_name(KvPolicy p);

/// The host side of the serving runtime, which decides what an iteration that cannot replay a
/// CUDA graph costs (execution::StepModel::time):
///   kPytorch: the model's forward is Python code issuing one kernel at a time (TensorRT-LLM's
///     PyTorch flow, its default since 1.0 and what NVIDIA's MLPerf v5.1 DeepSeek-R1 harness
///     runs; vLLM; SGLang). CUDA graphs are captured for decode-only batches up to the largest
///     captured size; an iteration with prompt tokens on any rank, or a larger decode batch, runs
///     eagerly, and its GPU waits whenever issuing the kernels takes longer than running them.
///   kTrtEngine: a TensorRT engine under the C++ executor (the MLPerf Llama 2 70B / Llama 3.1
///     405B submissions, setups §2-3): one engine enqueue per iteration from C++, no CUDA graphs
///     (NVIDIA's configs: `use_graphs: False`), and a fixed host time between iterations
///     (execution::StepCalibration::engine_host_per_iteration_s, catalog/calibration/serving.yaml).
enum class ServingRuntime { kPytorch, kTrtEngine };
const char* runtime_name(ServingRuntime r);

/// How the serving harness hands server / interactive queries to the instances of a deployment
/// (offline queries are always dealt round robin, LoadGen's one query at t = 0):
///   kLeastLoaded: to the instance with the fewest requests in flight (NVIDIA's MLPerf v5.1 LLM
///     harness for the Server scenario, `traffic_distribution_policy: load_balancing`, which
///     picks the core with the fewest pending samples; setups §1.3);
///   kRoundRobin: to each instance in turn, whatever its load (the same harness for Offline and
///     for every other scenario, Interactive included: closed/NVIDIA/code/llmlib/config.py
///     HarnessConfig.__post_init__ `case _: "round_robin"`, factory.py `_create_scheduler`);
///   kAuto: what that harness does for the scenario (resolve_dispatch): least loaded for Server,
///     round robin for Interactive.
/// Disaggregated deployments dispatch to the prefill pool this way; a prompt's KV cache still
/// goes to the least loaded decode instance.
enum class ServingDispatch { kAuto, kLeastLoaded, kRoundRobin };
const char* dispatch_name(ServingDispatch d);
/// The dispatch a name gives (dispatch_name's inverse); nullopt for any other name.
std::optional<ServingDispatch> dispatch_from_name(std::string_view name);
/// The dispatch a layout's `d` means in scenario `s` (kAuto: kRoundRobin for interactive,
/// kLeastLoaded otherwise; an explicit one stays).
ServingDispatch resolve_dispatch(ServingDispatch d, ServingScenario s);

struct ServingLayout {
  compute::DType weights = compute::DType::kNvfp4;
  double kv_bytes = 1.0;    ///< per KV element: 1 FP8, 2 bf16
  InstanceLayout instance;  ///< aggregated; the decode pool when disaggregated
  int replicas = 1;         ///< instances (decode instances when disaggregated)
  bool disaggregated = false;
  InstanceLayout prefill;  ///< disaggregated: one prefill (context) instance
  int prefill_replicas = 0;
  int mtp = 0;                  ///< speculative draft tokens per step from the MTP module
  double mtp_acceptance = 0.0;  ///< probability each draft token is accepted (chained)
  KvPolicy kv_policy = KvPolicy::kPreempt;
  double kv_fraction = 0.9;  ///< of memory left after weights and buffers
  /// Fraction of the TP all-reduce time that hides behind the GEMMs around it (TensorRT-LLM's
  /// fused GEMM + all-reduce, gemm_allreduce_plugin; userbuffers): 0 = none, 1 = all of it up to
  /// the GEMM time. The fused build's fraction is fitted on one MLPerf case (VC0154, Llama 3.1
  /// 405B H200 Server, whose config has the fusion) and tested on the others (tests/validation/
  /// inference_validation_test.cpp): catalog/calibration/serving.yaml, which every layout takes
  /// unless it sets its own (execution::ServingStepCalibration::apply; 0 until applied); a build
  /// without gemm_allreduce_plugin hides nothing (0).
  double tp_overlap = 0.0;
  /// NVFP4 activation quantisation fused into the RMSNorm before a GEMM (TensorRT-LLM
  /// `norm_quant_fusion`; the norm writes the FP4 values and block scales the GEMM reads). The
  /// GEMMs fed by a norm -- the QKV projection (MLA: its down projection) and the MLP's or shared
  /// experts' gate/up projection -- then run without their own quantisation pass. Off, those
  /// GEMMs quantise their bf16 input in a kernel of their own (FP4Linear: quantize_to_fp4_tensor
  /// before fp4_gemm), as AIC's measured nvfp4 GEMMs do. NVIDIA's MLPerf v5.1 Llama configs enable
  /// it for Offline and Server and not for B200 Llama 2 70B Interactive (setups §3.3). Only NVFP4
  /// GEMMs are affected; FP8 runs static-scale quantisation either way (StepModel, op_time).
  bool norm_quant_fusion = true;
  /// Attention-DP request assignment: true gives each new request to the rank with the fewest
  /// active requests (TensorRT-LLM's ADP scheduler, executor_request_queue
  /// _balance_requests_across_ranks); false fills rank 0 first, then rank 1, ... (what a
  /// per-rank first-come scheduler does; kept to show the imbalance).
  bool adp_balance = true;
  ServingRuntime runtime = ServingRuntime::kPytorch;
  /// Iterations between the streamed responses of a sequence (TensorRT-LLM `stream_interval`,
  /// default 1; blog 8 "Support Stream Interval"): in the server and interactive scenarios each
  /// decoding sequence hands a response to the serving front end every `stream_interval`
  /// iterations (its first token and its last at once). With the PyTorch runtime every response
  /// costs host time in the front end (detokenization, OpenAI protocol objects, inter-process
  /// messages, under Python's GIL), served first come first served per instance
  /// (execution::ServingSetup, StepCalibration::stream_host_per_response_s). NVIDIA's v5.1
  /// DeepSeek-R1 configs leave it at 1; its v6.0 GB300 Server config sets 100 (setups §1.6).
  int stream_interval = 1;
  /// Server / interactive: how arrivals are handed to the instances (ServingDispatch). Default
  /// kAuto, what NVIDIA's harness does for the scenario: least loaded for Server, round robin for
  /// Interactive (docs/models/inference.md, validation).
  ServingDispatch dispatch = ServingDispatch::kAuto;

  [[nodiscard]] int64_t gpus() const;
  /// "TP8 EP8 ADP x9" or "ctx TP4 x14 + gen TP8 x2".
  [[nodiscard]] std::string label() const;
  /// Expected tokens a sequence advances per decode step: 1 + a + a^2 + ... + a^mtp.
  [[nodiscard]] double tokens_per_step() const;
};

/// Divisibility and sizes against the model and the GPUs the deployment is given: heads and
/// widths by tp, expert slots (experts + redundant) by ep, ep dividing tp, layers >= pp, ADP only
/// with ep = tp and pp = 1, GPUs = instances x tp x pp. Every violation is one error naming both
/// sides.
base::Status validate(const ServingLayout& l, const models::ModelSpec& m, int64_t gpus);

/// Attention-projection precision for `weights` on model `m` (see the header comment).
compute::DType attention_dtype(const models::ModelSpec& m, compute::DType weights);

/// Per GPU of one instance.
struct ServingMemory {
  Bytes usable;
  Bytes weights;
  Bytes buffers;
  Bytes kv_cache;  ///< KV-cache pool per GPU
  double kv_bytes_per_token =
      0;  ///< per GPU, for one token of a sequence of its rank (full-attention layers only where
          ///< local layers' windows are reserved per batch slot)
  int64_t kv_tokens_per_rank = 0;  ///< tokens one scheduling rank can hold
  double params = 0;               ///< parameters held per GPU
};

/// The memory plan of `inst` (the heaviest stage). Never fails; see check_serving_memory.
ServingMemory serving_memory(const models::ModelSpec& m, const InstanceLayout& inst,
                             const ServingLayout& l, Bytes usable);
/// Its weights part (`params`, `weights`): the same for every batch and token limit of a layout
/// (its parallelism, expert slots, precision and MTP), so a search computes it once per layout.
ServingMemory serving_weights(const models::ModelSpec& m, const InstanceLayout& inst,
                              const ServingLayout& l);
/// serving_memory with `weights` = serving_weights of the same layout.
ServingMemory serving_memory(const models::ModelSpec& m, const InstanceLayout& inst,
                             const ServingLayout& l, Bytes usable, const ServingMemory& weights);

/// The plan, or an error when weights and buffers do not fit (by how much, and what would) or
/// when one sequence of `max_sequence_tokens` does not fit the KV cache of a rank. `weights`:
/// serving_weights of the same layout, when computed before.
base::Result<ServingMemory> check_serving_memory(const models::ModelSpec& m,
                                                 const InstanceLayout& inst, const ServingLayout& l,
                                                 Bytes usable, int64_t max_sequence_tokens,
                                                 const ServingMemory* weights = nullptr);

/// CUDA-graph batch sizes from text: positive integers, ascending, separated by commas
/// ("128,256,384,512"); an error names the bad item.
base::Result<std::vector<int64_t>> parse_graph_batches(std::string_view text);

/// A serving layout file (`--serving FILE`, YAML or JSON), read strictly (unknown keys, bad
/// values: errors with file:line):
///   serving:
///     precision: fp4            # bf16 | fp8 | fp4 (weights)
///     kv_cache: fp8             # fp8 | bf16
///     instance: {tp: 8, ep: 8, dp_attention: true, pp: 1, max_batch: 512, max_tokens: 4608,
///                chunked_prefill: false, chunk_unit: 32, pp_chunk_overlap: false,
///                redundant_experts: 0, two_batch_overlap: false,
///                adp_timeout_iters: 9, adp_batching_wait_iters: 3,
///                cuda_graph_batches: [128, 256, 384, 512]}
///     replicas: 9               # optional: the GPUs / instance size
///     prefill: {tp: 4, ...}     # optional: disaggregated, with prefill_replicas
///     prefill_replicas: 14
///     mtp: {draft_tokens: 3, acceptance: 0.7}
///     kv_policy: preempt        # preempt | reserve
///     tp_overlap: 0.5
///     norm_quant_fusion: true   # NVFP4: norm-fed GEMMs read a quantised input (false: own pass)
///     adp_balance: true         # attention-DP: least-loaded rank (false: fill rank 0 first)
///     runtime: pytorch          # pytorch | trt-engine (ServingRuntime)
///     stream_interval: 1        # iterations between streamed responses (server, interactive)
///     dispatch: auto            # auto | least-loaded | round-robin (server, interactive arrivals;
///                               # auto: least-loaded for server, round-robin for interactive)
/// `replicas` 0 means "as many as the GPUs hold" (the caller fills it in).
/// A file without `tp_overlap` takes `default_tp_overlap` (the catalog's fitted overlap:
/// execution::ServingStepCalibration).
base::Result<ServingLayout> parse_serving_yaml(std::string_view text, const std::string& file,
                                               double default_tp_overlap = 0.0);

}  // namespace clustertwin::workload
