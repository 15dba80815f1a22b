#pragma once
/// A collective sweep as the user asks for it (`CollectiveRequest`), the one table of its fields
/// (`collective_fields`: the `collective` verb's flags, Python's keywords) and its run: the
/// nccl-tests table of one collective over a range of sizes (collective::run_sweep), or, with an
/// MoE kernel (`impl`), MoE dispatch or combine at several token counts
/// (collective::run_moe_sweep). docs/models/collectives.md.

#include <nlohmann/json.hpp>
#include <string>

#include "clustertwin/scenario/environment.h"
#include "clustertwin/scenario/fields.h"

namespace clustertwin::scenario {

/// What the user asked, as typed values; sizes as nccl-tests sizes ("16G") or units ("1 GB").
/// 0 and "" mean the default rule the field's help names.
struct CollectiveRequest {
  std::string cluster = "azure-ndv6-gb300";
  int gpus = 0;
  int gpus_per_domain = 0;
  std::string op = "all_reduce";
  std::string min_bytes = "8";
  std::string max_bytes = "16G";
  double step_factor = 2;
  std::string step_bytes = "0";
  std::string algo = "auto";
  std::string protocol = "auto";
  std::string model = "flow";
  std::string routing = "spray";
  std::string dtype = "float";
  int channels = 0;
  std::string calibration;
  std::string sharp;  ///< "on", "off" or "" (the cluster's scale_out.sharp)
  std::string tuner;  ///< "": collective::resolve_tuner's rule (fastest under a profile, else nccl)
  std::string impl;   ///< an MoE dispatch/combine kernel: the MoE sweep
  std::string moe = "deepseek-v3";
  std::string tokens = "1,128,2048";
  int64_t token_bytes = 0;
  std::string phase = "dispatch";
  bool balanced = false;
};

/// The fields of a collective request, in the order `--help` shows them.
const FieldTable<CollectiveRequest>& collective_fields();
/// Words of the table, for `render`.
const std::vector<FieldWord>& collective_words();

/// What a collective sweep gives back: its JSON (collective::to_json or moe_to_json), the
/// nccl-tests style table and the CSV (empty for the MoE sweep, which has no CSV form).
struct CollectiveRun {
  nlohmann::json json;
  std::string table, csv;
};

/// Runs the sweep the request asks for. Messages name fields ({op}, {min_bytes}).
base::Result<CollectiveRun> run_collective(const Environment& env, const CollectiveRequest& r);

}  // namespace clustertwin::scenario
