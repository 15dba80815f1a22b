#include "clustertwin/report/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "clustertwin/report/table.h"

namespace clustertwin::report {
namespace {

using scheduler::Percentiles;

double r6(double v) { return round_sig(v); }

Json pct(const Percentiles& p) {
  return {{"count", p.count}, {"mean", r6(p.mean)}, {"p50", r6(p.p50)},
          {"p90", r6(p.p90)}, {"p99", r6(p.p99)},   {"max", r6(p.max)}};
}

Json ettr_json(const scheduler::EttrBreakdown& e) {
  return {{"ettr", r6(e.ettr())},
          {"jobs", e.jobs},
          {"useful_gpu_hours", r6(e.useful_gpu_h)},
          {"slowdown_gpu_hours", r6(e.slowdown_gpu_h)},
          {"checkpoint_gpu_hours", r6(e.checkpoint_gpu_h)},
          {"lost_gpu_hours", r6(e.lost_gpu_h)},
          {"restore_gpu_hours", r6(e.restore_gpu_h)},
          {"requeue_wait_gpu_hours", r6(e.requeue_wait_gpu_h)},
          {"wall_gpu_hours", r6(e.wall_gpu_h)}};
}

Json failure_log_json(const std::vector<scheduler::FailureRecord>& log, size_t max) {
  Json a = Json::array();
  for (size_t i = 0; i < log.size() && i < max; ++i) {
    const auto& f = log[i];
    a.push_back({{"t_h", r6(f.t_s / 3600)},
                 {"class", f.cls},
                 {"scope", scheduler::failure_scope_name(f.scope)},
                 {"target", f.target},
                 {"jobs_hit", f.jobs_hit},
                 {"gpus_down", f.gpus_down},
                 {"repair_h", r6(f.repair_s / 3600)}});
  }
  return a;
}

std::string pct_s(double v) { return fmt::format("{:.1f}%", 100 * v); }

std::string dur(double s) {
  if (!std::isfinite(s)) return "-";
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  if (s < 2 * 86400) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

std::string num(double v) {
  if (std::fabs(v) >= 1e4) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 100) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3g}", v);
}

}  // namespace

