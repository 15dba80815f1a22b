#pragma once
/// The output files of one run, each path given once: one path named by two outputs would
/// silently overwrite one with the other (issue 19), so a run checks them before anything runs.

#include <string>
#include <vector>

#include "clustertwin/base/result.h"

namespace clustertwin::scenario {

/// One output a run writes: what names it (the door's word: a flag, a scenario key) and where.
struct OutputPath {
  std::string name;
  std::string path;  ///< "" (not written) is never a clash; "-" is standard output
};

/// Refuses two outputs that name the same file: the same absolute path after resolving "..",
/// "." and symbolic links of the parts that exist (std::filesystem::weakly_canonical), or the
/// same text where a path cannot be resolved; two on standard output ("-", /dev/stdout), whose
/// documents would run together. The message names both outputs and the path.
base::Status check_distinct_outputs(const std::vector<OutputPath>& outputs);

}  // namespace clustertwin::scenario
