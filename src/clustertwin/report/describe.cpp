#include "clustertwin/report/describe.h"

#include <fmt/format.h>

#include "clustertwin/base/units_parse.h"
#include "clustertwin/report/table.h"

namespace clustertwin::report {
namespace {

using base::format;
double r(double v) { return round_sig(v); }

std::string count(int64_t v) {
  std::string s = std::to_string(v), out;
  const int n = static_cast<int>(s.size());
  for (int i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += s[static_cast<size_t>(i)];
  }
  return out;
}

}  // namespace

Json describe_json(const topology::ClusterSummary& s) {
  Json j;
  j["cluster"] = {{"name", s.name},
                  {"display_name", s.display_name},
                  {"description", s.description},
                  {"origin", s.origin},
                  {"system", s.system},
                  {"system_kind", s.system_kind},
                  {"gpu", s.gpu},
                  {"cpu", s.cpu},
                  {"nic", s.nic},
                  {"nvlink_switch", s.nvswitch},
                  {"scale_out_switch", s.scale_out_switch},
                  {"transceiver", s.transceiver}};
  j["counts"] = {{"systems", s.systems},
                 {"racks", s.system_kind == "rack" ? s.systems : 0},
                 {"nodes", s.nodes},
                 {"gpus", s.gpus},
                 {"cpus", s.cpus},
                 {"cpu_cores", s.cpu_cores},
                 {"nics", s.nics},
                 {"nvlink_domains", s.domains},
                 {"nvlink_domain_gpus", s.domain_size},
                 {"nvlink_switch_chips", s.nvswitch_chips},
                 {"nvlink_switch_trays", s.switch_trays},
                 {"scale_out_switches", s.scale_out_switches},
                 {"scale_out_cables", s.scale_out_cables},
                 {"transceivers", s.transceivers},
                 {"graph_links", s.links}};
  Json compute = Json::object();
  for (const auto& c : s.compute) {
    Json e = {{"dense_per_gpu_FLOPps", r(c.dense_per_gpu.base())},
              {"dense_per_domain_FLOPps", r(c.dense_per_domain.base())},
              {"dense_per_cluster_FLOPps", r(c.dense_per_cluster.base())}};
    if (c.sparse_per_gpu) {
      e["sparse_per_gpu_FLOPps"] = r(c.sparse_per_gpu->base());
      e["sparse_per_domain_FLOPps"] = r(c.sparse_per_domain->base());
      e["sparse_per_cluster_FLOPps"] = r(c.sparse_per_cluster->base());
    }
    compute[hardware::precision_name(c.precision)] = e;
  }
  j["compute"] = compute;
  j["memory"] = {{"hbm_per_gpu_B", r(s.hbm_per_gpu.base())},
                 {"hbm_usable_per_gpu_B", r(s.hbm_usable_per_gpu.base())},
                 {"hbm_per_domain_B", r(s.hbm_per_domain.base())},
                 {"hbm_per_cluster_B", r(s.hbm_per_cluster.base())},
                 {"cpu_memory_per_cpu_B", r(s.cpu_memory_per_cpu.base())},
                 {"cpu_memory_per_domain_B", r(s.cpu_memory_per_domain.base())},
                 {"cpu_memory_per_cluster_B", r(s.cpu_memory_per_cluster.base())},
                 {"fast_memory_per_domain_B", r(s.fast_memory_per_domain.base())},
                 {"fast_memory_per_cluster_B", r(s.fast_memory_per_cluster.base())},
                 {"hbm_bandwidth_per_gpu_Bps", r(s.hbm_bandwidth_per_gpu.base())},
                 {"hbm_bandwidth_per_domain_Bps", r(s.hbm_bandwidth_per_domain.base())},
                 {"hbm_bandwidth_per_cluster_Bps", r(s.hbm_bandwidth_per_cluster.base())}};
  j["nvlink"] = {{"per_gpu_Bps", r(s.nvlink_per_gpu.base())},
                 {"per_gpu_bidir_Bps", r(s.nvlink_per_gpu_bidir.base())},
                 {"per_domain_bidir_Bps", r(s.nvlink_per_domain_bidir.base())},
                 {"in_network_reduction", s.in_network_reduction_nvlink}};
  Json tiers = Json::array();
  for (const auto& t : s.tiers) {
    tiers.push_back({{"tier", t.name},
                     {"switches", t.switches},
                     {"ports_per_switch", t.ports_per_switch},
                     {"ports_used", t.ports_used},
                     {"cables_up", t.cables_up},
                     {"uplink_capacity_Bps", r(t.uplink_capacity.base())},
                     {"oversubscription", r(t.oversubscription)}});
  }
  j["scale_out"] = {{"per_gpu_Bps", r(s.scale_out_per_gpu.base())},
                    {"per_gpu_bps", r(s.scale_out_per_gpu.base() * 8)},
                    {"per_domain_Bps", r(s.scale_out_per_domain.base())},
                    {"bisection_Bps", r(s.bisection.base())},
                    {"oversubscription", r(s.scale_out_oversubscription)},
                    {"tiers", s.fabric_tiers},
                    {"planes", s.planes},
                    {"rail_optimized", s.rail_optimized},
                    {"switch", s.scale_out_switch},
                    {"in_network_reduction", s.in_network_reduction_scale_out},
                    {"tier_detail", tiers}};
  j["power"] = {{"gpu_tgp_per_domain_W", r(s.gpu_tgp_per_domain.base())},
                {"gpu_tgp_per_cluster_W", r(s.gpu_tgp_per_cluster.base())},
                {"system_nameplate_W", r(s.system_power.base())},
                {"fabric_W", r(s.fabric_power.base())},
                {"cluster_it_W", r(s.cluster_power.base())},
                {"rack_power_limit_W", r(s.rack_power_limit.base())}};
  return j;
}

std::string describe_text(const topology::ClusterSummary& s) {
  std::string o;
  const std::string unit = s.system_kind == "rack" ? "rack" : "node";
  const std::string domain = s.system_kind == "rack" ? "rack" : "domain";
  o += fmt::format("{}\n", s.display_name);
  if (!s.description.empty()) o += fmt::format("  {}\n", s.description);
  o += "\n";
  o += fmt::format("  {} x {}: {} GPUs ({})\n", count(s.systems), s.system_display, count(s.gpus),
                   s.gpu_display);
  o += fmt::format("  {} CPUs ({}, {} cores); {} NICs ({})\n", count(s.cpus), s.cpu_display,
                   count(s.cpu_cores), count(s.nics), s.nic_display);
  o += fmt::format("  {} NVLink domains of {} GPUs ({} NVLink switch chips{})\n\n",
                   count(s.domains), s.domain_size, count(s.nvswitch_chips),
                   s.switch_trays > 0 ? fmt::format(" on {} switch trays", count(s.switch_trays))
                                      : std::string());

  Table compute({"compute", "per GPU", "per " + domain, "cluster"}, {true});
  for (const auto& c : s.compute) {
    compute.add({std::string(hardware::precision_name(c.precision)) + " dense",
                 format(c.dense_per_gpu), format(c.dense_per_domain), format(c.dense_per_cluster)});
    if (c.sparse_per_gpu) {
      compute.add({std::string(hardware::precision_name(c.precision)) + " sparse",
                   format(*c.sparse_per_gpu), format(*c.sparse_per_domain),
                   format(*c.sparse_per_cluster)});
    }
  }
  o += compute.render(2) + "\n";

  Table mem({"memory", "per GPU", "per " + domain, "cluster"}, {true});
  mem.add({"HBM (marketing)", format(s.hbm_per_gpu), format(s.hbm_per_domain),
           format(s.hbm_per_cluster)});
  mem.add({"HBM (usable)", format(s.hbm_usable_per_gpu),
           format(s.hbm_usable_per_gpu * s.domain_size), format(s.hbm_usable_per_gpu * s.gpus)});
  mem.add({"CPU memory", "", format(s.cpu_memory_per_domain), format(s.cpu_memory_per_cluster)});
  mem.add({"fast memory (usable HBM + CPU)", "", format(s.fast_memory_per_domain),
           format(s.fast_memory_per_cluster)});
  mem.add({"HBM bandwidth", format(s.hbm_bandwidth_per_gpu), format(s.hbm_bandwidth_per_domain),
           format(s.hbm_bandwidth_per_cluster)});
  o += mem.render(2) + "\n";

  Table bw({"bandwidth", "per GPU", "per " + domain, "note"}, {true, false, false, true});
  bw.add({"NVLink (each direction)", format(s.nvlink_per_gpu),
          format(s.nvlink_per_gpu * s.domain_size),
          s.in_network_reduction_nvlink.empty()
              ? ""
              : "in-switch reduction: " + s.in_network_reduction_nvlink});
  bw.add({"NVLink (bidirectional)", format(s.nvlink_per_gpu_bidir),
          format(s.nvlink_per_domain_bidir), ""});
  bw.add({"scale-out (each direction)", base::format_bits_per_s(s.scale_out_per_gpu),
          format(s.scale_out_per_domain), format(s.scale_out_per_gpu) + " per GPU"});
  o += bw.render(2) + "\n";

  o += fmt::format("  scale-out fabric: {}-tier fat tree of {} ({}){}{}\n", s.fabric_tiers,
                   s.scale_out_switch_display,
                   s.in_network_reduction_scale_out.empty() ? "no in-network reduction"
                                                            : s.in_network_reduction_scale_out,
                   s.planes > 1 ? fmt::format(", {} planes", s.planes) : "",
                   s.rail_optimized ? ", rail-optimised" : "");
  Table ft({"tier", "switches", "ports used", "cables up", "uplink capacity", "down:up"}, {true});
  for (const auto& t : s.tiers) {
    ft.add({t.name, count(t.switches), count(t.ports_used), count(t.cables_up),
            t.cables_up > 0 ? format(t.uplink_capacity) : "-",
            t.cables_up > 0 ? fmt::format("{}:1", base::format_sig(t.oversubscription, 3)) : "-"});
  }
  o += ft.render(4);
  o += fmt::format(
      "    {} switches, {} cables, {} transceivers; bisection {} each way ({})\n\n",
      count(s.scale_out_switches), count(s.scale_out_cables), count(s.transceivers),
      format(s.bisection),
      s.scale_out_oversubscription <= 1.0001
          ? std::string("non-blocking")
          : fmt::format("{}:1 oversubscribed", base::format_sig(s.scale_out_oversubscription, 3)));

  o += fmt::format(
      "  power (nameplate): GPU TGP {} per {}, {} in all; {} ~{} each{};\n"
      "                     scale-out fabric {}; IT load ~{}\n",
      format(s.gpu_tgp_per_domain), domain, format(s.gpu_tgp_per_cluster), unit,
      format(s.system_power),
      s.rack_power_limit.base() > 0 ? fmt::format(" (shelf limit {})", format(s.rack_power_limit))
                                    : "",
      format(s.fabric_power), format(s.cluster_power));
  return o;
}

}  // namespace clustertwin::report
