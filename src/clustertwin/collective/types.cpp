#include "clustertwin/collective/types.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "clustertwin/base/text.h"
#include "clustertwin/base/units_parse.h"

namespace clustertwin::collective {
using base::fail;

namespace {

constexpr std::array kOps = {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter, Op::kAllToAll,
                             Op::kBroadcast, Op::kReduce,    Op::kSendRecv};
constexpr std::array kAlgorithms = {Algorithm::kAuto, Algorithm::kRing,         Algorithm::kTree,
                                    Algorithm::kNvls, Algorithm::kNvlsTree,     Algorithm::kCollNet,
                                    Algorithm::kPat,  Algorithm::kHierarchical, Algorithm::kDirect};
constexpr std::array kProtocols = {Protocol::kAuto, Protocol::kLL, Protocol::kLL128,
                                   Protocol::kSimple};

template <class E, size_t N>
base::Result<E> parse_enum(std::string_view s, const std::array<E, N>& all, const char* (*name)(E),
                           const char* what) {
  std::string lower(s);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string> known;
  for (E e : all) {
    if (lower == name(e)) return e;
    known.emplace_back(name(e));
  }
  return fail(std::string("unknown ") + what + " '" + std::string(s) + "'" +
              base::did_you_mean(s, known) + " (known: " + base::join(known) + ")");
}

}  // namespace

const char* op_name(Op op) {
  switch (op) {
    case Op::kAllReduce:
      return "all_reduce";
    case Op::kAllGather:
      return "all_gather";
    case Op::kReduceScatter:
      return "reduce_scatter";
    case Op::kAllToAll:
      return "all_to_all";
    case Op::kBroadcast:
      return "broadcast";
    case Op::kReduce:
      return "reduce";
    case Op::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kNvls:
      return "nvls";
    case Algorithm::kNvlsTree:
      return "nvls_tree";
    case Algorithm::kCollNet:
      return "collnet";
    case Algorithm::kPat:
      return "pat";
    case Algorithm::kHierarchical:
      return "hierarchical";
    case Algorithm::kDirect:
      return "direct";
  }
  return "?";
}

const char* protocol_name(Protocol p) {
  switch (p) {
    case Protocol::kAuto:
      return "auto";
    case Protocol::kLL:
      return "ll";
    case Protocol::kLL128:
      return "ll128";
    case Protocol::kSimple:
      return "simple";
  }
  return "?";
}

base::Result<Op> parse_op(std::string_view s) {
  // nccl-tests binary names without _perf are accepted too (alltoall, allreduce).
  if (s == "alltoall") return Op::kAllToAll;
  if (s == "allreduce") return Op::kAllReduce;
  if (s == "allgather") return Op::kAllGather;
  if (s == "reducescatter") return Op::kReduceScatter;
  return parse_enum(s, kOps, op_name, "collective op");
}
base::Result<Algorithm> parse_algorithm(std::string_view s) {
  if (s == "nvlstree") return Algorithm::kNvlsTree;
  return parse_enum(s, kAlgorithms, algorithm_name, "algorithm");
}
base::Result<Protocol> parse_protocol(std::string_view s) {
  return parse_enum(s, kProtocols, protocol_name, "protocol");
}

std::span<const Op> all_ops() { return kOps; }

base::Result<Dtype> parse_dtype(std::string_view s) {
  struct Entry {
    const char* name;
    int bytes;
    bool nvls;
  };
  static const Entry kTypes[] = {
      {"int8", 1, false},  {"uint8", 1, false},   {"int32", 4, true},     {"uint32", 4, true},
      {"int64", 8, true},  {"uint64", 8, true},   {"half", 2, true},      {"float", 4, true},
      {"double", 8, true}, {"bfloat16", 2, true}, {"fp8_e4m3", 1, false}, {"fp8_e5m2", 1, false}};
  std::string name(s);
  if (name == "fp16" || name == "float16") name = "half";
  if (name == "bf16") name = "bfloat16";
  if (name == "fp32" || name == "float32") name = "float";
  if (name == "fp64" || name == "float64") name = "double";
  if (name == "fp8" || name == "e4m3") name = "fp8_e4m3";
  if (name == "e5m2") name = "fp8_e5m2";
  std::vector<std::string> known;
  for (const auto& e : kTypes) {
    if (name == e.name) return Dtype{e.name, e.bytes, e.nvls};
    known.emplace_back(e.name);
  }
  return fail("unknown dtype '" + std::string(s) + "'" + base::did_you_mean(s, known) +
              " (known: " + base::join(known) + ")");
}

bool reduces(Op op) {
  return op == Op::kAllReduce || op == Op::kReduceScatter || op == Op::kReduce;
}

double busbw_factor(Op op, int ranks) {
  const double n = ranks;
  switch (op) {
    case Op::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Op::kAllGather:
    case Op::kReduceScatter:
    case Op::kAllToAll:
      return (n - 1) / n;
    case Op::kBroadcast:
    case Op::kReduce:
    case Op::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

static bool split_per_rank(Op op) {
  return op == Op::kAllGather || op == Op::kReduceScatter || op == Op::kAllToAll;
}

int64_t nccl_count(Op op, int64_t size_bytes, int elem_bytes, int ranks) {
  const int64_t elems = size_bytes / elem_bytes;
  return split_per_rank(op) ? elems / ranks : elems;
}

int64_t nccl_size(Op op, int64_t requested_bytes, int elem_bytes, int ranks) {
  const int64_t unit = split_per_rank(op) ? static_cast<int64_t>(elem_bytes) * ranks : elem_bytes;
  return requested_bytes / unit * unit;
}

const char* nccl_redop(Op op) { return reduces(op) ? "sum" : "none"; }
int nccl_root(Op op) { return op == Op::kBroadcast || op == Op::kReduce ? 0 : -1; }

base::Result<int64_t> parse_size(std::string_view s) {
  const std::string text(s);
  auto bad = [&](const std::string& why) {
    return fail(
        "expected a size like 8, 1K, 16M, 16G (nccl-tests: K/M/G = 2^10/2^20/2^30 bytes) "
        "or '1 GB', got '" +
        text + "'" + (why.empty() ? "" : ": " + why));
  };
  if (text.empty()) return bad("");
  // nccl-tests form: digits (optionally a decimal point) and one optional K/M/G suffix.
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i > 0) {
    const std::string number = text.substr(0, i);
    std::string suffix = text.substr(i);
    double mult = 0;
    if (suffix.empty())
      mult = 1;
    else if (suffix == "K" || suffix == "k")
      mult = 1024.0;
    else if (suffix == "M" || suffix == "m")
      mult = 1048576.0;
    else if (suffix == "G" || suffix == "g")
      mult = 1073741824.0;
    else if (suffix == "T" || suffix == "t")
      mult = 1099511627776.0;
    if (mult > 0) {
      double v = 0;
      auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
      if (ec != std::errc() || p != number.data() + number.size()) return bad("not a number");
      const double bytes = v * mult;
      if (bytes != std::floor(bytes)) return bad("not a whole number of bytes");
      if (bytes > 9.0e18) return bad("too large");
      return static_cast<int64_t>(bytes);
    }
  }
  // Otherwise a quantity with a unit, parsed like every size in the catalog.
  auto q = base::parse<base::Bytes>(text);
  if (!q) return bad(q.error().message);
  const double bytes = q->base();
  if (bytes != std::floor(bytes)) return bad("not a whole number of bytes");
  if (bytes > 9.0e18) return bad("too large");
  return static_cast<int64_t>(bytes);
}

std::string format_size(int64_t bytes) {
  const char* suffix[] = {"", "K", "M", "G", "T"};
  int k = 0;
  int64_t v = bytes;
  while (k < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++k;
  }
  return std::to_string(v) + suffix[k];
}

}  // namespace clustertwin::collective
