#pragma once
/// The synthetic job stream (docs/models/orchestration.md §1.3): what an LLM-era cluster runs,
/// sized from Acme (NSDI'24: pretraining holds most GPU time, most jobs are small evaluation and
/// debug runs) since no public LLM cluster trace has topology and failures.
///
/// `llm` (the default preset), per class (Poisson arrivals; sizes and durations independent):
/// - pretrain: 1/16 to 1/2 of the cluster in units of 64 GPUs, Llama 3.1 70B (tp 8, pp 4) or
///   405B (tp 8, pp 16) from 1,024 GPUs, lognormal run time (median 36 h, sigma 0.8, 6 h to
///   14 days), QOS normal, Young/Daly checkpoints;
/// - finetune: 8 to 256 GPUs, Llama 3.1 8B (tp 1) or 70B (tp 8, pp 2) from 64 GPUs, median 2 h
///   (sigma 1.0, 10 min to 2 days), QOS low (preemptible), hourly checkpoints;
/// - dev (evaluation, debug): 1 to 8 GPUs, median 10 min (sigma 1.3, 30 s to 12 h), black box;
/// - inference services: 4 services of 64-GPU replicas, at most `inference` of the cluster at the
///   14:00 peak and 40% of that at night (a cosine daily cycle, hourly steps), QOS high.
/// Arrival rates follow from the offered `load` (GPU-hours asked / GPU-hours left by inference)
/// split 65/30/5 between pretrain, finetune and dev; `jobs=N` instead fixes the job count
/// (the dev rate absorbs the difference). Time limits are the run time x U(1.2, 3), rounded up
/// to 10 minutes (users over-ask).
/// `philly-like`: Philly's size mix (76,627 of 82,247 jobs on 1 GPU, ..., up to 128) and run
/// times (lognormal, median 1,144 s, mean 13,136 s), black boxes, 11 accounts.
///
/// SPEC: `PRESET[:key=value,...]` with keys load, jobs, inference, pretrain, finetune, dev,
/// accounts.

#include <string>
#include <string_view>

#include "clustertwin/base/result.h"
#include "clustertwin/scheduler/cluster.h"
#include "clustertwin/scheduler/job.h"
#include "clustertwin/scheduler/speed.h"

namespace clustertwin::scheduler {

struct SyntheticSpec {
  std::string preset = "llm";
  double load = 0.75;
  int64_t jobs = 0;
  double inference = 0.15;
  double pretrain = 0.65, finetune = 0.30, dev = 0.05;
  int accounts = 8;
};

base::Result<SyntheticSpec> parse_synthetic(std::string_view spec);

/// Generates jobs submitted in [0, horizon) on a cluster like `c`.
base::Result<Workload> generate(const SyntheticSpec& spec, const ClusterModel& c, Tick horizon,
                                uint64_t seed);

/// The mix names layouts that fit the flagship's GPUs; on GPUs with less memory (an 8B
/// fine-tune at TP1 needs ~85 GB) a training job whose layout does not fit gets twice the tensor
/// parallelism (up to 8), then twice the pipeline stages, until it fits; dp and the global batch
/// follow. Jobs that fit are untouched; a job that cannot be made to fit is left for
/// check_inputs() to report. Returns how many jobs were changed.
int64_t fit_to_memory(Workload& w, SpeedModel& speed);

}  // namespace clustertwin::scheduler
