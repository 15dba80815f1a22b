// Results of a run: timeline samples, and the ScheduleResult through collect_results
// (run_results.h).

#include "clustertwin/scheduler/sim.h"

namespace clustertwin::scheduler::detail {

void Sim::sample() {
  TimelineSample s;
  s.t_s = secs(sim_.now());
  s.allocated_gpus = cap_.allocated_gpus();
  s.busy_nodes = cap_.busy_nodes();
  s.down_gpus = cap_.down_gpus();
  for (int id : queue_.all()) {
    const Job& j = jobs_[static_cast<size_t>(id)];
    if (j.state != State::kPending) continue;
    ++s.pending_jobs;
    s.pending_gpus += job_gpus(j);
  }
  s.running_jobs = static_cast<int64_t>(running_.size());
  const auto f = fragmentation(index_, pcfg_, view());
  s.partial_domains = f.partial_domains;
  s.free_blocks = f.free_blocks;
  s.stranded_gpus = f.stranded_gpus;
  for (double sp : domain_speed_) s.degraded_domains += sp < 1.0 ? 1 : 0;
  tally_.timeline.push_back(s);
  const Tick next = sim_.now() + sample_every_;
  if (next <= cfg_.horizon) sim_.schedule_at(next, [this](engine::Simulator&) { sample(); });
}

ScheduleResult Sim::results() {
  const RunFacts facts{.cluster = &c_,
                       .config = &cfg_,
                       .placement = &pcfg_,
                       .blocks = index_.blocks(),
                       .block_nodes = index_.block_nodes(),
                       .integrals = cap_.integrals(),
                       .events = sim_.events_run(),
                       .speed_estimates = speed_ ? speed_->estimates() : 0,
                       .skipped_rows = w_.skipped_rows};
  return collect_results(facts, jobs_, std::move(tally_));
}

}  // namespace clustertwin::scheduler::detail