Json schedule_json(const scheduler::ScheduleResult& r, size_t max_failures) {
  Json j;
  j["cluster"] = r.cluster;
  j["policy"] = r.policy;
  j["placement"] = r.placement;
  j["sub_node_fit"] = r.sub_node;
  j["priority"] = r.priority;
  j["spares_per_block"] = r.spares;
  j["segment_nodes"] = r.segment_nodes;
  j["seed"] = r.seed;
  j["horizon_s"] = r6(r.horizon_s);
  j["gpus"] = r.gpus;
  j["nodes"] = r.nodes;
  j["domains"] = r.domains;
  j["jobs"] = {{"submitted", r.jobs_submitted},
               {"started", r.jobs_started},
               {"finished", r.jobs_finished},
               {"running_at_end", r.jobs_running_at_end},
               {"pending_at_end", r.jobs_pending_at_end},
               {"skipped", r.jobs_skipped}};
  j["utilization"] = r6(r.utilization);
  j["utilization_of_available"] = r6(r.utilization_available);
  j["down_fraction"] = r6(r.down_fraction);
  j["node_occupancy"] = r6(r.occupancy);
  j["blocks_with_down_nodes"] = r6(r.blocks_with_down);
  j["blocks_short_of_segment"] = r6(r.blocks_short);
  j["goodput_fraction"] = r6(r.goodput);
  j["queue_wait_s"] = pct(r.wait_s);
  Json by = Json::object();
  for (const auto& [k, p] : r.wait_by_size) by[k] = pct(p);
  j["queue_wait_by_size_s"] = by;
  j["jct_s"] = pct(r.jct_s);
  j["slowdown"] = pct(r.slowdown);
  Json classes = Json::object(), hits = Json::object();
  for (const auto& [k, v] : r.failures_by_class) classes[k] = v;
  for (const auto& [k, v] : r.interruptions_by_class) hits[k] = v;
  j["failures"] = {{"count", r.failures},
                   {"by_class", classes},
                   {"job_interruptions", r.interruptions},
                   {"job_interruptions_by_class", hits},
                   {"hot_swaps", r.hot_swaps},
                   {"requeues", r.requeues},
                   {"mtbi_s", r6(r.mtbi_s)},
                   {"lost_gpu_hours", r6(r.lost_gpu_h)}};
  j["preemptions"] = r.preemptions;
  j["ettr"] = ettr_json(r.ettr);
  Json t;
  std::vector<double> th, alloc, busy, down, pend, pendg, run, partial, stranded, degraded, freeb;
  for (const auto& s : r.timeline) {
    th.push_back(r6(s.t_s / 3600));
    alloc.push_back(static_cast<double>(s.allocated_gpus));
    busy.push_back(static_cast<double>(s.busy_nodes));
    down.push_back(static_cast<double>(s.down_gpus));
    pend.push_back(static_cast<double>(s.pending_jobs));
    pendg.push_back(static_cast<double>(s.pending_gpus));
    run.push_back(static_cast<double>(s.running_jobs));
    partial.push_back(s.partial_domains);
    stranded.push_back(static_cast<double>(s.stranded_gpus));
    degraded.push_back(s.degraded_domains);
    freeb.push_back(s.free_blocks);
  }
  t["t_h"] = th;
  t["allocated_gpus"] = alloc;
  t["busy_nodes"] = busy;
  t["down_gpus"] = down;
  t["pending_jobs"] = pend;
  t["pending_gpus"] = pendg;
  t["running_jobs"] = run;
  t["partial_domains"] = partial;
  t["stranded_gpus"] = stranded;
  t["free_blocks"] = freeb;
  t["degraded_domains"] = degraded;
  j["timeline"] = t;
  j["failure_log"] = failure_log_json(r.failure_log, max_failures);
  j["failure_log_truncated"] = r.failure_log.size() > max_failures ||
                               r.failures > static_cast<int64_t>(r.failure_log.size());
  j["events"] = r.events;
  j["speed_estimates"] = r.speed_estimates;
  j["backfill_passes"] = r.backfill_passes;
  j["notes"] = r.notes;
  return j;
}

