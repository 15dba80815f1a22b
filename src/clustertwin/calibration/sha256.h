#pragma once
/// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex: the content hash a calibration
/// profile records for each input file, so a profile names exactly which measurements it was
/// fitted on. No crypto library is a dependency of the project; this is the standard's algorithm.

#include <string>
#include <string_view>

namespace clustertwin::calibration {

std::string sha256_hex(std::string_view data);

}  // namespace clustertwin::calibration
