#pragma once
/// A training job's parallel layout (Megatron-LM / Megatron-Core semantics) and how its ranks map
/// onto GPUs. Rank order is Megatron-Core's default "tp-cp-ep-dp-pp": tensor parallel fastest, so
/// a TP group is contiguous GPUs inside one NVLink domain, then context, data (experts carved from
/// data x context), and pipeline stages outermost.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/compute/op.h"
#include "clustertwin/models/model.h"
#include "clustertwin/models/ops.h"

namespace clustertwin::workload {

using models::Recompute;

/// How MoE tokens travel to their experts when expert parallelism spans NVLink domains.
/// kAllToAll: one copy per routed expert (Megatron's all-to-all token dispatcher).
/// kDedup: one copy per destination domain over the network, forwarded over NVLink inside it
/// (DeepSeek-V3 report §3.2.2; DeepEP's internode kernels).
/// kAuto: kDedup for models with group-limited routing (co-designed with it), else kAllToAll.
enum class MoeDispatch { kAuto, kAllToAll, kDedup };
const char* moe_dispatch_name(MoeDispatch d);
std::optional<MoeDispatch> parse_moe_dispatch(std::string_view s);

/// Expected number of distinct NVLink domains a token's routed experts lie in, when the experts
/// are split evenly over `domains` domains (contiguous blocks, as EP ranks hold them) and routing
/// is uniform (balanced load). Reachable domains R: all of them, or with group-limited routing
/// the domains of the topk_groups chosen groups (M*D/G when a group spans D/G domains; else
/// D * (1 - C(G-G/D, M) / C(G, M)), the expected domains hit by M of G groups). With s experts
/// per reachable domain, the k experts drawn without replacement miss a given domain with
/// probability prod_{i<k} (Rs - s - i) / (Rs - i), so E = R * (1 - that). DeepSeek-V3 on 8
/// domains (G = 8, M = 4, k = 8): 3.6, against 8 copies without deduplication.
double moe_domains_per_token(const models::MoeSpec& e, int domains);

struct TrainingLayout {
  int tp = 1;   ///< tensor parallel (with sequence parallelism when `sequence_parallel`)
  int pp = 1;   ///< pipeline stages
  int dp = 1;   ///< data parallel replicas
  int cp = 1;   ///< context parallel (ring attention)
  int ep = 1;   ///< expert parallel, carved from dp x cp
  int vpp = 1;  ///< virtual stages per pipeline stage (interleaved 1F1B when > 1)
  int64_t micro_batch = 1;   ///< sequences per micro-batch per DP replica
  int64_t global_batch = 1;  ///< sequences per step
  int64_t seq_len = 2048;
  compute::DType dtype = compute::DType::kBf16;  ///< GEMM precision (bf16, fp8, nvfp4)
  Recompute recompute = Recompute::kNone;
  int zero = 1;  ///< 0: replicated optimizer; 1: sharded optimizer (Megatron distributed
                 ///< optimizer); 2: + sharded gradients; 3: + sharded weights (FSDP)
  bool sequence_parallel = true;
  bool tp_comm_overlap = false;  ///< TP collectives overlapped with GEMMs (Transformer Engine)
  bool dp_overlap = true;        ///< DP gradient reduce overlapped with the last backward
  bool ep_overlap = false;       ///< EP all-to-all hidden behind compute (DualPipe-style)
  MoeDispatch moe_dispatch = MoeDispatch::kAuto;
  int grad_bytes = 4;  ///< bytes per gradient element reduced over DP (4 fp32, 2 bf16)
  /// FlashAttention (fused, scores never in HBM) or the unfused attention of 2021-22 Megatron-LM
  /// (scores and probabilities materialised: more HBM traffic, the 5as/h activation term, and
  /// selective recomputation then pays off).
  bool flash_attention = true;

  [[nodiscard]] int64_t gpus() const { return static_cast<int64_t>(tp) * pp * dp * cp; }
  [[nodiscard]] int64_t micro_batches() const { return global_batch / (micro_batch * dp); }
  [[nodiscard]] int64_t tokens_per_step() const { return global_batch * seq_len; }
};

/// tp*pp*cp (the GPUs of one data-parallel replica), checked against base::kMaxGpus.
base::Result<int64_t> model_parallel_size(const TrainingLayout& l);
/// The global batch when none is given: micro_batch x dp x 4 pp (the pipeline filled four
/// times, so the bubble stays small), checked against base::kMaxBatch.
base::Result<int64_t> default_global_batch(const TrainingLayout& l);

/// Checks the layout against the model and the GPU count; every violation is one error naming
/// both sides (`tp*pp*dp*cp = 8192 does not match gpus = 16384`).
base::Status validate(const TrainingLayout& l, const models::ModelSpec& m, int64_t gpus);

/// Layers per pipeline chunk (pp * vpp chunks, in schedule order). Uneven splits follow the
/// Llama 3 practice: every chunk gets ceil(L / chunks), and the deficit is taken one layer at a
/// time from the first chunk, the last, the second, the second-to-last, ... (126 layers over 16
/// stages: 7, 8 x 14, 7), where embedding and loss already make those stages heavier.
std::vector<int> split_layers(int layers, int chunks);

/// Rank coordinates under "tp-cp-ep-dp-pp" ordering; gpu = rank (ranks packed in order).
struct RankCoord {
  int tp, cp, dp, pp;
};
RankCoord coord_of(const TrainingLayout& l, int64_t rank);
int64_t rank_of(const TrainingLayout& l, RankCoord c);

}  // namespace clustertwin::workload