std::string schedule_text(const std::vector<scheduler::ScheduleResult>& runs) {
  if (runs.empty()) return "";
  const auto& a = runs.front();
  std::string out = fmt::format("{} ({} GPUs, {} nodes, {} NVLink domains), {} of simulated time\n",
                                a.cluster, a.gpus, a.nodes, a.domains, dur(a.horizon_s));
  std::vector<std::string> headers = {"metric"};
  for (const auto& r : runs) headers.push_back(r.placement);
  std::vector<bool> left = {true};
  Table t(headers, left);
  auto row = [&](const std::string& name, auto f) {
    std::vector<std::string> cells = {name};
    for (const auto& r : runs) cells.push_back(f(r));
    t.add(cells);
  };
  using R = scheduler::ScheduleResult;
  row("queue policy", [](const R& r) { return fmt::format("{} / {}", r.policy, r.priority); });
  row("segment (nodes per block)", [](const R& r) {
    if (r.placement != "block" && r.placement != "kueue") return std::string("-");
    return fmt::format("{} ({} spare)", r.segment_nodes, r.spares);
  });
  if (std::any_of(runs.begin(), runs.end(), [](const R& r) { return r.sub_node != "pack"; })) {
    row("sub-node jobs", [](const R& r) { return r.sub_node; });
  }
  row("jobs submitted", [](const R& r) { return std::to_string(r.jobs_submitted); });
  if (a.jobs_skipped > 0) {
    row("jobs skipped (bad input)", [](const R& r) { return std::to_string(r.jobs_skipped); });
  }
  row("jobs finished", [](const R& r) { return std::to_string(r.jobs_finished); });
  row("running / pending at end", [](const R& r) {
    return fmt::format("{} / {}", r.jobs_running_at_end, r.jobs_pending_at_end);
  });
  row("utilisation (allocated)", [](const R& r) { return pct_s(r.utilization); });
  row("utilisation of available", [](const R& r) { return pct_s(r.utilization_available); });
  row("goodput (useful GPU-time)", [](const R& r) { return pct_s(r.goodput); });
  row("nodes busy (occupancy)", [](const R& r) { return pct_s(r.occupancy); });
  row("GPUs down (time share)", [](const R& r) { return pct_s(r.down_fraction); });
  row("  blocks with down / short",
      [](const R& r) { return pct_s(r.blocks_with_down) + " / " + pct_s(r.blocks_short); });
  row("queue wait mean", [](const R& r) { return dur(r.wait_s.mean); });
  row("queue wait p50 / p90",
      [](const R& r) { return fmt::format("{} / {}", dur(r.wait_s.p50), dur(r.wait_s.p90)); });
  for (const auto& [bucket, p] : a.wait_by_size) {
    row(fmt::format("  wait mean, {}", bucket), [&, b = bucket](const R& r) {
      for (const auto& [k, q] : r.wait_by_size) {
        if (k == b) return dur(q.mean);
      }
      return std::string("-");
    });
  }
  row("JCT p50 / p90",
      [](const R& r) { return fmt::format("{} / {}", dur(r.jct_s.p50), dur(r.jct_s.p90)); });
  row("slowdown mean", [](const R& r) { return num(r.slowdown.mean); });
  row("failures", [](const R& r) { return std::to_string(r.failures); });
  row("job interruptions", [](const R& r) { return std::to_string(r.interruptions); });
  row("  hot swaps / requeues",
      [](const R& r) { return fmt::format("{} / {}", r.hot_swaps, r.requeues); });
  row("preemptions", [](const R& r) { return std::to_string(r.preemptions); });
  row("lost GPU-hours", [](const R& r) { return num(r.lost_gpu_h); });
  row("training ETTR", [](const R& r) { return pct_s(r.ettr.ettr()); });
  row("  placement slowdown (GPU-h)", [](const R& r) { return num(r.ettr.slowdown_gpu_h); });
  row("  checkpoint stalls (GPU-h)", [](const R& r) { return num(r.ettr.checkpoint_gpu_h); });
  row("  lost compute (GPU-h)", [](const R& r) { return num(r.ettr.lost_gpu_h); });
  row("  restarts (GPU-h)", [](const R& r) { return num(r.ettr.restore_gpu_h); });
  row("  requeue waits (GPU-h)", [](const R& r) { return num(r.ettr.requeue_wait_gpu_h); });
  out += t.render(2);
  for (const auto& n : a.notes) out += fmt::format("note: {}\n", n);
  return out;
}

std::string schedule_jobs_csv(const scheduler::ScheduleResult& r) {
  std::string out =
      "id,kind,gpus,submit_s,start_s,end_s,wait_s,work_s,finished,interruptions,hot_swaps,"
      "requeues,preemptions,lost_gpu_h,mean_speed\n";
  for (const auto& j : r.jobs) {
    out +=
        fmt::format("{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{},{},{},{:.6g},{:.6g}\n",
                    j.id, scheduler::job_kind_name(j.kind), j.gpus, j.submit_s, j.start_s, j.end_s,
                    j.wait_s, std::isfinite(j.work_s) ? j.work_s : -1.0, j.finished ? 1 : 0,
                    j.interruptions, j.hot_swaps, j.requeues, j.preemptions, j.lost_gpu_h, j.speed);
  }
  return out;
}

