#pragma once
/// The vocabulary of collectives (docs/models/collectives.md): operations, NCCL's algorithms and
/// protocols, element types, and the nccl-tests conventions for sizes, counts and bus bandwidth.

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"

namespace clustertwin::collective {

using base::Bytes;
using base::BytesPerSecond;
using base::Seconds;

enum class Op { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kReduce, kSendRecv };

/// NCCL's algorithms (src/include/device.h NCCL_ALGO_*), plus `hierarchical` (an explicit
/// three-phase composition) and `direct` (all-to-all and send/recv as concurrent point-to-point).
enum class Algorithm {
  kAuto,
  kRing,
  kTree,
  kNvls,
  kNvlsTree,
  kCollNet,
  kPat,
  kHierarchical,
  kDirect
};

/// NCCL's protocols (src/include/device.h NCCL_PROTO_*).
enum class Protocol { kAuto, kLL, kLL128, kSimple };

/// An element type as nccl-tests names it.
struct Dtype {
  std::string name;  ///< nccl-tests spelling: "float", "half", "bfloat16", "int8", ...
  int bytes = 4;
  /// NVLink SHARP can reduce it (NCCL's ncclNvlsSupported(): 16/32/64-bit floats and 32/64-bit
  /// integers; not int8/uint8/fp8).
  bool nvls_reducible = true;
};

const char* op_name(Op op);               ///< "all_reduce", ...
const char* algorithm_name(Algorithm a);  ///< "ring", "nvls_tree", ...
const char* protocol_name(Protocol p);    ///< "simple", "ll", "ll128"
base::Result<Op> parse_op(std::string_view s);
base::Result<Algorithm> parse_algorithm(std::string_view s);
base::Result<Protocol> parse_protocol(std::string_view s);
/// nccl-tests type names and common aliases (fp16 = half, bf16 = bfloat16, fp32 = float).
base::Result<Dtype> parse_dtype(std::string_view s);
std::span<const Op> all_ops();

/// Whether the op reduces (and so needs a reduction operator and, for NVLS, a reducible type).
bool reduces(Op op);
/// nccl-tests' busbw = algbw * factor (doc/PERFORMANCE.md): all_reduce 2(n-1)/n; all_gather,
/// reduce_scatter and all_to_all (n-1)/n; broadcast, reduce and send/recv 1.
double busbw_factor(Op op, int ranks);
/// The nccl-tests "count" column: elements per rank buffer (all_reduce, broadcast, reduce,
/// send/recv) or per rank chunk (all_gather, reduce_scatter, all_to_all: size / n).
int64_t nccl_count(Op op, int64_t size_bytes, int elem_bytes, int ranks);
/// The size nccl-tests actually runs for a requested size: a whole number of elements (and of
/// per-rank chunks where the buffer is split n ways).
int64_t nccl_size(Op op, int64_t requested_bytes, int elem_bytes, int ranks);
/// "sum" for reducing ops, "none" otherwise; root 0 for broadcast and reduce, -1 otherwise.
const char* nccl_redop(Op op);
int nccl_root(Op op);

/// Parses a size the way nccl-tests' -b/-e do (a number with an optional K, M or G suffix in
/// powers of 1024: "16G" = 16 * 2^30 bytes, "1.5M" = 1572864), or with an explicit unit
/// ("1 GB" = 10^9, "1 GiB" = 2^30). Rejects negative, fractional-byte and unit-less garbage.
base::Result<int64_t> parse_size(std::string_view s);
/// "8", "1K", "16M", "2G" when exact in powers of 1024, else the byte count.
std::string format_size(int64_t bytes);

}  // namespace clustertwin::collective
