#include "clustertwin/calibration/sha256.h"

#include "clustertwin/base/sha256.h"

namespace clustertwin::calibration {

std::string sha256_hex(std::string_view data) { return base::sha256_hex(data); }

}  // namespace clustertwin::calibration
