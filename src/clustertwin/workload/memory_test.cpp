#include "clustertwin/workload/memory.h"

#include <gtest/gtest.h>

#include "clustertwin/models/model_catalog.h"

namespace clustertwin::workload {
namespace {

const hardware::Catalog& cat() {
  static const hardware::Catalog c = *hardware::Catalog::load_embedded();
  return c;
}

// Korthikanti et al. 2022, Table 2 / eq. (1): with tensor and sequence parallelism and no
// recomputation a GPT layer stores s*b*h*34/t bytes (plus the softmax term FlashAttention drops).
TEST(Memory, GptLayerActivationsMatchKorthikanti) {
  auto m = *models::load_model(cat(), "gpt3-175b");
  TrainingLayout l{
      .tp = 8, .pp = 96, .dp = 1, .micro_batch = 1, .global_batch = 96, .seq_len = 2048};
  auto stages = training_memory(m, l);
  // Middle stage: one layer, pp - s in-flight micro-batches.
  const auto& s = stages[50];
  const double per_layer = 2048.0 * 12288 * 34 / 8;
  EXPECT_NEAR(s.activations.base() / (per_layer * (96 - 50)), 1.0, 0.03);
}

TEST(Memory, OptimizerShardsWithZero) {
  auto m = *models::load_model(cat(), "llama3.1-70b");
  TrainingLayout z0{
      .tp = 8, .pp = 1, .dp = 8, .micro_batch = 1, .global_batch = 64, .seq_len = 4096, .zero = 0};
  TrainingLayout z1 = z0;
  z1.zero = 1;
  const auto a = training_memory(m, z0)[0];
  const auto b = training_memory(m, z1)[0];
  EXPECT_NEAR(a.optimizer.base() / b.optimizer.base(), 8.0, 1e-6);
  EXPECT_NEAR(a.params, 70.6e9 / 8, 0.05 * 70.6e9 / 8);
}

TEST(Memory, DoesNotFitNamesTotalCapacityAndBiggestTerm) {
  auto m = *models::load_model(cat(), "llama3.1-405b");
  TrainingLayout l{.tp = 1, .pp = 1, .dp = 8, .micro_batch = 1, .global_batch = 8, .seq_len = 8192};
  auto r = check_memory(m, l, base::gigabytes(80));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not fit in GPU memory"), std::string::npos);
  EXPECT_NE(r.error().message.find("biggest term: gradients"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace clustertwin::workload
