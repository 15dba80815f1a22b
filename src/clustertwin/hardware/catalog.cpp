#include "clustertwin/hardware/catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "clustertwin/base/file.h"
#include "clustertwin/base/number.h"
#include "clustertwin/base/text.h"
#include "clustertwin/config/embedded.h"

namespace clustertwin::hardware {
using base::Error;
using base::fail;
using config::Reader;
using Need = config::Reader::Need;

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp4:
      return "fp4";
    case Precision::kFp8:
      return "fp8";
    case Precision::kBf16:
      return "bf16";
    case Precision::kTf32:
      return "tf32";
    case Precision::kFp64:
      return "fp64";
    case Precision::kInt8:
      return "int8";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view s) {
  for (auto p : kAllPrecisions) {
    if (s == precision_name(p)) return p;
  }
  if (s == "fp16") return Precision::kBf16;
  if (s == "nvfp4") return Precision::kFp4;
  return std::nullopt;
}

const char* switch_kind_name(SwitchKind k) {
  switch (k) {
    case SwitchKind::kNvlink:
      return "nvlink";
    case SwitchKind::kInfiniband:
      return "infiniband";
    case SwitchKind::kEthernet:
      return "ethernet";
  }
  return "?";
}

namespace {

std::optional<std::string> read_name(Reader& r) {
  auto name = r.string("name");
  if (name && (name->empty() || name->find_first_of(" *\t/") != std::string::npos)) {
    r.error("expected a name without spaces, '*' or '/', got '" + *name + "'", "name");
    return std::nullopt;
  }
  return name;
}

// Floors of a GPU's rates, far below any GPU (the slowest catalog figure, A100 FP64, is 19.5
// TFLOP/s; HBM and NVLink run at hundreds of GB/s): a kernel time is work / rate, and a rate of
// 1e-300 TFLOP/s once drove a step time past the engine clock's 292 years, an abort instead of
// an error.
constexpr double kMinGpuFlops = 1e12;     // 1 TFLOP/s
constexpr double kMinGpuBandwidth = 1e9;  // 1 GB/s
constexpr std::string_view kFloorWhy =
    "slower than any GPU, whose kernel times would overflow the clock";

GpuSpec read_gpu(Reader& r) {
  GpuSpec g;
  g.name = read_name(r).value_or("");
  g.display_name = r.string("display_name").value_or("");
  g.architecture = r.string("architecture").value_or("");
  if (auto pf = r.child("peak_flops")) {
    for (const auto& key : pf->keys()) {
      auto p = parse_precision(key);
      if (!p || key == "fp16" || key == "nvfp4") {
        pf->error("unknown precision '" + key + "' (expected fp4, fp8, bf16, tf32, fp64, int8)",
                  key);
        pf->allow(key);
        continue;
      }
      auto e = pf->figure_entry(key);
      if (!e) continue;
      auto dense = e->quantity<FlopsPerSecond>("value");
      auto sparse = e->quantity<FlopsPerSecond>("sparse", Need::kOptional);
      if (dense && dense->base() < kMinGpuFlops) {
        e->error(fmt::format("expected at least 1 TFLOP/s ({}), got {:g} TFLOP/s", kFloorWhy,
                             dense->base() / 1e12),
                 "value");
      }
      e->finish();
      if (dense) g.peak[static_cast<size_t>(*p)] = PeakFlops{*dense, sparse};
    }
    pf->finish();
  }
  g.hbm_capacity = r.figure<Bytes>("hbm_capacity").value_or(Bytes{});
  g.hbm_usable = r.figure<Bytes>("hbm_usable").value_or(Bytes{});
  g.hbm_bandwidth = r.figure<BytesPerSecond>("hbm_bandwidth").value_or(BytesPerSecond{});
  g.nvlink_generation =
      static_cast<int>(r.integer_figure("nvlink_generation", Need::kRequired, 1, 10).value_or(0));
  g.nvlink_links =
      static_cast<int>(r.integer_figure("nvlink_links", Need::kRequired, 1, 64).value_or(0));
  g.nvlink_bandwidth = r.figure<BytesPerSecond>("nvlink_bandwidth").value_or(BytesPerSecond{});
  g.tgp = r.figure<Watts>("tgp").value_or(Watts{});
  g.idle_power = r.figure<Watts>("idle_power").value_or(Watts{});
  g.sms = static_cast<int>(r.integer_figure("sms", Need::kOptional, 1, 1024).value_or(0));
  for (auto [key, bw] : {std::pair{"hbm_bandwidth", g.hbm_bandwidth},
                         std::pair{"nvlink_bandwidth", g.nvlink_bandwidth}}) {
    if (bw.base() > 0 && bw.base() < kMinGpuBandwidth) {
      r.error(
          fmt::format("expected at least 1 GB/s ({}), got {:g} GB/s", kFloorWhy, bw.base() / 1e9),
          key);
    }
  }
  if (g.idle_power >= g.tgp && g.tgp.base() > 0) {
    r.error("idle_power (" + base::format(g.idle_power) + ") is not below tgp (" +
                base::format(g.tgp) + ")",
            "idle_power");
  }
  if (g.hbm_usable > g.hbm_capacity && g.hbm_capacity.base() > 0) {
    r.error("hbm_usable (" + base::format(g.hbm_usable) + ") exceeds hbm_capacity (" +
                base::format(g.hbm_capacity) + ")",
            "hbm_usable");
  }
  return g;
}

CpuSpec read_cpu(Reader& r) {
  CpuSpec c;
  c.name = read_name(r).value_or("");
  c.display_name = r.string("display_name").value_or("");
  c.cores = static_cast<int>(r.integer_figure("cores", Need::kRequired, 1, 100000).value_or(0));
  c.memory_capacity = r.figure<Bytes>("memory_capacity").value_or(Bytes{});
  c.memory_bandwidth = r.figure<BytesPerSecond>("memory_bandwidth").value_or(BytesPerSecond{});
  c.c2c_bandwidth = r.figure<BytesPerSecond>("c2c_bandwidth").value_or(BytesPerSecond{});
  c.tdp = r.figure<Watts>("tdp").value_or(Watts{});
  return c;
}

NicSpec read_nic(Reader& r) {
  NicSpec n;
  n.name = read_name(r).value_or("");
  n.display_name = r.string("display_name").value_or("");
  n.bandwidth = r.figure<BytesPerSecond>("bandwidth").value_or(BytesPerSecond{});
  n.latency = r.figure<Seconds>("latency").value_or(Seconds{});
  n.pcie_generation =
      static_cast<int>(r.integer_figure("pcie_generation", Need::kRequired, 1, 7).value_or(0));
  n.pcie_lanes =
      static_cast<int>(r.integer_figure("pcie_lanes", Need::kRequired, 1, 64).value_or(0));
  n.power = r.figure<Watts>("power").value_or(Watts{});
  return n;
}

SwitchSpec read_switch(Reader& r) {
  SwitchSpec s;
  s.name = read_name(r).value_or("");
  s.display_name = r.string("display_name").value_or("");
  auto kind = r.choice("kind", {"nvlink", "infiniband", "ethernet"});
  if (kind) {
    s.kind = *kind == "nvlink"       ? SwitchKind::kNvlink
             : *kind == "infiniband" ? SwitchKind::kInfiniband
                                     : SwitchKind::kEthernet;
  }
  s.ports = static_cast<int>(r.integer_figure("ports", Need::kRequired, 2, 100000).value_or(0));
  s.port_bandwidth = r.figure<BytesPerSecond>("port_bandwidth").value_or(BytesPerSecond{});
  s.latency = r.figure<Seconds>("latency").value_or(Seconds{});
  s.in_network_reduction = r.string("in_network_reduction", Need::kOptional).value_or("");
  s.power = r.figure<Watts>("power").value_or(Watts{});
  return s;
}

TransceiverSpec read_transceiver(Reader& r) {
  TransceiverSpec t;
  t.name = read_name(r).value_or("");
  t.display_name = r.string("display_name").value_or("");
  t.bandwidth = r.figure<BytesPerSecond>("bandwidth").value_or(BytesPerSecond{});
  t.power = r.figure<Watts>("power").value_or(Watts{});
  t.latency = r.figure<Seconds>("latency").value_or(Seconds{});
  return t;
}

SystemSpec read_system(Reader& r) {
  SystemSpec s;
  s.name = read_name(r).value_or("");
  s.display_name = r.string("display_name").value_or("");
  s.kind = r.choice("kind", {"rack", "node"}).value_or("node");
  s.gpu = r.string("gpu").value_or("");
  s.nodes = static_cast<int>(r.integer_figure("nodes", Need::kRequired, 1, 100000).value_or(1));
  s.gpus_per_node =
      static_cast<int>(r.integer_figure("gpus_per_node", Need::kRequired, 1, 1024).value_or(1));
  s.cpu = r.string("cpu").value_or("");
  s.cpus_per_node =
      static_cast<int>(r.integer_figure("cpus_per_node", Need::kRequired, 1, 64).value_or(0));
  s.nic = r.string("nic").value_or("");
  s.nics_per_node =
      static_cast<int>(r.integer_figure("nics_per_node", Need::kRequired, 1, 1024).value_or(0));
  s.nvlink_domain_gpus = static_cast<int>(
      r.integer_figure("nvlink_domain_gpus", Need::kRequired, 1, 100000).value_or(1));
  s.nvswitch = r.string("nvswitch").value_or("");
  s.nvswitch_chips =
      static_cast<int>(r.integer_figure("nvswitch_chips", Need::kRequired, 1, 100000).value_or(0));
  s.switch_trays =
      static_cast<int>(r.integer_figure("switch_trays", Need::kOptional, 0, 1000).value_or(0));
  s.switch_tray_power = r.figure<Watts>("switch_tray_power", Need::kOptional).value_or(Watts{});
  s.node_other_power = r.figure<Watts>("node_other_power").value_or(Watts{});
  s.rack_power_limit = r.figure<Watts>("rack_power_limit", Need::kOptional).value_or(Watts{});
  s.default_scale_out_switch = r.string("default_scale_out_switch").value_or("");
  s.default_transceiver = r.string("default_transceiver", Need::kOptional).value_or("");
  if (s.nvlink_domain_gpus != s.gpus()) {
    r.error("nvlink_domain_gpus = " + std::to_string(s.nvlink_domain_gpus) +
                " does not match nodes * gpus_per_node = " + std::to_string(s.gpus()) +
                " (one NVLink domain per system)",
            "nvlink_domain_gpus");
  }
  if (s.switch_trays > 0 && s.nvswitch_chips % s.switch_trays != 0) {
    r.error("nvswitch_chips = " + std::to_string(s.nvswitch_chips) +
                " is not a multiple of switch_trays = " + std::to_string(s.switch_trays),
            "switch_trays");
  }
  return s;
}

base::Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot open file (does it exist and is it readable?)", path);
  auto text = base::read_all(in);
  if (!text) return fail(text.error().message, path);
  return text;
}

