#pragma once
/// How long an operator takes on one GPU (docs/models/compute.md).
///
///   t(op) = t0 + ideal(op) / r(op)
///   ideal(op) = max(flops / peak(dtype), bytes / hbm_bandwidth)      -- the roofline time
///   r(op)     = roofline efficiency from a fitted grid (EfficiencyGrid) per GPU, kernel family and
///               dtype: GEMM by (m, n, k); attention prefill by (isl, batch x heads); decode by
///               (context, batch x kv heads, heads per kv head); MLA prefill / decode; fused MoE
///               by (tokens per active expert, parameters per expert)
///   t0        = the family's fixed cost per call (launch and tail; CUDA-graph replay)
///
/// Memory-bound ops: t = t0 + bytes / (hbm_bandwidth * hbm_efficiency).
/// Backward: GEMM dgrad/wgrad are looked up by their own shapes (op.h); attention backward is
/// FlashAttention-2's 2.5x forward FLOPs at 63/73 of the forward efficiency (Dao 2023,
/// arXiv:2307.08691 §4.1); MoE backward is 2x the forward grouped-GEMM time.
///
/// Sources: the grids are fitted by `clustertwin calibrate` (calibration/kernel_fit.h) to NVIDIA
/// AIConfigurator's measured TensorRT-LLM kernel tables (ai-dynamo/aiconfigurator commit 095f58a5,
/// Apache-2.0) and stored in catalog/compute/<gpu>.yaml with their sources; A100 and H800 reuse
/// H100's grids on their own peaks. Validation status: tests/validation/compute_validation_test.cpp
/// (held-out points).

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/compute/efficiency_grid.h"
#include "clustertwin/compute/op.h"
#include "clustertwin/config/reader.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::compute {

using base::BytesPerSecond;
using base::FlopsPerSecond;

/// One fitted kernel family for one dtype.
struct KernelTable {
  EfficiencyGrid efficiency;
  Seconds launch_overhead;
  double unaligned_m_penalty = 1.0;  ///< GEMM: m > 16 and not a multiple of 16
  [[nodiscard]] bool present() const { return !efficiency.empty(); }
};

class ComputeModel {
 public:
  /// The calibration of `gpu` (catalog/compute/<gpu.name>.yaml), applied to the GPU's own peaks
  /// and HBM bandwidth (a what-if GPU with a different peak scales accordingly).
  static base::Result<ComputeModel> for_gpu(const hardware::GpuSpec& gpu,
                                            const hardware::Catalog& catalog);
  /// The calibration of the GPU named `gpu`, at the peaks the grids were fitted against (the
  /// calibration file's reference_peak): what validation tests compare with measurements.
  static base::Result<ComputeModel> reference(const hardware::Catalog& catalog,
                                              std::string_view gpu);
  /// Parses one calibration file; `gpu` null means the file's reference peaks.
  static base::Result<ComputeModel> parse(std::string_view text, const std::string& file,
                                          const hardware::GpuSpec* gpu);
  /// The `compute:` mapping of a calibration profile (what `clustertwin calibrate` writes from
  /// kernel tables: a catalog compute file's mapping beside the profile's other mappings, which
  /// other layers read), applied to `gpu`'s own peaks as for_gpu applies the catalog's file;
  /// nullopt when the profile has none. Errors at the profile's file:line.
  static base::Result<std::optional<ComputeModel>> parse_profile(std::string_view text,
                                                                 const std::string& file,
                                                                 const hardware::GpuSpec& gpu);
  /// This model with a profile's model laid over it, table by table: every kernel table the
  /// profile holds (a family at a dtype) replaces this model's, and the profile's launch overhead
  /// and HBM efficiency replace this model's; the tables the profile lacks stay this model's.
  /// The peaks are this model's (both are of one GPU).
  [[nodiscard]] ComputeModel with_profile(const ComputeModel& profile) const;
  /// The kernel tables the model holds, "gemm bf16", "attention_prefill fp8", ..., in the
  /// file's order.
  [[nodiscard]] std::vector<std::string> table_names() const;
  /// GPUs with a calibration file in the catalog, sorted.
  static std::vector<std::string> calibrated_gpus(const hardware::Catalog& catalog);

  [[nodiscard]] const std::string& gpu_name() const { return gpu_; }
  /// Empty, or the GPU whose measured curves this one reuses ("h100" for a100 and h800).
  [[nodiscard]] const std::string& derived_from() const { return derived_from_; }
  /// True when the GPU has both a peak and fitted GEMM tables for `d`.
  [[nodiscard]] bool supports(DType d) const;
  /// The dtype a request for `d` runs at: `d` if supported, else the next wider one
  /// (nvfp4 -> fp8_block -> fp8 -> bf16), as frameworks fall back.
  [[nodiscard]] DType effective(DType d) const;
  [[nodiscard]] FlopsPerSecond peak(DType d) const;
  [[nodiscard]] BytesPerSecond hbm_bandwidth() const { return hbm_bandwidth_; }
  [[nodiscard]] double hbm_efficiency() const { return hbm_efficiency_; }
  [[nodiscard]] Seconds launch_overhead() const { return launch_overhead_; }
  [[nodiscard]] const config::Provenance& provenance() const { return provenance_; }

  /// One GEMM (bf16 activations, weights in `d`).
  [[nodiscard]] Seconds gemm(GemmShape s, DType d) const;
  /// dgrad + wgrad of a forward GEMM.
  [[nodiscard]] Seconds gemm_backward(GemmShape forward, DType d) const;
  [[nodiscard]] Seconds attention(const AttentionShape& a) const;
  [[nodiscard]] Seconds attention_backward(const AttentionShape& a) const;
  [[nodiscard]] Seconds moe(const MoeShape& m, DType d) const;
  [[nodiscard]] Seconds moe_backward(const MoeShape& m, DType d) const;
  /// A streaming kernel moving `b` bytes through HBM.
  [[nodiscard]] Seconds memory_bound(Bytes b) const;
  [[nodiscard]] Seconds op(const Op& o) const;
  /// The roofline lower bound of `o` (no efficiency, no launch cost): max(flops/peak, bytes/bw).
  [[nodiscard]] Seconds roofline(const Op& o) const;

 private:
  enum Family { kGemmF, kPrefillF, kDecodeF, kMlaPrefillF, kMlaDecodeF, kMoeF, kFamilies };
  const KernelTable* table(Family f, DType d) const;
  static base::Result<ComputeModel> read(std::string_view text, const std::string& file,
                                         const hardware::GpuSpec* gpu, bool profile);
  [[nodiscard]] Seconds attention_time(const AttentionShape& a) const;

  std::string gpu_;
  std::string derived_from_;
  std::array<FlopsPerSecond, 4> peak_{};  // by DType
  BytesPerSecond hbm_bandwidth_;
  double hbm_efficiency_ = 0.85;
  Seconds launch_overhead_;
  // tables_[family][dtype index]; attention families use kBf16 / kFp8 (math or KV dtype).
  std::array<std::array<KernelTable, 4>, kFamilies> tables_{};
  config::Provenance provenance_;
};

}  // namespace clustertwin::compute
