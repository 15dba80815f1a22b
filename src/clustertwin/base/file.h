#pragma once
/// Writing outputs so that no file is ever lost or half-written (issue 19): the text goes to a
/// temporary file in the same directory, which is flushed to disk and renamed over the target
/// only once complete. A run killed at any moment leaves the previous file intact (plus, at
/// worst, a stray "<name>.tmp-XXXXXX"); a full disk or a missing directory is an error with the
/// path and the system's message, never a silent exit 0. Outputs that are not regular files
/// (/dev/stdout, /dev/null, a pipe) are written in place, since they cannot be renamed over.

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

#include "clustertwin/base/result.h"

namespace clustertwin::base {

/// The most bytes clustertwin reads from one input (a scenario, cluster, model or layout file, a
/// trace, a results document): 1 GiB, a trace of kMaxJobs (10^7) rows of 100 bytes. An input that
/// does not end (/dev/zero, /dev/urandom, `yes |` into `report --from -`) stops here with an error
/// instead of filling memory for as long as it runs.
inline constexpr int64_t kMaxInputBytes = int64_t{1} << 30;

/// All of `in`, at most `limit` bytes. More is an error that says so ("more than 1 GiB, the most
/// clustertwin reads from one input (base::kMaxInputBytes)"); so is a failed read (the system's
/// message). The error names no file: the caller does.
Result<std::string> read_all(std::istream& in, int64_t limit = kMaxInputBytes);

/// Writes `text` to `path` atomically (see above). The error names the path and carries the
/// system's message ("No space left on device").
Status write_file_atomic(const std::string& path, std::string_view text);

/// Writes `text` to standard output and flushes it; an error (a closed pipe, /dev/full) comes
/// back with the system's message.
Status write_stdout(std::string_view text);

/// Flushes standard output and reports whether everything written to it so far arrived
/// (std::cout and stdio both); for the end of main().
Status flush_stdout();

}  // namespace clustertwin::base
