#include "clustertwin/report/training.h"

#include <fmt/format.h>

#include "clustertwin/base/units_parse.h"
#include "clustertwin/report/table.h"

namespace clustertwin::report {
namespace {

double r6(double v) { return round_sig(v); }

std::string layout_string(const workload::TrainingLayout& l) {
  std::string s = fmt::format("TP{} PP{} DP{}", l.tp, l.pp, l.dp);
  if (l.cp > 1) s += fmt::format(" CP{}", l.cp);
  if (l.ep > 1) s += fmt::format(" EP{}", l.ep);
  if (l.vpp > 1) s += fmt::format(" VPP{}", l.vpp);
  return s;
}

std::string duration(double seconds) {
  if (seconds < 2 * 86400) return fmt::format("{:.1f} h", seconds / 3600);
  return fmt::format("{:.1f} days", seconds / 86400);
}

}  // namespace

Json training_json(const execution::TrainingResult& r, const workload::TrainingLayout& l,
                   const TrainingContext& c) {
  const auto& b = r.breakdown;
  Json j;
  j["cluster"] = c.cluster;
  j["model"] = c.model;
  j["gpu"] = c.gpu;
  j["gpus"] = c.gpus;
  j["layout"] = {{"tp", l.tp},
                 {"pp", l.pp},
                 {"dp", l.dp},
                 {"cp", l.cp},
                 {"ep", l.ep},
                 {"vpp", l.vpp},
                 {"micro_batch", l.micro_batch},
                 {"global_batch", l.global_batch},
                 {"seq_len", l.seq_len},
                 {"micro_batches", l.micro_batches()},
                 {"precision", compute::dtype_name(l.dtype)},
                 {"recompute", models::recompute_name(l.recompute)},
                 {"zero", l.zero},
                 {"sequence_parallel", l.sequence_parallel},
                 {"tp_comm_overlap", l.tp_comm_overlap},
                 {"dp_overlap", l.dp_overlap},
                 {"ep_overlap", l.ep_overlap},
                 {"summary", layout_string(l)}};
  if (l.ep > 1) j["layout"]["moe_dispatch"] = workload::moe_dispatch_name(l.moe_dispatch);
  j["step_time_s"] = r6(r.step_time_s);
  j["tokens_per_step"] = r6(r.tokens_per_step);
  j["tokens_per_s"] = r6(r.tokens_per_s);
  j["tokens_per_s_per_gpu"] = r6(r.tokens_per_s / static_cast<double>(c.gpus));
  j["model_tflops_per_gpu"] = r6(r.model_tflops_per_gpu);
  j["hardware_tflops_per_gpu"] = r6(r.hardware_tflops_per_gpu);
  j["mfu"] = r6(r.mfu);
  j["model_flops_per_step"] = r6(r.model_flops_per_step);
  if (c.token_budget > 0) {
    j["token_budget"] = r6(c.token_budget);
    j["time_to_train_s"] = r6(c.token_budget / r.tokens_per_s);
  }
  j["breakdown_s"] = {{"forward_compute", r6(b.forward_compute)},
                      {"backward_compute", r6(b.backward_compute)},
                      {"recompute", r6(b.recompute)},
                      {"tp_comm_exposed", r6(b.tp_comm)},
                      {"cp_comm_exposed", r6(b.cp_comm)},
                      {"ep_comm_exposed", r6(b.ep_comm)},
                      {"pipeline_bubble", r6(b.bubble)},
                      {"dp_comm_exposed", r6(b.dp_comm)},
                      {"optimizer", r6(b.optimizer)},
                      {"pp_send_in_bubble", r6(b.pp_comm)}};
  if (b.offload > 0) j["breakdown_s"]["offload_exposed"] = r6(b.offload);
  if (b.host > 0) j["breakdown_s"]["host"] = r6(b.host);
  if (b.host_issue > 0) j["breakdown_s"]["host_issue_exposed"] = r6(b.host_issue);
  Json mem = Json::object();
  for (const auto& [name, bytes] : r.memory.terms()) mem[name + "_B"] = r6(bytes.base());
  mem["total_B"] = r6(r.memory.total().base());
  mem["stage"] = r.memory.stage;
  mem["params_per_gpu"] = r6(r.memory.params);
  j["memory_per_gpu"] = mem;
  Json stages = Json::array();
  for (const auto& s : r.stages) {
    stages.push_back({{"stage", s.stage},
                      {"layers", s.layers},
                      {"busy_s", r6(s.busy_s)},
                      {"pipeline_end_s", r6(s.pipeline_end_s)},
                      {"dp_exposed_s", r6(s.dp_exposed_s)},
                      {"optimizer_s", r6(s.optimizer_s)},
                      {"end_s", r6(s.end_s)}});
  }
  j["stages"] = stages;
  // The first few micro-batches of the timeline (for the report's per-stage chart).
  Json tl = Json::array();
  for (const auto& t : r.tasks) {
    if (t.micro >= 2 * l.pp + 2) continue;
    tl.push_back({{"stage", t.stage},
                  {"chunk", t.chunk},
                  {"micro", t.micro},
                  {"kind", t.forward ? "F" : "B"},
                  {"start_s", r6(static_cast<double>(t.start) * 1e-9)},
                  {"end_s", r6(static_cast<double>(t.end) * 1e-9)}});
  }
  j["timeline"] = tl;
  j["notes"] = r.notes;
  return j;
}

std::string training_text(const execution::TrainingResult& r, const workload::TrainingLayout& l,
                          const TrainingContext& c) {
  std::string o;
  o += fmt::format("{} on {} GPUs of {} ({}), {}, {} x {} tokens per step\n", c.model, c.gpus,
                   c.cluster, c.gpu, layout_string(l), l.global_batch, l.seq_len);
  o += fmt::format("  micro batch {} ({} micro-batches per step), {}, recompute {}, ZeRO {}\n\n",
                   l.micro_batch, l.micro_batches(), compute::dtype_name(l.dtype),
                   models::recompute_name(l.recompute), l.zero);
  o += fmt::format("  step time        {:.3f} s\n", r.step_time_s);
  o += fmt::format("  throughput       {} tokens/s ({:.0f} per GPU)\n",
                   base::format_sig(r.tokens_per_s, 4),
                   r.tokens_per_s / static_cast<double>(c.gpus));
  o += fmt::format("  model TFLOP/s    {:.0f} per GPU (hardware, with recompute: {:.0f})\n",
                   r.model_tflops_per_gpu, r.hardware_tflops_per_gpu);
  o += fmt::format("  MFU              {:.1f}%\n", 100 * r.mfu);
  if (c.token_budget > 0) {
    o +=
        fmt::format("  time to train    {} for {} tokens\n",
                    duration(c.token_budget / r.tokens_per_s), base::format_sig(c.token_budget, 3));
  }
  const auto& b = r.breakdown;
  Table t({"where the time goes (busiest stage)", "s", "%"}, {true});
  auto row = [&](const char* name, double v) {
    if (v <= 0) return;
    t.add({name, fmt::format("{:.3f}", v), fmt::format("{:.1f}", 100 * v / r.step_time_s)});
  };
  row("forward compute", b.forward_compute);
  row("backward compute", b.backward_compute);
  row("recomputation", b.recompute);
  row("tensor-parallel comm (exposed)", b.tp_comm);
  row("context-parallel comm (exposed)", b.cp_comm);
  row("expert-parallel all-to-all (exposed)", b.ep_comm);
  row("activation offload (exposed)", b.offload);
  row("eager host issue (exposed)", b.host_issue);
  row("pipeline bubble (incl. sends)", b.bubble);
  row("data-parallel comm (exposed)", b.dp_comm);
  row("optimizer", b.optimizer);
  row("host time per iteration (calibrated)", b.host);
  o += "\n" + t.render(2);
  Table m({"memory per GPU (stage " + std::to_string(r.memory.stage) + ")", "GB"}, {true});
  for (const auto& [name, bytes] : r.memory.terms()) {
    m.add({name, fmt::format("{:.1f}", bytes.base() / 1e9)});
  }
  m.add({"total", fmt::format("{:.1f}", r.memory.total().base() / 1e9)});
  if (r.memory.offloaded.base() > 0) {
    m.add({"offloaded to host", fmt::format("{:.1f}", r.memory.offloaded.base() / 1e9)});
  }
  o += "\n" + m.render(2);
  for (const auto& n : r.notes) o += "  note: " + n + "\n";
  return o;
}

TraceWriter training_trace(const execution::TrainingResult& r, const workload::TrainingLayout& l) {
  TraceWriter w;
  std::vector<TraceTrack> tracks;
  for (int s = 0; s < l.pp; ++s) {
    tracks.push_back(w.track(fmt::format("pipeline stage {}", s), "compute"));
  }
  for (const auto& t : r.tasks) {
    const auto name = fmt::format("{}{} mb{}", t.forward ? "F" : "B", t.chunk, t.micro);
    w.complete(tracks[static_cast<size_t>(t.stage)], name, t.forward ? "forward" : "backward",
               base::seconds(static_cast<double>(t.start) * 1e-9),
               base::seconds(static_cast<double>(t.end - t.start) * 1e-9),
               {{"chunk", t.chunk}, {"micro_batch", t.micro}});
  }
  for (const auto& s : r.stages) {
    auto tail = w.track(fmt::format("pipeline stage {}", s.stage), "data-parallel + optimizer");
    if (s.dp_exposed_s > 0) {
      w.complete(tail, "dp reduce (exposed)", "comm", base::seconds(s.pipeline_end_s),
                 base::seconds(s.dp_exposed_s));
    }
    w.complete(tail, "optimizer", "compute", base::seconds(s.pipeline_end_s + s.dp_exposed_s),
               base::seconds(s.optimizer_s));
  }
  w.set_other_data({{"tool", "clustertwin"}, {"layout", layout_string(l)}});
  return w;
}

}  // namespace clustertwin::report