Json goodput_json(const scheduler::GoodputResult& g) {
  Json j;
  j["cluster"] = g.cluster;
  j["model"] = g.model;
  j["gpus"] = g.gpus;
  j["cluster_gpus"] = g.cluster_gpus;
  j["horizon_s"] = r6(g.horizon_s);
  j["step_time_s"] = r6(g.step_time_s);
  j["parameters"] = r6(g.parameters);
  j["checkpoint"] = {
      {"bytes", r6(g.checkpoint.bytes)},         {"save_s", r6(g.checkpoint.save_s)},
      {"restore_s", r6(g.checkpoint.restore_s)}, {"interval_s", r6(g.interval_s)},
      {"interval_auto", g.auto_interval},        {"young_daly_interval_s", r6(g.young_daly_s)}};
  j["mtbi_expected_s"] = r6(g.mtbi_expected_s);
  j["mtbi_s"] = std::isfinite(g.mtbi_s) ? Json(r6(g.mtbi_s)) : Json(nullptr);
  j["interruptions"] = g.interruptions;
  Json by = Json::object();
  for (const auto& [k, v] : g.interruptions_by_class) by[k] = v;
  j["interruptions_by_class"] = by;
  j["hot_swaps"] = g.hot_swaps;
  j["requeues"] = g.requeues;
  j["ettr_expected"] = r6(g.ettr_expected);
  j["ettr_breakdown"] = ettr_json(g.breakdown);
  Json sw = Json::array();
  for (const auto& p : g.sweep) {
    sw.push_back({{"interval_s", r6(p.interval_s)},
                  {"ettr_expected", r6(p.ettr_expected)},
                  {"ettr_simulated", r6(p.ettr_simulated)},
                  {"interruptions", p.interruptions}});
  }
  j["interval_sweep"] = sw;
  j["failure_log"] = failure_log_json(g.failure_log, 2000);
  return j;
}

std::string goodput_text(const scheduler::GoodputResult& g) {
  const auto& b = g.breakdown;
  std::string out = fmt::format(
      "{} on {} of {} GPUs of {}, {} of failures\n"
      "  step time {:.3g} s; checkpoint {:.3g} TB: save stall {}, restore {}\n"
      "  expected MTBI {} (Llama 3 rates); Young/Daly interval {}{}\n\n",
      g.model, g.gpus, g.cluster_gpus, g.cluster, dur(g.horizon_s), g.step_time_s,
      g.checkpoint.bytes / 1e12, dur(g.checkpoint.save_s), dur(g.checkpoint.restore_s),
      dur(g.mtbi_expected_s), dur(g.young_daly_s),
      g.auto_interval ? " (used)" : fmt::format("; used {}", dur(g.interval_s)));
  out += fmt::format("  interruptions {} (MTBI {}), hot swaps {}, requeues {}\n", g.interruptions,
                     dur(g.mtbi_s), g.hot_swaps, g.requeues);
  for (const auto& [k, v] : g.interruptions_by_class) out += fmt::format("    {:<12} {}\n", k, v);
  out += fmt::format("\n  ETTR {} simulated, {} first-order (1 - delta/tau - (tau/2 + R)/M)\n",
                     pct_s(b.ettr()), pct_s(g.ettr_expected));
  Table t({"where the wall time went", "GPU-hours", "share"}, {true});
  auto add = [&](const char* name, double v) {
    t.add({name, num(v), b.wall_gpu_h > 0 ? pct_s(v / b.wall_gpu_h) : "-"});
  };
  add("useful training", b.useful_gpu_h);
  add("placement slowdown", b.slowdown_gpu_h);
  add("checkpoint stalls", b.checkpoint_gpu_h);
  add("lost compute", b.lost_gpu_h);
  add("restarts", b.restore_gpu_h);
  add("waiting for nodes", b.requeue_wait_gpu_h);
  add("wall", b.wall_gpu_h);
  out += t.render(2);
  if (!g.sweep.empty()) {
    Table s({"interval", "ETTR first-order", "ETTR simulated", "interruptions"});
    for (const auto& p : g.sweep) {
      s.add({dur(p.interval_s), pct_s(p.ettr_expected), pct_s(p.ettr_simulated),
             std::to_string(p.interruptions)});
    }
    out += fmt::format("\n{}", s.render(2));
  }
  return out;
}

}  // namespace clustertwin::report