template <class Map>
std::vector<std::string> names_of(const Map& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

template <class Map>
auto lookup(const Map& m, std::string_view name, const char* what)
    -> base::Result<const typename Map::mapped_type*> {
  auto it = m.find(name);
  if (it != m.end()) return &it->second;
  const auto known = names_of(m);
  return fail("unknown " + std::string(what) + " '" + std::string(name) + "'" +
              base::did_you_mean(name, known));
}

bool is_hardware_dir(const std::string& path) {
  for (const char* d :
       {"gpus/", "cpus/", "nics/", "switches/", "transceivers/", "systems/", "clusters/"}) {
    if (path.rfind(d, 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::optional<ClusterSpec> read_cluster(Reader& r) {
  ClusterSpec c;
  const bool inline_spec = !r.has("name");
  if (!inline_spec) c.name = read_name(r).value_or("");
  c.display_name = r.string("display_name", Need::kOptional).value_or(c.name);
  c.description = r.string("description", Need::kOptional).value_or("");
  c.system = r.string("system").value_or("");
  c.count = static_cast<int>(r.integer("count", Need::kRequired, 1, 10'000'000).value_or(0));
  if (auto so = r.child("scale_out")) {
    c.scale_out.switch_name = so->string("switch").value_or("");
    c.scale_out.transceiver = so->string("transceiver", Need::kOptional).value_or("");
    c.scale_out.tiers = static_cast<int>(so->integer("tiers", Need::kOptional, 1, 3).value_or(0));
    so->allow("oversubscription");
    if (so->has("oversubscription")) {
      auto list = so->strings("oversubscription");
      if (list) {
        for (size_t i = 0; i < list->size(); ++i) {
          const std::string& v = (*list)[i];
          // "1:7" (one up for seven down) or a plain ratio "7".
          double ratio = 0;
          const auto colon = v.find(':');
          try {
            if (colon != std::string::npos) {
              const double up = std::stod(v.substr(0, colon));
              const double down = std::stod(v.substr(colon + 1));
              ratio = down / up;
            } else {
              ratio = std::stod(v);
            }
          } catch (...) {
            ratio = 0;
          }
          if (!(ratio >= 1.0) || ratio > 1000) {
            so->error("expected a down:up ratio >= 1 such as '1:7' or '1', got '" + v + "'",
                      "oversubscription");
          }
          c.scale_out.oversubscription.push_back(ratio);
        }
      }
    }
    c.scale_out.rail_optimized = so->boolean("rail_optimized", Need::kOptional).value_or(false);
    c.scale_out.planes =
        static_cast<int>(so->integer("planes", Need::kOptional, 1, 16).value_or(1));
    c.scale_out.cable_latency =
        so->quantity<Seconds>("cable_latency", Need::kOptional).value_or(base::nanoseconds(50));
    c.scale_out.sharp = so->boolean("sharp", Need::kOptional).value_or(false);
    so->finish();
  }
  if (r.has("sources")) r.allow("sources");
  return c;
}

base::Result<Catalog> Catalog::load_files(std::span<const CatalogFile> files) {
  Catalog cat;
  base::Errors errors;
  for (const auto& f : files) {
    if (!is_hardware_dir(f.path)) {
      cat.other_files_.push_back(f);
      continue;
    }
    auto doc = config::parse_document(f.text, "catalog/" + f.path);
    if (!doc) {
      errors.add(doc.error());
      continue;
    }
    config::ReadContext ctx{.file = doc->file};
    Reader top(doc->root, ctx);
    top.read_sources();
    const std::vector<std::string> kinds = {"gpu",         "cpu",    "nic",    "switch",
                                            "transceiver", "system", "cluster"};
    std::string kind;
    for (const auto& k : kinds) {
      if (top.has(k)) kind = k;
    }
    if (kind.empty()) {
      top.error("expected one of the keys " + base::join(kinds) + " at the top level");
      for (auto& e : ctx.errors.items) errors.add(e);
      continue;
    }
    auto body = top.child(kind);
    top.finish();
    if (!body) {
      for (auto& e : ctx.errors.items) errors.add(e);
      continue;
    }
    std::string name;
    auto store = [&](auto& map, auto spec) {
      name = spec.name;
      spec.provenance = ctx.provenance;
      if (map.count(spec.name) != 0) {
        body->error("duplicate " + kind + " name '" + spec.name + "' (also in " +
                        cat.file_of_[kind + ":" + spec.name] + ")",
                    "name");
        return;
      }
      cat.file_of_[kind + ":" + spec.name] = doc->file;
      cat.entry_files_[kind + ":" + spec.name] = CatalogFile{doc->file, f.text};
      map.emplace(spec.name, std::move(spec));
    };
    if (kind == "gpu") store(cat.gpus_, read_gpu(*body));
    if (kind == "cpu") store(cat.cpus_, read_cpu(*body));
    if (kind == "nic") store(cat.nics_, read_nic(*body));
    if (kind == "switch") store(cat.switches_, read_switch(*body));
    if (kind == "transceiver") store(cat.transceivers_, read_transceiver(*body));
    if (kind == "system") store(cat.systems_, read_system(*body));
    if (kind == "cluster") {
      auto c = read_cluster(*body);
      if (c) {
        if (c->name.empty()) body->error("missing required key 'name'");
        c->origin = "catalog";
        store(cat.clusters_, *c);
      }
    }
    body->finish();
    for (auto& e : ctx.errors.items) errors.add(e);
  }
  if (!errors.empty()) return fail(errors.combined());

  // Cross-references: each is an error at the referring file.
  auto ref_error = [&](const std::string& key, const std::string& msg) {
    errors.add(Error{msg, cat.file_of_[key], 0});
  };
  for (const auto& [name, s] : cat.systems_) {
    const std::string key = "system:" + name;
    auto g = cat.gpu(s.gpu);
    if (!g) ref_error(key, "system '" + name + "': gpu: " + g.error().message);
    if (auto c = cat.cpu(s.cpu); !c)
      ref_error(key, "system '" + name + "': cpu: " + c.error().message);
    if (auto n = cat.nic(s.nic); !n)
      ref_error(key, "system '" + name + "': nic: " + n.error().message);
    auto sw = cat.switch_spec(s.nvswitch);
    if (!sw) {
      ref_error(key, "system '" + name + "': nvswitch: " + sw.error().message);
    } else if (g) {
      // Every NVLink of every GPU needs a switch port: chips * ports >= gpus * links.
      const long need = static_cast<long>(s.gpus()) * (*g)->nvlink_links;
      const long have = static_cast<long>(s.nvswitch_chips) * (*sw)->ports;
      if ((*sw)->kind != SwitchKind::kNvlink) {
        ref_error(key, "system '" + name + "': nvswitch '" + s.nvswitch +
                           "' is not an NVLink switch (kind " + switch_kind_name((*sw)->kind) +
                           ")");
      } else if (have < need) {
        ref_error(key, "system '" + name + "' does not fit its NVLink switch radix: " +
                           std::to_string(s.gpus()) + " GPUs x " +
                           std::to_string((*g)->nvlink_links) + " links = " + std::to_string(need) +
                           " ports needed, " + std::to_string(s.nvswitch_chips) + " x " +
                           s.nvswitch + " give " + std::to_string(have));
      }
    }
    if (auto d = cat.switch_spec(s.default_scale_out_switch); !d) {
      ref_error(key, "system '" + name + "': default_scale_out_switch: " + d.error().message);
    }
    if (!s.default_transceiver.empty()) {
      if (auto t = cat.transceiver(s.default_transceiver); !t) {
        ref_error(key, "system '" + name + "': default_transceiver: " + t.error().message);
      }
    }
  }
  for (const auto& [name, c] : cat.clusters_) {
    auto st = cat.validate(c);
    if (!st) ref_error("cluster:" + name, "cluster '" + name + "': " + st.error().message);
  }
  if (!errors.empty()) return fail(errors.combined());
  return cat;
}

base::Status Catalog::validate(const ClusterSpec& c) const {
  auto sys = system(c.system);
  if (!sys) return fail("system: " + sys.error().message);
  auto sw = switch_spec(c.scale_out.switch_name);
  if (!sw) return fail("scale_out.switch: " + sw.error().message);
  if ((*sw)->kind == SwitchKind::kNvlink) {
    return fail(
        "scale_out.switch: '" + c.scale_out.switch_name +
        "' is an NVLink switch; the scale-out fabric needs an InfiniBand or Ethernet switch");
  }
  if (c.scale_out.sharp && ((*sw)->kind != SwitchKind::kInfiniband ||
                            (*sw)->in_network_reduction.find("SHARP") == std::string::npos)) {
    return fail("scale_out.sharp: '" + c.scale_out.switch_name +
                "' has no SHARP in-network reduction (expected an InfiniBand switch with SHARP)");
  }
  if (!c.scale_out.transceiver.empty()) {
    if (auto t = transceiver(c.scale_out.transceiver); !t) {
      return fail("scale_out.transceiver: " + t.error().message);
    }
  }
  if (c.count <= 0) return fail("count: expected >= 1, got " + std::to_string(c.count));
  auto nic_spec = nic((*sys)->nic);
  if (nic_spec) {
    const double per_plane = (*nic_spec)->bandwidth.base() / c.scale_out.planes;
    if (per_plane > (*sw)->port_bandwidth.base() * 1.0001) {
      return fail("scale_out: a NIC port of " +
                  base::format_bits_per_s(BytesPerSecond::from_base(per_plane)) +
                  " per plane does not fit a " + c.scale_out.switch_name + " port of " +
                  base::format_bits_per_s((*sw)->port_bandwidth) +
                  " (use more planes or a faster switch)");
    }
  }
  const size_t max_tiers = c.scale_out.tiers > 0 ? static_cast<size_t>(c.scale_out.tiers) : 3;
  if (c.scale_out.oversubscription.size() > max_tiers) {
    return fail(
        "scale_out.oversubscription: " + std::to_string(c.scale_out.oversubscription.size()) +
        " ratios given for at most " + std::to_string(max_tiers) + " tiers");
  }
  return {};
}

base::Result<Catalog> Catalog::load_embedded() {
  std::vector<CatalogFile> files;
  for (const auto& f : config::embedded_catalog()) files.push_back({f.path, f.text});
  return load_files(files);
}

base::Result<Catalog> Catalog::load_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return fail("not a directory", dir);
  std::vector<CatalogFile> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const auto ext = it->path().extension().string();
    if (!it->is_regular_file() || (ext != ".yaml" && ext != ".yml" && ext != ".json")) continue;
    auto text = read_text_file(it->path().string());
    if (!text) return fail(text.error());
    files.push_back({fs::relative(it->path(), dir).generic_string(), *text});
  }
  std::sort(files.begin(), files.end(),
            [](const CatalogFile& a, const CatalogFile& b) { return a.path < b.path; });
  return load_files(files);
}

const CatalogFile* Catalog::source_file(std::string_view kind, std::string_view name) const {
  auto it = entry_files_.find(std::string(kind) + ":" + std::string(name));
  return it == entry_files_.end() ? nullptr : &it->second;
}

base::Result<const GpuSpec*> Catalog::gpu(std::string_view n) const {
  return lookup(gpus_, n, "gpu");
}
base::Result<const CpuSpec*> Catalog::cpu(std::string_view n) const {
  return lookup(cpus_, n, "cpu");
}
base::Result<const NicSpec*> Catalog::nic(std::string_view n) const {
  return lookup(nics_, n, "nic");
}
base::Result<const SwitchSpec*> Catalog::switch_spec(std::string_view n) const {
  return lookup(switches_, n, "switch");
}
base::Result<const TransceiverSpec*> Catalog::transceiver(std::string_view n) const {
  return lookup(transceivers_, n, "transceiver");
}
base::Result<const SystemSpec*> Catalog::system(std::string_view n) const {
  return lookup(systems_, n, "system");
}
base::Result<const ClusterSpec*> Catalog::cluster(std::string_view n) const {
  return lookup(clusters_, n, "cluster");
}

base::Result<ClusterSpec> resolve_cluster(const Catalog& catalog, std::string_view arg) {
  const std::string s(arg);
  if (s.empty()) return fail("{cluster}: expected a catalog name, a file or SYSTEM*COUNT, got ''");
  if (const auto star = s.find('*'); star != std::string::npos) {
    const std::string sys_name = s.substr(0, star);
    const std::string count_text = s.substr(star + 1);
    // The same limit as a cluster file's `count` (no wrap: 4294967304 once described 8 racks).
    auto count_r = base::parse_integer(count_text, {.min = 1, .max = 10'000'000});
    if (!count_r) {
      return fail("{cluster} '" + s + "': expected SYSTEM*COUNT with COUNT >= 1, got '" +
                  count_text + "' (" + count_r.error().message + ")");
    }
    const int64_t count = *count_r;
    auto sys = catalog.system(sys_name);
    if (!sys) return fail("{cluster} '" + s + "': " + sys.error().message);
    ClusterSpec c;
    c.name = s;
    c.display_name = std::to_string(count) + " x " + (*sys)->display_name;
    c.description = "shorthand: non-blocking fat tree of the systems' own NICs";
    c.system = sys_name;
    c.count = static_cast<int>(count);
    c.scale_out.switch_name = (*sys)->default_scale_out_switch;
    c.scale_out.transceiver = (*sys)->default_transceiver;
    c.origin = "shorthand";
    auto st = catalog.validate(c);
    if (!st) return fail("{cluster} '" + s + "': " + st.error().message);
    return c;
  }
  const bool looks_like_file = s.find('/') != std::string::npos || s.ends_with(".yaml") ||
                               s.ends_with(".yml") || s.ends_with(".json");
  if (!looks_like_file) {
    auto c = catalog.cluster(s);
    if (!c) return fail("{cluster}: " + c.error().message);
    return **c;
  }
  auto doc = config::load_document(s);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = s};
  Reader top(doc->root, ctx);
  auto body = top.child("cluster");
  top.allow("sources");
  top.finish();
  std::optional<ClusterSpec> c;
  if (body) {
    c = read_cluster(*body);
    body->finish();
  }
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  if (c->name.empty()) c->name = s;
  c->origin = s;
  auto st = catalog.validate(*c);
  if (!st) return fail(st.error().message, s, body ? body->line() : 0);
  return *c;
}

}  // namespace clustertwin::hardware
