#include "clustertwin/report/serving.h"

#include <fmt/format.h>

#include "clustertwin/base/units_parse.h"
#include "clustertwin/report/table.h"

namespace clustertwin::report {
namespace {

double r6(double v) { return round_sig(v); }

Json instance_json(const workload::InstanceLayout& l) {
  Json j = {{"tp", l.tp},
            {"pp", l.pp},
            {"ep", l.ep},
            {"dp_attention", l.dp_attention},
            {"max_batch", l.max_batch},
            {"max_tokens", l.max_tokens},
            {"chunked_prefill", l.chunked_prefill},
            {"summary", l.label()}};
  // Present only where used, so layouts without them keep their documents.
  if (l.redundant_experts > 0) j["redundant_experts"] = l.redundant_experts;
  if (l.chunk_unit > 1) j["chunk_unit"] = l.chunk_unit;
  if (l.pp_chunk_overlap) j["pp_chunk_overlap"] = true;
  if (l.two_batch_overlap) j["two_batch_overlap"] = true;
  if (!l.cuda_graph_batches.empty()) j["cuda_graph_batches"] = l.cuda_graph_batches;
  if (l.adp_timeout_iters > 0) {
    j["adp_timeout_iters"] = l.adp_timeout_iters;
    j["adp_batching_wait_iters"] = l.adp_batching_wait_iters;
  }
  return j;
}

Json layout_json(const workload::ServingLayout& l, workload::ServingScenario scenario) {
  Json j = {{"summary", l.label()},
            {"precision", compute::dtype_name(l.weights)},
            {"kv_cache_bytes_per_element", l.kv_bytes},
            {"instance", instance_json(l.instance)},
            {"replicas", l.replicas},
            {"disaggregated", l.disaggregated},
            {"gpus", l.gpus()},
            {"kv_policy", workload::kv_policy_name(l.kv_policy)},
            {"tp_overlap", l.tp_overlap},
            {"adp_balance", l.adp_balance},
            {"runtime", workload::runtime_name(l.runtime)},
            {"stream_interval", l.stream_interval},
            {"mtp_draft_tokens", l.mtp}};
  if (l.mtp > 0) j["mtp_acceptance"] = r6(l.mtp_acceptance);
  if (!l.norm_quant_fusion) j["norm_quant_fusion"] = false;
  if (const auto d = workload::resolve_dispatch(l.dispatch, scenario);
      scenario != workload::ServingScenario::kOffline &&
      d != workload::ServingDispatch::kLeastLoaded) {
    j["dispatch"] = workload::dispatch_name(d);
  }
  if (l.disaggregated) {
    j["prefill_instance"] = instance_json(l.prefill);
    j["prefill_replicas"] = l.prefill_replicas;
  }
  return j;
}

Json stats_json(const execution::LatencyStats& s) {
  return {{"mean", r6(s.mean)},
          {"p50", r6(s.p50)},
          {"p90", r6(s.p90)},
          {"p99", r6(s.p99)},
          {"max", r6(s.max)}};
}

Json memory_json(const workload::ServingMemory& m) {
  return {{"usable_B", r6(m.usable.base())},
          {"weights_B", r6(m.weights.base())},
          {"buffers_B", r6(m.buffers.base())},
          {"kv_cache_B", r6(m.kv_cache.base())},
          {"kv_bytes_per_token", r6(m.kv_bytes_per_token)},
          {"kv_tokens_per_rank", m.kv_tokens_per_rank},
          {"params_per_gpu", r6(m.params)}};
}

Json point_json(const search::ServingPoint& p) {
  return {{"layout", p.label()},
          {"kind", p.layout.disaggregated ? "disaggregated" : "aggregated"},
          {"batch", p.batch},
          {"max_tokens", p.layout.instance.max_tokens},
          {"chunked_prefill", p.layout.instance.chunked_prefill},
          {"mtp", p.layout.mtp},
          {"tokens_per_s_per_gpu", r6(p.tokens_per_s_per_gpu)},
          {"tokens_per_s_per_user", r6(p.tokens_per_s_per_user)},
          {"ttft_s", r6(p.ttft_s)},
          {"tpot_s", r6(p.tpot_s)},
          {"gpus_used", p.gpus_used},
          {"meets_slo", p.meets},
          {"pareto", p.pareto},
          {"verified", p.verified}};
}

std::string ms(double s) { return fmt::format("{:.1f} ms", s * 1e3); }
std::string sec(double s) { return s >= 1 ? fmt::format("{:.2f} s", s) : ms(s); }

}  // namespace

Json serving_json(const ServingReport& r) {
  const auto& x = r.result;
  Json j;
  j["cluster"] = r.cluster;
  j["model"] = r.model;
  j["gpu"] = r.gpu;
  j["gpus"] = r.gpus;
  j["dataset"] = r.dataset;
  j["scenario"] = workload::scenario_name(r.scenario);
  j["precision"] = compute::dtype_name(r.layout.weights);
  if (r.limits) {
    j["ttft_limit_s"] = r6(r.limits->ttft.base());
    j["tpot_limit_s"] = r6(r.limits->tpot.base());
  }
  j["layout"] = layout_json(r.layout, r.scenario);
  j["tokens_per_s"] = r6(x.tokens_per_s);
  j["tokens_per_s_per_gpu"] =
      r6(x.tokens_per_s / static_cast<double>(std::max<int64_t>(1, r.gpus)));
  j["requests_per_s"] = r6(x.requests_per_s);
  j["tokens_per_s_per_user"] = r6(x.tokens_per_s_per_user);
  j["rate_qps"] = r6(x.rate_qps);
  j["ttft_s"] = stats_json(x.ttft_s);
  j["tpot_s"] = stats_json(x.tpot_s);
  j["e2e_s"] = stats_json(x.e2e_s);
  j["ttft_p50_s"] = r6(x.ttft_s.p50);
  j["ttft_p90_s"] = r6(x.ttft_s.p90);
  j["ttft_p99_s"] = r6(x.ttft_s.p99);
  j["tpot_p50_s"] = r6(x.tpot_s.p50);
  j["tpot_p90_s"] = r6(x.tpot_s.p90);
  j["tpot_p99_s"] = r6(x.tpot_s.p99);
  j["meets_limits"] = x.meets_limits;
  if (!x.limit_note.empty()) j["limit_note"] = x.limit_note;
  j["duration_s"] = r6(x.duration_s);
  j["run_length"] = {{"steady", x.steady},
                     {"loadgen_minimum_met", x.loadgen_length},
                     {"arrival_window_s", r6(x.arrival_window_s)},
                     {"steady_window_s", r6(x.steady_window_s)},
                     {"steady_tokens_per_s_per_gpu", r6(x.steady_tokens_per_s_per_gpu)}};
  j["requests"] = x.requests;
  j["simulated_requests"] = x.simulated_requests;
  j["symmetry"] = x.symmetry;
  j["mean_input_tokens"] = r6(x.mean_input_tokens);
  j["mean_output_tokens"] = r6(x.mean_output_tokens);
  j["kv_utilization_mean"] = r6(x.kv_utilization_mean);
  j["kv_utilization_peak"] = r6(x.kv_utilization_peak);
  j["mean_decode_batch_per_rank"] = r6(x.mean_decode_batch);
  j["iterations"] = x.iterations;
  j["preemptions"] = x.preemptions;
  j["events"] = x.events;
  const auto& st = x.mean_step;
  j["step_s"] = {{"total", r6(st.total)},       {"attention", r6(st.attention)},
                 {"dense", r6(st.dense)},       {"moe", r6(st.moe)},
                 {"head", r6(st.head)},         {"mtp", r6(st.mtp)},
                 {"comm_exposed", r6(st.comm)}, {"host", r6(st.host)}};
  j["memory_per_gpu"] = memory_json(x.memory);
  if (r.layout.disaggregated) j["prefill_memory_per_gpu"] = memory_json(x.prefill_memory);
  if (r.rate) {
    Json probes = Json::array();
    for (const auto& p : r.rate->probes) {
      probes.push_back({{"rate_qps", r6(p.rate_qps)},
                        {"ttft_p99_s", r6(p.ttft_p99_s)},
                        {"tpot_p99_s", r6(p.tpot_p99_s)},
                        {"tokens_per_s_per_gpu", r6(p.tokens_per_s_per_gpu)},
                        {"meets_slo", p.meets}});
    }
    j["rate_search"] = {{"found", r.rate->found},
                        {"max_compliant_rate_qps", r6(r.rate->rate_qps)},
                        {"probes", probes}};
  }
  if (r.search) {
    // The points worth drawing: the frontier of each kind, every simulated point and the
    // chosen one (all scored points go to the CSV).
    Json pts = Json::array();
    Json front_agg = Json::array(), front_dis = Json::array();
    std::vector<const search::ServingPoint*> front;
    for (size_t i = 0; i < r.search->points.size(); ++i) {
      const auto& p = r.search->points[i];
      if (p.pareto || p.verified || static_cast<int>(i) == r.search->best) {
        pts.push_back(point_json(p));
      }
      if (p.pareto) front.push_back(&p);
    }
    std::stable_sort(front.begin(), front.end(), [](auto* a, auto* b) {
      return a->tokens_per_s_per_user < b->tokens_per_s_per_user;
    });
    for (const auto* p : front) {
      (p->layout.disaggregated ? front_dis : front_agg).push_back(point_json(*p));
    }
    j["points"] = pts;
    Json fr = {{"x", "tokens_per_s_per_user"},
               {"y", "tokens_per_s_per_gpu"},
               {"aggregated", front_agg},
               {"disaggregated", front_dis}};
    if (r.limits) fr["ttft_limit_s"] = r6(r.limits->ttft.base());
    j["frontier"] = fr;
    if (r.search->best >= 0) {
      Json c = point_json(r.search->points[static_cast<size_t>(r.search->best)]);
      c["tokens_per_s_per_gpu"] = j["tokens_per_s_per_gpu"];
      c["ttft_s"] = r6(x.ttft_s.p99);
      c["tpot_s"] = r6(x.tpot_s.p99);
      j["chosen"] = c;
    }
    j["search"] = {{"layouts", r.search->layouts},
                   {"rejected", r.search->rejected},
                   {"points", static_cast<int64_t>(r.search->points.size())},
                   {"pruned", r.search->pruned},
                   {"simulations", r.search->simulations},
                   {"found", r.search->found}};
  }
  if (!r.generation.empty()) {
    Json g = Json::array();
    double total = 1;
    for (const auto& s : r.generation) {
      total *= s.factor;
      g.push_back({{"change", s.change},
                   {"layout", s.label},
                   {"tokens_per_s_per_gpu", r6(s.tokens_per_s_per_gpu)},
                   {"factor", r6(s.factor)},
                   {"meets_slo", s.meets}});
    }
    j["generation_ratio"] = {{"title", r.generation_title},
                             {"baseline", r.generation_baseline},
                             {"steps", g},
                             {"ratio", r6(total)}};
  }
  std::vector<std::string> notes = r.notes;
  notes.insert(notes.end(), x.notes.begin(), x.notes.end());
  if (r.search) notes.insert(notes.end(), r.search->notes.begin(), r.search->notes.end());
  j["notes"] = notes;
  return j;
}

std::string serving_text(const ServingReport& r) {
  const auto& x = r.result;
  const double gpus = static_cast<double>(std::max<int64_t>(1, r.gpus));
  std::string o;
  o += fmt::format("{} on {} GPUs of {} ({}), {} scenario, {}\n", r.model, r.gpus, r.cluster, r.gpu,
                   workload::scenario_name(r.scenario), r.dataset);
  o += fmt::format("  layout           {} ({}, KV {}, {} GPUs used)\n", r.layout.label(),
                   compute::dtype_name(r.layout.weights), r.layout.kv_bytes <= 1 ? "fp8" : "bf16",
                   r.layout.gpus());
  const auto& il = r.layout.instance;
  o += fmt::format("  batch limits     {} sequences, {} tokens per rank per iteration{}\n",
                   il.max_batch, il.max_tokens, il.chunked_prefill ? ", chunked prefill" : "");
  if (r.limits) {
    o += fmt::format("  limits (p99)     TTFT {}, TPOT {}\n", sec(r.limits->ttft.base()),
                     ms(r.limits->tpot.base()));
  }
  o += "\n";
  if (r.rate) {
    if (r.rate->found) {
      o += fmt::format("  max compliant rate   {} requests/s ({} probes)\n",
                       base::format_sig(r.rate->rate_qps, 4), r.rate->probes.size());
    } else {
      o += "  no rate meets the limits; best effort at the lightest load probed:\n";
    }
  }
  o += fmt::format("  throughput       {} tokens/s, {} per GPU, {} requests/s\n",
                   base::format_sig(x.tokens_per_s, 4), base::format_sig(x.tokens_per_s / gpus, 4),
                   base::format_sig(x.requests_per_s, 4));
  if (x.steady_window_s > 0) {
    o += fmt::format("  steady state     {} tokens/s per GPU over the loaded {:.0f} s{}\n",
                     base::format_sig(x.steady_tokens_per_s_per_gpu, 4), x.steady_window_s,
                     x.steady ? "" : " (no steady state: see the note)");
  }
  o += fmt::format("  per user         {} tokens/s (1 / median TPOT)\n",
                   base::format_sig(x.tokens_per_s_per_user, 3));
  Table t({"latency", "p50", "p90", "p99"}, {true});
  t.add({"TTFT", sec(x.ttft_s.p50), sec(x.ttft_s.p90), sec(x.ttft_s.p99)});
  t.add({"TPOT", ms(x.tpot_s.p50), ms(x.tpot_s.p90), ms(x.tpot_s.p99)});
  t.add({"end to end", sec(x.e2e_s.p50), sec(x.e2e_s.p90), sec(x.e2e_s.p99)});
  o += "\n" + t.render(2);
  if (!x.limit_note.empty()) o += "  misses the limits: " + x.limit_note + "\n";
  o += fmt::format(
      "\n  KV cache         {:.0f}% used on average ({:.0f}% peak), {:.0f} decoding sequences per "
      "rank, {} preemptions\n",
      100 * x.kv_utilization_mean, 100 * x.kv_utilization_peak, x.mean_decode_batch, x.preemptions);
  const auto& st = x.mean_step;
  if (st.total > 0) {
    Table b({"mean iteration", "ms", "%"}, {true});
    auto row = [&](const char* n, double v) {
      if (v > 0)
        b.add({n, fmt::format("{:.2f}", v * 1e3), fmt::format("{:.1f}", 100 * v / st.total)});
    };
    row("attention", st.attention);
    row("GEMMs and norms", st.dense);
    row("routed experts (MoE)", st.moe);
    row("head and sampling", st.head);
    row("MTP draft passes", st.mtp);
    row("communication (exposed)", st.comm);
    row("host", st.host);
    row("total", st.total);
    o += "\n" + b.render(2);
  }
  const auto& m = x.memory;
  o += fmt::format(
      "\n  memory per GPU   weights {:.1f} GB, buffers {:.1f} GB, KV cache {:.1f} GB "
      "({} tokens per rank) of {:.0f} GB\n",
      m.weights.base() / 1e9, m.buffers.base() / 1e9, m.kv_cache.base() / 1e9, m.kv_tokens_per_rank,
      m.usable.base() / 1e9);
  o += fmt::format(
      "  simulated        {} requests ({} of them on {} instance(s), x{} by symmetry), "
      "{} iterations, {:.0f} s of serving\n",
      x.requests, x.simulated_requests, x.simulated_instances, x.symmetry, x.iterations,
      x.duration_s);
  if (r.search) {
    const auto& s = *r.search;
    o += fmt::format(
        "\n  search: {} points from {} layouts ({} rejected: invalid or out of memory; {} "
        "pruned by bounds), {} simulation runs; frontier of each kind (tokens/s per "
        "GPU vs per user{}; estimates are steady-state rates, simulations LoadGen figures with "
        "the tail):\n",
        s.points.size(), s.layouts, s.rejected, s.pruned, s.simulations,
        r.limits ? ", within the TTFT limit" : "");
    Table f({"kind", "layout", "per-rank limits", "tok/s/GPU", "tok/s/user", "TTFT", "TPOT",
             "limits", "from"},
            {true, true, true});
    std::vector<const search::ServingPoint*> front;
    for (const auto& p : s.points) {
      if (p.pareto) front.push_back(&p);
    }
    std::stable_sort(front.begin(), front.end(), [](auto* a, auto* b) {
      if (a->layout.disaggregated != b->layout.disaggregated) return !a->layout.disaggregated;
      return a->tokens_per_s_per_user > b->tokens_per_s_per_user;
    });
    for (const auto* p : front) {
      f.add({p->layout.disaggregated ? "disagg" : "agg", p->label(), p->limits(),
             base::format_sig(p->tokens_per_s_per_gpu, 4),
             base::format_sig(p->tokens_per_s_per_user, 3), sec(p->ttft_s), ms(p->tpot_s),
             p->meets ? "meets" : "misses", p->verified ? "simulation" : "estimate"});
    }
    o += f.render(2);
  }
  if (!r.generation.empty()) {
    o += "\n  " + r.generation_title + "\n";
    Table g({"change", "best layout", "tok/s/GPU", "factor"}, {true, true});
    double total = 1;
    for (const auto& s : r.generation) {
      total *= s.factor;
      g.add({s.change, s.label, base::format_sig(s.tokens_per_s_per_gpu, 4),
             fmt::format("x{:.2f}", s.factor)});
    }
    o += g.render(2);
    o += fmt::format("  predicted per-GPU ratio: x{:.2f}\n", total);
  }
  for (const auto& n : r.notes) o += "  note: " + n + "\n";
  for (const auto& n : x.notes) o += "  note: " + n + "\n";
  if (r.search) {
    for (const auto& n : r.search->notes) o += "  note: " + n + "\n";
  }
  return o;
}

std::string serving_csv(const ServingReport& r) {
  if (!r.search) return {};
  Table t({"layout", "batch", "max_tokens", "chunked_prefill", "mtp", "tokens_per_s_per_gpu",
           "tokens_per_s_per_user", "ttft_s", "tpot_s", "gpus_used", "meets_slo", "pareto",
           "verified"});
  for (const auto& p : r.search->points) {
    t.add({p.label(), std::to_string(p.batch), std::to_string(p.layout.instance.max_tokens),
           p.layout.instance.chunked_prefill ? "true" : "false", std::to_string(p.layout.mtp),
           fmt::format("{}", r6(p.tokens_per_s_per_gpu)),
           fmt::format("{}", r6(p.tokens_per_s_per_user)), fmt::format("{}", r6(p.ttft_s)),
           fmt::format("{}", r6(p.tpot_s)), std::to_string(p.gpus_used), p.meets ? "true" : "false",
           p.pareto ? "true" : "false", p.verified ? "true" : "false"});
  }
  return t.csv();
}

TraceWriter serving_trace(const ServingReport& r) {
  TraceWriter w;
  const auto& l = r.layout;
  const int prefill = l.disaggregated ? l.prefill_replicas / std::max(1, r.result.symmetry) : 0;
  for (const auto& it : r.result.trace) {
    const bool pre = it.instance < prefill;
    // Offline, identical replicas run identical shares: one share is simulated and shown.
    const std::string shares = r.result.symmetry > 1
                                   ? fmt::format(" (share 1 of {} identical)", r.result.symmetry)
                                   : std::string();
    const std::string process =
        (pre ? fmt::format("prefill instance {}", it.instance)
             : fmt::format("{} instance {}", l.disaggregated ? "decode" : "replica",
                           it.instance - prefill)) +
        shares;
    auto track = w.track(process, fmt::format("batches (slot {})", it.group));
    const std::string name =
        it.prefill_tokens > 0 && it.decode > 0
            ? fmt::format("{} decode + {} prompt tokens", it.decode, it.prefill_tokens)
        : it.prefill_tokens > 0 ? fmt::format("{} prompt tokens", it.prefill_tokens)
                                : fmt::format("{} decode", it.decode);
    w.complete(track, name, it.prefill_tokens > 0 ? "prefill" : "decode", base::seconds(it.start_s),
               base::seconds(it.duration_s),
               {{"decode_sequences", it.decode},
                {"prompt_tokens", it.prefill_tokens},
                {"kv_utilization", r6(it.kv_utilization)}});
  }
  w.set_other_data({{"tool", "clustertwin"},
                    {"layout", l.label()},
                    {"model", r.model},
                    {"scenario", workload::scenario_name(r.scenario)}});
  return w;
}

}  // namespace clustertwin::report
