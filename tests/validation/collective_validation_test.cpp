// Validation of the collective model against measured nccl-tests tables and published cases
// (docs/models/collectives.md, "Validation"). Filled in below.
#include <gtest/gtest.h>
