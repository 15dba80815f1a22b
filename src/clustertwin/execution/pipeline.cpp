#include "clustertwin/execution/pipeline.h"

#include <algorithm>
#include <functional>

#include "clustertwin/base/check.h"

namespace clustertwin::execution {

std::vector<TaskId> stage_order(int pp, int vpp, int64_t m, int s) {
  std::vector<TaskId> out;
  if (vpp == 1) {
    const int64_t warm = std::min<int64_t>(pp - s - 1, m);
    int64_t f = 0, b = 0;
    for (; f < warm; ++f) out.push_back({s, f, true});
    while (f < m) {
      out.push_back({s, f++, true});
      out.push_back({s, b++, false});
    }
    while (b < m) out.push_back({s, b++, false});
    return out;
  }
  const int64_t total = m * vpp;
  const int64_t group = static_cast<int64_t>(pp) * vpp;
  auto task = [&](int64_t k, bool fwd) {
    int v = static_cast<int>((k % group) / pp);
    if (!fwd) v = vpp - 1 - v;
    const int64_t micro = (k / group) * pp + k % pp;
    return TaskId{v * pp + s, micro, fwd};
  };
  const int64_t warm = std::min<int64_t>(
      static_cast<int64_t>(pp - s - 1) * 2 + static_cast<int64_t>(vpp - 1) * pp, total);
  int64_t f = 0, b = 0;
  for (; f < warm; ++f) out.push_back(task(f, true));
  while (f < total) {
    out.push_back(task(f++, true));
    out.push_back(task(b++, false));
  }
  while (b < total) out.push_back(task(b++, false));
  return out;
}

PipelineResult run_pipeline(const PipelineInput& in) {
  const int chunks = in.pp * in.vpp;
  CT_CHECK(static_cast<int>(in.forward.size()) == chunks &&
               static_cast<int>(in.backward.size()) == chunks,
           "pipeline input: one forward and backward time per chunk");
  CT_CHECK(static_cast<int>(in.p2p.size()) == std::max(0, chunks - 1),
           "pipeline input: p2p per boundary");
  CT_CHECK(in.vpp == 1 || in.micro_batches % in.pp == 0,
           "interleaving needs micro-batches % pp == 0");
  const int64_t m = in.micro_batches;
  using engine::Tick;
  std::vector<Tick> fwd(static_cast<size_t>(chunks)), bwd(static_cast<size_t>(chunks)),
      p2p(static_cast<size_t>(std::max(0, chunks - 1)));
  for (int c = 0; c < chunks; ++c) {
    fwd[static_cast<size_t>(c)] = engine::to_ticks(in.forward[static_cast<size_t>(c)]);
    bwd[static_cast<size_t>(c)] = engine::to_ticks(in.backward[static_cast<size_t>(c)]);
  }
  for (size_t c = 0; c < p2p.size(); ++c) p2p[c] = engine::to_ticks(in.p2p[c]);

  std::vector<std::vector<TaskId>> order(static_cast<size_t>(in.pp));
  for (int s = 0; s < in.pp; ++s) order[static_cast<size_t>(s)] = stage_order(in.pp, in.vpp, m, s);
  // Ready time of each task's input (-1 = not yet known).
  auto idx = [&](int c, int64_t mb, bool f) {
    return (static_cast<size_t>(c) * static_cast<size_t>(m) + static_cast<size_t>(mb)) * 2 +
           (f ? 0 : 1);
  };
  std::vector<Tick> ready(static_cast<size_t>(chunks) * static_cast<size_t>(m) * 2, -1);
  for (int64_t mb = 0; mb < m; ++mb) ready[idx(0, mb, true)] = 0;

  PipelineResult r;
  r.busy.assign(static_cast<size_t>(in.pp), 0);
  r.last_end.assign(static_cast<size_t>(in.pp), 0);
  r.last_backward.assign(static_cast<size_t>(in.pp), 0);
  std::vector<size_t> next(static_cast<size_t>(in.pp), 0);
  std::vector<bool> busy(static_cast<size_t>(in.pp), false);
  engine::Simulator sim;
  std::function<void(engine::Simulator&, int)> try_start;
  try_start = [&](engine::Simulator& e, int s) {
    const auto us = static_cast<size_t>(s);
    if (busy[us] || next[us] >= order[us].size()) return;
    const TaskId t = order[us][next[us]];
    const Tick at = ready[idx(t.chunk, t.micro, t.forward)];
    if (at < 0) return;  // its input is not produced yet; the producer will call back
    if (at > e.now()) {
      e.schedule_at(at, [&try_start, s](engine::Simulator& e2) { try_start(e2, s); });
      return;
    }
    busy[us] = true;
    ++next[us];
    const Tick dur =
        t.forward ? fwd[static_cast<size_t>(t.chunk)] : bwd[static_cast<size_t>(t.chunk)];
    const Tick start = e.now();
    e.schedule_at(start + dur, [&, s, t, start, dur](engine::Simulator& e2) {
      const auto us2 = static_cast<size_t>(s);
      busy[us2] = false;
      r.busy[us2] += dur;
      r.last_end[us2] = e2.now();
      if (!t.forward) r.last_backward[us2] = dur;
      r.tasks.push_back({s, t.chunk, t.micro, t.forward, start, e2.now()});
      // Whoever consumes this output becomes ready (after the send when it crosses stages).
      if (t.forward) {
        if (t.chunk + 1 < chunks) {
          ready[idx(t.chunk + 1, t.micro, true)] = e2.now() + p2p[static_cast<size_t>(t.chunk)];
          const int ns = (t.chunk + 1) % in.pp;
          e2.schedule_at(ready[idx(t.chunk + 1, t.micro, true)],
                         [&try_start, ns](engine::Simulator& e3) { try_start(e3, ns); });
        } else {
          ready[idx(t.chunk, t.micro, false)] = e2.now();
        }
      } else if (t.chunk > 0) {
        ready[idx(t.chunk - 1, t.micro, false)] = e2.now() + p2p[static_cast<size_t>(t.chunk - 1)];
        const int ps = (t.chunk - 1) % in.pp;
        e2.schedule_at(ready[idx(t.chunk - 1, t.micro, false)],
                       [&try_start, ps](engine::Simulator& e3) { try_start(e3, ps); });
      }
      try_start(e2, s);
    });
  };
  for (int s = 0; s < in.pp; ++s)
    sim.schedule_at(0, [&try_start, s](engine::Simulator& e) { try_start(e, s); });
  sim.run();
  for (int s = 0; s < in.pp; ++s) {
    CT_CHECK(next[static_cast<size_t>(s)] == order[static_cast<size_t>(s)].size(),
             "pipeline schedule deadlocked");
  }
  r.makespan = *std::max_element(r.last_end.begin(), r.last_end.end());
  r.events = sim.events_run();
  return r;
}

}  // namespace clustertwin::execution
