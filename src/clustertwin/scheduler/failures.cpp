#include "clustertwin/scheduler/failures.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

namespace clustertwin::scheduler {

const char* failure_scope_name(FailureScope s) {
  switch (s) {
    case FailureScope::kJob:
      return "job";
    case FailureScope::kNode:
      return "node";
    case FailureScope::kDomainStop:
      return "domain";
    case FailureScope::kDomainDegrade:
      return "domain-degrade";
    case FailureScope::kLeaf:
      return "leaf";
  }
  return "?";
}

FailureModel FailureModel::llama3(bool multi_node_domains, double domain_events_per_1000_days) {
  // 16,384 GPUs x 54 days x 24 h = 21,233,664 GPU-hours (orchestration.md §3.1).
  constexpr double kGpuHours = 16384.0 * 54.0 * 24.0;
  const std::string l3 = "Llama 3 (arXiv 2407.21783) Table 5: ";
  const std::string sf = "; repair: StepFun fault_intervals.csv ";
  FailureModel m;
  m.classes = {
      {"gpu", FailureScope::kNode, 268 / kGpuHours, 16.8, 155.4,
       l3 + "GPU 148 + HBM3 72 + SRAM 19 + GSP 17 + SDC 6 + thermal 6" + sf + "class GPU"},
      {"software", FailureScope::kJob, 63 / kGpuHours, 0, 0,
       l3 + "software bug 54 + NCCL watchdog 7 + dependency 2"},
      {"network", FailureScope::kNode, 35 / kGpuHours, 47.4, 119.5,
       l3 + "network switch/cable 35" + sf + "class Parameter Plane Cable"},
      {"host", FailureScope::kNode, 46 / kGpuHours, 32.6, 188.7,
       l3 + "host maintenance 32 + SSD 3 + PSU 3 + chassis 2 + IO board 2 + CPU 2 + memory 2" + sf +
           "level Hardware Failure"},
      {"nic", FailureScope::kNode, 7 / kGpuHours, 11.8, 256.4, l3 + "NIC 7" + sf + "class NIC"},
  };
  if (multi_node_domains && domain_events_per_1000_days > 0) {
    const double per_hour = domain_events_per_1000_days / 1000.0 / 24.0;
    m.classes.push_back(
        {"domain-stop", FailureScope::kDomainStop, per_hour, 20.4, 132.8,
         "assumption (no public NVL72 rate: orchestration.md §3.3 GAP): power "
         "shelf, coolant or NVLink spine takes the rack down; repair: StepFun all faults"});
    m.classes.push_back({"switch-tray", FailureScope::kDomainDegrade, per_hour, 20.4, 132.8,
                         "assumption (GAP): an NVLink switch tray out degrades the rack; repair: "
                         "StepFun all faults"});
  }
  return m;
}

double FailureModel::job_rate_per_hour(int64_t gpus, int domains) const {
  double r = 0;
  for (const auto& c : classes) {
    switch (c.scope) {
      case FailureScope::kJob:
      case FailureScope::kNode:
        r += c.rate_per_hour * static_cast<double>(gpus);
        break;
      case FailureScope::kDomainStop:
        r += c.rate_per_hour * domains;
        break;
      case FailureScope::kDomainDegrade:
      case FailureScope::kLeaf:
        break;  // slows the job or is rare; not an interruption here
    }
  }
  return r;
}

std::vector<double> FailureModel::stepfun_bursts() { return {499, 20, 5, 2, 0, 1, 0, 2}; }

double FailureModel::mean_burst() const {
  double events = 0, nodes = 0;
  for (size_t k = 0; k < burst_weights.size(); ++k) {
    events += burst_weights[k];
    nodes += burst_weights[k] * static_cast<double>(k + 1);
  }
  return events > 0 ? nodes / events : 1.0;
}

void FailureModel::scale(double k) {
  for (auto& c : classes) c.rate_per_hour *= k;
}

base::Result<std::vector<FaultInterval>> read_fault_intervals(std::string_view text,
                                                              const std::string& file,
                                                              int* nodes_seen) {
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  std::map<std::string, int> ids;
  std::vector<FaultInterval> out;
  base::Errors errors;
  auto field = [](const std::string& l, size_t* pos) {
    std::string f;
    bool quoted = false;
    while (*pos < l.size()) {
      const char ch = l[(*pos)++];
      if (ch == '"') {
        quoted = !quoted;
      } else if (ch == ',' && !quoted) {
        return f;
      } else if (ch != '\r') {
        f += ch;
      }
    }
    return f;
  };
  auto num = [](const std::string& s, double* v) {
    auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
    return r.ec == std::errc{} && r.ptr == s.data() + s.size() && std::isfinite(*v);
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1) {
      if (line.rfind("node_id,start_day,end_day", 0) != 0) {
        return base::fail("expected the header node_id,start_day,end_day,...", file, 1);
      }
      continue;
    }
    if (line.empty()) continue;
    size_t pos = 0;
    const std::string node = field(line, &pos);
    const std::string a = field(line, &pos), b = field(line, &pos);
    field(line, &pos);  // repair_hours (derived)
    field(line, &pos);  // level
    const std::string cls = field(line, &pos);
    double s = 0, e = 0;
    if (node.empty() || !num(a, &s) || !num(b, &e) || s < 0 || e < s) {
      errors.add({"expected node_id, start_day <= end_day", file, line_no});
      continue;
    }
    // Days past the clock's range are an input error, not an abort (start_day 1e300 once
    // stopped the run in engine::to_ticks).
    auto start = engine::checked_ticks(base::seconds(s * 86400.0), "start_day");
    auto end = engine::checked_ticks(base::seconds(e * 86400.0), "end_day");
    if (!start || !end) {
      errors.add({(!start ? start : end).error().message, file, line_no});
      continue;
    }
    auto [it, fresh] = ids.emplace(node, static_cast<int>(ids.size()));
    (void)fresh;
    out.push_back({it->second, *start, *end, cls});
  }
  if (!errors.empty()) return base::fail(errors.combined());
  // An empty replay would silently mean "no failures at all".
  if (out.empty()) {
    return base::fail(
        "no fault rows (expected the header node_id,start_day,end_day,... and one "
        "row per down interval)",
        file, std::max(1, line_no));
  }
  if (nodes_seen) *nodes_seen = static_cast<int>(ids.size());
  return out;
}

}  // namespace clustertwin::scheduler
