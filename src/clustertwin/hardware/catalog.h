#pragma once
/// The hardware catalog: GPUs, CPUs, NICs, switches, transceivers, systems and clusters loaded
/// from catalog/ (embedded in the binary, or a directory given with --catalog). Lookups by name
/// fail with the closest known names suggested.

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/hardware/specs.h"

namespace clustertwin::hardware {

/// One catalog file: its path relative to the catalog root (for messages) and its text.
struct CatalogFile {
  std::string path;
  std::string text;
};

class Catalog {
 public:
  /// The catalog compiled into the binary.
  static base::Result<Catalog> load_embedded();
  /// Every *.yaml / *.json file under `dir` (same layout as catalog/).
  static base::Result<Catalog> load_directory(const std::string& dir);
  /// From in-memory files; reports every error of every file, then cross-checks references
  /// (a system's GPU must exist, a rack must fit its NVLink switch radix, ...).
  static base::Result<Catalog> load_files(std::span<const CatalogFile> files);

  [[nodiscard]] base::Result<const GpuSpec*> gpu(std::string_view name) const;
  [[nodiscard]] base::Result<const CpuSpec*> cpu(std::string_view name) const;
  [[nodiscard]] base::Result<const NicSpec*> nic(std::string_view name) const;
  [[nodiscard]] base::Result<const SwitchSpec*> switch_spec(std::string_view name) const;
  [[nodiscard]] base::Result<const TransceiverSpec*> transceiver(std::string_view name) const;
  [[nodiscard]] base::Result<const SystemSpec*> system(std::string_view name) const;
  [[nodiscard]] base::Result<const ClusterSpec*> cluster(std::string_view name) const;

  [[nodiscard]] const std::map<std::string, GpuSpec, std::less<>>& gpus() const { return gpus_; }
  [[nodiscard]] const std::map<std::string, CpuSpec, std::less<>>& cpus() const { return cpus_; }
  [[nodiscard]] const std::map<std::string, NicSpec, std::less<>>& nics() const { return nics_; }
  [[nodiscard]] const std::map<std::string, SwitchSpec, std::less<>>& switches() const {
    return switches_;
  }
  [[nodiscard]] const std::map<std::string, TransceiverSpec, std::less<>>& transceivers() const {
    return transceivers_;
  }
  [[nodiscard]] const std::map<std::string, SystemSpec, std::less<>>& systems() const {
    return systems_;
  }
  [[nodiscard]] const std::map<std::string, ClusterSpec, std::less<>>& clusters() const {
    return clusters_;
  }
  /// Files of other layers (models/, ...) kept for them to parse: path -> text.
  [[nodiscard]] const std::vector<CatalogFile>& other_files() const { return other_files_; }

  /// The file an entry was read from ("gpu", "gb300") -> path and text; nullptr if unknown.
  [[nodiscard]] const CatalogFile* source_file(std::string_view kind, std::string_view name) const;

  /// Checks a cluster's references and sizes against this catalog (used for catalog clusters,
  /// cluster files, inline scenario clusters and the SYSTEM*COUNT shorthand alike).
  [[nodiscard]] base::Status validate(const ClusterSpec& c) const;

 private:
  std::map<std::string, GpuSpec, std::less<>> gpus_;
  std::map<std::string, CpuSpec, std::less<>> cpus_;
  std::map<std::string, NicSpec, std::less<>> nics_;
  std::map<std::string, SwitchSpec, std::less<>> switches_;
  std::map<std::string, TransceiverSpec, std::less<>> transceivers_;
  std::map<std::string, SystemSpec, std::less<>> systems_;
  std::map<std::string, ClusterSpec, std::less<>> clusters_;
  std::vector<CatalogFile> other_files_;
  std::map<std::string, std::string, std::less<>> file_of_;      // "system:gb300-nvl72" -> path
  std::map<std::string, CatalogFile, std::less<>> entry_files_;  // "system:gb300-nvl72" -> file
};

/// Reads the body of a `cluster:` mapping (catalog file, cluster file or inline in a scenario).
/// Errors go to the reader's context.
std::optional<ClusterSpec> read_cluster(config::Reader& r);

/// Resolves what users type after --cluster: a catalog name (`azure-ndv6-gb300`), a YAML/JSON
/// file (`my-cluster.yaml` holding a `cluster:` mapping), or `SYSTEM*COUNT` (`gb300-nvl72*8`:
/// that many systems on a non-blocking fat tree of their own NICs and default switch).
base::Result<ClusterSpec> resolve_cluster(const Catalog& catalog, std::string_view arg);

}  // namespace clustertwin::hardware
