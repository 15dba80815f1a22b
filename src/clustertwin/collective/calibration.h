#pragma once
/// Calibration of the collective time model (docs/models/collectives.md, "Calibration"): per GPU
/// type, one line per (op, algorithm, protocol) with NCCL-style latency terms and the fraction of
/// link bandwidth the algorithm reaches. Read from catalog/collectives/*.yaml (handed over by the
/// hardware catalog through Catalog::other_files()): `defaults.yaml` holds NCCL's own constants
/// (src/graph/tuning.cc) for everything; `<gpu>.yaml` files hold the fits to measured nccl-tests
/// tables and override the defaults field by field.

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/collective/types.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::collective {

/// One (op, algorithm, protocol) line of the time model:
///   t(S) = latency + x + min(ramp * x, fill),   x = wire bytes / (efficiency * link rate)
///   latency = base + intra_steps * hop + inter_steps * (net_hop + fabric path latency)
/// `efficiency` applies to NVLink, times (1 - small_n / p) for p GPUs of the group in a domain
/// (measured rings of 2 GPUs reach ~12-20% less than rings of 8 on every system: NCCL's
/// per-step synchronisation costs relatively more when each step moves half the buffer);
/// `net_efficiency` applies to the NIC and fabric. `ramp` and `fill`
/// are the chunked pipeline's fill: it grows with the message (NCCL shrinks chunks for small
/// messages) until it reaches `fill` (a full pipeline of maximum-size chunks).
struct Line {
  double base_us = 0;
  double hop_us = 0;
  double net_hop_us = 0;
  double efficiency = 1;
  double small_n = 0;
  double net_efficiency = 1;
  double ramp = 0;
  double fill_us = 0;
  bool calibrated = false;  ///< fitted to measurements (else NCCL's defaults)
  std::string source;       ///< citation of the fit or of the default

  /// NVLink efficiency for a group with p GPUs per domain.
  [[nodiscard]] double nvlink_efficiency(int p) const;
};

/// What a file says about one line; absent fields inherit from defaults.yaml.
struct LinePatch {
  std::optional<double> base_us, hop_us, net_hop_us, efficiency, small_n, net_efficiency, ramp,
      fill_us;
  std::string source;
};

/// What measurements beyond one NVLink domain set for a GPU family
/// (catalog/collectives/at-scale.yaml; docs/models/collectives.md, "At scale"). Zero fields are
/// not set: the lines' own values apply.
struct ScaleParams {
  std::vector<std::string> gpus;
  /// Fraction of the NIC line rate GPUDirect RDMA reaches with the Simple protocol on this
  /// platform (GPU-NIC path through a PCIe switch on HGX, direct on Grace trays): replaces the
  /// Simple lines' net_efficiency.
  double nic_efficiency = 0;
  /// Fraction of the NIC line rate SHARP in-network reduction streams reach (CollNet and NVLS
  /// across domains, NCCL's SHARP plugin): replaces the NIC efficiency on those lines.
  double sharp_efficiency = 0;
  /// NVLS throughput per NVLS channel, as bus bandwidth (NCCL's own NVLS model: busBw =
  /// nChannels x per-channel bandwidth, independent of the ranks, src/graph/tuning.cc): caps
  /// NVLS inside a domain where the port-bound rate would exceed it (large NVLink domains).
  BytesPerSecond nvls_channel_bw{};
  /// Pipeline fill between the intra- and inter-domain phases of an algorithm that spans
  /// domains: the collective takes min(ramp * x, fill) more than its bandwidth term x.
  double cross_fill_us = 0;
  double cross_ramp = 0;
  std::string source;  ///< citations of the fits
  std::string path;    ///< for messages
};

/// One calibration file.
struct CalibrationFile {
  std::string name;               ///< "defaults", "h100", ...
  std::string path;               ///< for messages
  std::vector<std::string> gpus;  ///< GPU catalog names it applies to (empty for defaults)
  std::string measured_device;
  std::optional<int> ring_channels, nvls_channels;
  std::map<std::string, LinePatch, std::less<>> lines;  ///< "all_reduce/ring/simple" -> patch
};

/// The op family whose lines an op uses: broadcast runs like all_gather's ring, reduce like
/// reduce_scatter's, send/recv like all_to_all's direct transfers.
Op line_family(Op op);
/// "all_reduce/ring/simple".
std::string line_key(Op family, Algorithm a, Protocol p);

class Calibration {
 public:
  /// Every catalog/collectives/*.yaml of the catalog (embedded or --catalog DIR).
  static base::Result<Calibration> load(const hardware::Catalog& catalog);
  /// From in-memory files (paths relative to the catalog root, e.g. "collectives/h100.yaml");
  /// files outside collectives/ are ignored. All errors of all files are reported together.
  static base::Result<Calibration> from_files(std::span<const hardware::CatalogFile> files);

  /// A calibration profile (`clustertwin calibrate --out`, docs/models/calibration.md) read from
  /// its text: the same `collectives:` mapping as a catalog file, plus its `profile:` record.
  static base::Result<CalibrationFile> read_profile(const hardware::CatalogFile& file);
  /// This calibration with a profile laid over it: for the profile's GPUs its fields override
  /// the catalog's (defaults, then the GPU's file, then the profiles in the order they were
  /// laid), field by field; a second profile for the same GPU overrides only the fields it sets.
  [[nodiscard]] Calibration with_profile(CalibrationFile profile) const;
  /// The last profile laid over a GPU, nullptr when none.
  [[nodiscard]] const CalibrationFile* profile_for(std::string_view gpu) const;
  /// Every profile laid over the catalog's files, in the order they were laid.
  [[nodiscard]] const std::vector<CalibrationFile>& profiles() const { return profiles_; }

  /// The line for a GPU type; the GPU's file (if any) overrides defaults field by field. A line
  /// missing from defaults is an internal error (CT_CHECK): defaults.yaml covers every line the
  /// model asks for, and a test checks that.
  [[nodiscard]] Line line(std::string_view gpu, Op op, Algorithm a, Protocol p) const;
  [[nodiscard]] bool has_line(Op op, Algorithm a, Protocol p) const;
  [[nodiscard]] int ring_channels(std::string_view gpu) const;
  [[nodiscard]] int nvls_channels(std::string_view gpu) const;
  /// The calibration file of a GPU type, nullptr when only defaults apply.
  [[nodiscard]] const CalibrationFile* for_gpu(std::string_view gpu) const;
  [[nodiscard]] const CalibrationFile& defaults() const { return defaults_; }
  [[nodiscard]] const std::vector<CalibrationFile>& files() const { return files_; }
  /// The at-scale parameters of a GPU type (all zero when none are set).
  [[nodiscard]] const ScaleParams& scale(std::string_view gpu) const;

 private:
  CalibrationFile defaults_;
  std::vector<CalibrationFile> files_;     // per-GPU files
  std::vector<CalibrationFile> profiles_;  // laid over the files (with_profile)
  std::vector<ScaleParams> scale_;         // at-scale parameters per GPU family
  ScaleParams no_scale_;
};

}  // namespace clustertwin::collective
