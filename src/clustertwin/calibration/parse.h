#pragma once
/// Reading measurement files (measurements.h), format detected from content. Every error names
/// the file and line and says what was expected; all errors of a file are reported together. A
/// file that is cut short (nccl-tests output without its closing summary), that comes from some
/// other tool, or that contradicts itself (busbw that does not match the rank count) is refused
/// rather than half-read.

#include <string>
#include <string_view>

#include "clustertwin/base/result.h"
#include "clustertwin/calibration/measurements.h"

namespace clustertwin::calibration {

/// The format of a file's text; the path is only used in the message when nothing matches.
base::Result<Format> detect_format(std::string_view text, std::string_view path);

/// Parses one file's text (already read) and appends what it holds to `into`, with its
/// InputFile entry (content hash included). `path` is for messages and, for AIConfigurator
/// kernel tables and nccl-tests logs without a command line, for the table's kind or op.
base::Status parse_text(std::string_view path, std::string_view text, Measurements& into);

/// Reads a file from disk and parses it (`cannot read` is an error naming the path).
base::Status parse_path(const std::string& path, Measurements& into);

}  // namespace clustertwin::calibration
