#pragma once
/// SHA-256 (FIPS 180-4) and base64 (RFC 4648): the content hash a calibration profile records for
/// each input file, and the hashes of the report's inline scripts in its Content-Security-Policy
/// (CSP Level 2 'sha256-<base64>' sources). No crypto library is a dependency of the project;
/// this is the standard's algorithm.

#include <array>
#include <span>
#include <string>
#include <string_view>

namespace clustertwin::base {

std::array<unsigned char, 32> sha256(std::string_view data);
/// Lowercase hex of sha256(data).
std::string sha256_hex(std::string_view data);
/// Standard base64 with padding.
std::string base64(std::span<const unsigned char> bytes);

}  // namespace clustertwin::base
