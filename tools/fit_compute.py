#!/usr/bin/env python3
"""Fit clustertwin's per-GPU compute model to measured kernel tables (offline, standard library only).

Reads the AIConfigurator kernel tables in ../shared/reference/measured/<system>/ (ai-dynamo/aiconfigurator
commit 095f58a5, Apache-2.0; see that folder's README.md) and writes

  catalog/compute/<gpu>.yaml          compact efficiency grids the C++ compute layer loads
  tests/validation/data/compute_*.csv  a small subset of HELD-OUT measured points for validation tests

The model (docs/models/compute.md), identical here and in src/clustertwin/compute/compute_model.cpp:

  t(op) = t0 + ideal(op) / r(op)
  ideal(op) = max(flops / peak(dtype), bytes / hbm_bandwidth)       (the roofline time)
  r(op)     = roofline efficiency, interpolated multilinearly in log(axis) space of log(r) on a small
              grid of points, held constant beyond the grid's edges.

Each grid point's r is fitted as ideal / (t_measured - t0) at a measured point (median when several
rows map to the same grid point). Points used for fitting and points held out for validation are
disjoint; which is which is printed in the summary and documented in docs/models/compute.md.

Usage: python3 tools/fit_compute.py [--reference ../shared/reference] [--out .] [--check]
  --check   only print the validation summary, write nothing
"""

import argparse
import bisect
import csv
import math
import os
import statistics
import sys

AIC = "ai-dynamo/aiconfigurator commit 095f58a5 (Apache-2.0)"

# system folder -> (catalog gpu name, AIC spec YAML file, device string)
SYSTEMS = {
    "gb300": ("gb300", "gb300.yaml", "NVIDIA GB300"),
    "gb200": ("gb200", "gb200.yaml", "NVIDIA GB200"),
    "b300": ("b300", "b300_sxm.yaml", "NVIDIA B300 SXM6 AC"),
    "b200": ("b200", "b200_sxm.yaml", "NVIDIA B200"),
    "h200": ("h200", "h200_sxm.yaml", "NVIDIA H200"),
    "h100": ("h100", "h100_sxm.yaml", "NVIDIA H100 80GB HBM3"),
}
# GPUs without measured tables: curves of another GPU applied to their own peaks.
DERIVED = {
    "a100": {
        "from": "h100",
        "peaks": {"bf16": 312e12},
        "hbm": 2.039e12,
        "device": "NVIDIA A100 SXM4 80GB",
        "source": "A100 BF16 312 TFLOP/s dense: Megatron-LM 2021 (arXiv:2104.04473), via "
                  "shared/reference/hardware-and-models.md §1.1 [V]; HBM 2,039 GB/s: NVIDIA A100 "
                  "datasheet (80GB SXM4) [S] (a GAP in hardware-and-models.md)",
        "why": "no measured tables for A100: H100 efficiencies (fraction of peak) applied to A100's "
               "peak and HBM bandwidth; Ampere has no FP8, so only bf16",
    },
    "h800": {
        "from": "h100",
        "peaks": {"bf16": 989e12, "fp8": 1978e12},
        "hbm": 3.35e12,
        "device": "NVIDIA H800",
        "source": "H800 FP8 ~1,979 / BF16 ~989 TFLOP/s, ~3.35 TB/s: hardware-and-models.md §1.1 [S] "
                  "(same SXM5 die as H100, NVLink cut to 400 GB/s bidir)",
        "why": "no measured tables for H800: same silicon and clocks as H100 SXM except NVLink, so "
               "H100's efficiencies and peaks apply unchanged",
    },
}
AZURE_HBM = {  # achievable HBM bandwidth (STREAM-like triad), calibration-cases.csv
    "h100": (2.97e12, "VC0547: Azure ND H100 v5 triad 2.97 TB/s (Azure/AI-benchmarking-guide)"),
    "h200": (4.15e12, "VC0548: Azure ND H200 v5 triad 4.15 TB/s (Azure/AI-benchmarking-guide)"),
    "gb200": (7.35e12, "VC0549: Azure ND GB200 v6 HBM 7.35 TB/s, 92% of peak (Microsoft Tech Community)"),
}
# Blackwell systems without an Azure figure take GB200's fraction (same HBM3e generation).
HBM_FRACTION_FROM = {"gb300": "gb200", "b300": "gb200", "b200": "gb200", "h800": "h100", "a100": "h100"}

DTYPES = {  # csv name -> (clustertwin name, peak key, weight bytes per element)
    "bfloat16": ("bf16", "bf16", 2.0),
    "fp8": ("fp8", "fp8", 1.0),
    "fp8_block": ("fp8_block", "fp8", 1.0 + 4.0 / (128 * 128)),
    "nvfp4": ("nvfp4", "fp4", 0.5 + 1.0 / 16),
}
ACT_BYTES = 2.0  # bf16 activations in and out of every measured call

# Grids (log-spaced). GEMM: fit on power-of-two n, k; hold out every other n, k (768, 1536, 2560,
# 3072, 3584, 5120, 6144, 7168, 10240, 12288, 51200), which are the shapes real models use.
GEMM_M = [1, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
GEMM_NK = [32, 128, 512, 1024, 2048, 4096, 8192, 16384, 65536]
PREFILL_ISL = [1, 16, 64, 256, 1024, 2048, 4096, 8192, 16384]
PREFILL_BH = [1, 4, 16, 64, 256, 1024, 4096]
DECODE_CTX = [2, 16, 128, 1024, 4096, 16384, 65536, 131072]
DECODE_BKV = [1, 4, 16, 64, 256, 1024, 4096]
DECODE_GQA = [1, 2, 4, 8, 16, 64]
MLA_PREFILL_ISL = [1, 16, 64, 256, 1024, 4096, 16384, 32768]
MLA_PREFILL_BH = [1, 8, 64, 512, 4096]
MLA_DECODE_CTX = [2, 16, 128, 1024, 8192, 32768, 131072]
MLA_DECODE_BATCH = [1, 4, 16, 64, 256, 1024]
MLA_DECODE_HEADS = [1, 4, 16, 64, 128]
POW2 = {2 ** i for i in range(0, 20)}


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_aic_spec(path):
    """The few numbers we need from an AIC system YAML (flat 'key: value # comment' lines)."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if ":" not in line:
                continue
            k, v = [s.strip() for s in line.split(":", 1)]
            if k in ("mem_bw", "bfloat16_tc_flops", "fp8_tc_flops", "fp4_tc_flops") and v:
                out[k] = float(v)
    return {
        "bf16": out["bfloat16_tc_flops"],
        "fp8": out["fp8_tc_flops"],
        **({"fp4": out["fp4_tc_flops"]} if "fp4_tc_flops" in out else {}),
        "hbm": out["mem_bw"],
    }


class Grid:
    """r on a log-spaced grid; multilinear interpolation of log(r) in log(axis) coordinates."""

    def __init__(self, axes):
        self.axes = [list(a) for a in axes]
        self.logs = [[math.log(x) for x in a] for a in axes]
        self.values = {}

    def keys(self):
        def rec(i, prefix):
            if i == len(self.axes):
                yield tuple(prefix)
                return
            for x in self.axes[i]:
                yield from rec(i + 1, prefix + [x])
        return list(rec(0, []))

    def fill_missing(self):
        """Grid points with no measurement take the mean log(r) of their measured neighbours."""
        keys = self.keys()
        for _ in range(64):
            missing = [k for k in keys if k not in self.values]
            if not missing:
                return
            update = {}
            for key in missing:
                nb = []
                for ax in range(len(key)):
                    i = self.axes[ax].index(key[ax])
                    for d in (-1, 1):
                        if 0 <= i + d < len(self.axes[ax]):
                            kk = list(key)
                            kk[ax] = self.axes[ax][i + d]
                            if tuple(kk) in self.values:
                                nb.append(math.log(self.values[tuple(kk)]))
                if nb:
                    update[key] = math.exp(sum(nb) / len(nb))
            self.values.update(update)
        raise RuntimeError("grid has points unreachable from any measurement")

    def at(self, point):
        """Interpolated r, capped at 1: a kernel never beats its roofline (points that measured
        faster had L2-resident operands; the model keeps t >= roofline as an invariant)."""
        return min(1.0, self.raw(point))

    def raw(self, point):
        brackets = []
        for ax, x in enumerate(point):
            lx = math.log(max(x, 1e-30))
            la = self.logs[ax]
            if lx <= la[0]:
                brackets.append(((0, 1.0),))
            elif lx >= la[-1]:
                brackets.append(((len(la) - 1, 1.0),))
            else:
                i = bisect.bisect_right(la, lx) - 1
                w = (lx - la[i]) / (la[i + 1] - la[i])
                brackets.append(((i, 1.0 - w), (i + 1, w)))
        acc = 0.0

        def rec(ax, idx, w):
            nonlocal acc
            if ax == len(point):
                key = tuple(self.axes[a][i] for a, i in enumerate(idx))
                acc += w * math.log(self.values[key])
                return
            for i, wi in brackets[ax]:
                if wi > 0:
                    rec(ax + 1, idx + [i], w * wi)
        rec(0, [], 1.0)
        return math.exp(acc)


def fit_grid(axes, samples):
    """samples: list of (grid key, r). Median of log r per key."""
    g = Grid(axes)
    by = {}
    for key, r in samples:
        by.setdefault(key, []).append(math.log(r))
    for key, logs in by.items():
        g.values[key] = math.exp(statistics.median(logs))
    g.fill_missing()
    return g


def clamp_r(ideal, t, t0):
    return min(max(ideal / max(t - t0, 0.02 * t0), 1e-5), 2.0)


def t0_of(latencies):
    return 0.9 * min(latencies)


# ---------------------------------------------------------------- op models (same as the C++ code)

def gemm_ideal(m, n, k, wbytes, peak, bw):
    flops = 2.0 * m * n * k
    nbytes = wbytes * n * k + ACT_BYTES * m * k + ACT_BYTES * m * n
    return max(flops / peak, nbytes / bw)


def prefill_ideal(b, s, h, kv, d, kvbytes, peak, bw, d_v=None):
    d_v = d if d_v is None else d_v
    flops = 2.0 * b * h * (d + d_v) * s * (s + 1) / 2.0
    nbytes = b * s * (ACT_BYTES * (h * d + 2 * kv * d + h * d_v) + kvbytes * 2 * kv * d)
    return max(flops / peak, nbytes / bw)


def decode_ideal(b, ctx, h, kv, d, kvbytes, peak, bw):
    """One new token per sequence attending to ctx keys (itself included): Q, K, V of the new token
    in, O out, the whole K and V cache read once."""
    flops = 2.0 * b * h * 2 * d * ctx
    nbytes = b * (ACT_BYTES * (h * d + 2 * kv * d + h * d) + kvbytes * 2 * kv * d * ctx)
    return max(flops / peak, nbytes / bw)


MLA_QK = 192   # qk_nope 128 + qk_rope 64
MLA_V = 128
MLA_LATENT = 576  # kv_lora_rank 512 + rope 64
MLA_KV_LORA = 512


def mla_prefill_ideal(b, s, h, kvbytes, peak, bw):
    flops = 2.0 * b * h * (MLA_QK + MLA_V) * s * (s + 1) / 2.0
    nbytes = b * s * (ACT_BYTES * h * (2 * MLA_QK + 2 * MLA_V) + kvbytes * MLA_LATENT)
    return max(flops / peak, nbytes / bw)


def mla_decode_ideal(b, ctx, h, kvbytes, peak, bw):
    flops = 2.0 * b * h * (MLA_LATENT + MLA_KV_LORA) * ctx
    nbytes = b * ctx * MLA_LATENT * kvbytes + ACT_BYTES * b * h * (MLA_LATENT + MLA_KV_LORA)
    return max(flops / peak, nbytes / bw)


# ---------------------------------------------------------------- statistics

def summarize(errs):
    a = sorted(abs(e) for e in errs)
    if not a:
        return {"n": 0}
    q = lambda p: a[min(len(a) - 1, int(p * (len(a) - 1) + 0.5))]
    return {"n": len(a), "median": q(0.5), "p90": q(0.9), "max": a[-1]}


def fmt_stats(s):
    if s["n"] == 0:
        return "n=0"
    return "n=%d median %.1f%% p90 %.1f%% max %.0f%%" % (
        s["n"], 100 * s["median"], 100 * s["p90"], 100 * s["max"])


def every(rows, n):
    """A deterministic subset of about n rows."""
    if len(rows) <= n:
        return rows
    step = len(rows) / n
    return [rows[int(i * step)] for i in range(n)]


# ---------------------------------------------------------------- families

def fit_gemm(folder, spec, report, holdout):
    out = {}
    for csv_dtype, (name, peak_key, wbytes) in DTYPES.items():
        path = os.path.join(folder, "gemm_%s.csv" % csv_dtype)
        if not os.path.exists(path) or peak_key not in spec:
            continue
        peak, bw = spec[peak_key], spec["hbm"]
        rows = [(int(r["m"]), int(r["n"]), int(r["k"]), float(r["latency"]) * 1e-3) for r in read_csv(path)]
        t0 = t0_of([t for *_, t in rows])
        nk = [x for x in GEMM_NK if x >= min(r[1] for r in rows)]
        table = {(m, n, k): t for m, n, k, t in rows}
        samples = []
        for (m, n, k), t in table.items():
            if m in GEMM_M and n in nk and k in nk:
                samples.append(((m, n, k), clamp_r(gemm_ideal(m, n, k, wbytes, peak, bw), t, t0)))
        grid = fit_grid([GEMM_M, nk, nk], samples)
        # Unaligned m (not a multiple of 16): padded tiles and slower kernels; the median slowdown of
        # t(m+1) over t(m) at the measured x / x+1 pairs (m >= 32) whose n and k are on the grid.
        ratios = [table[(m + 1, n, k)] / t for (m, n, k), t in table.items()
                  if m >= 32 and m % 16 == 0 and (m + 1, n, k) in table and n in nk and k in nk]
        penalty = max(1.0, statistics.median(ratios)) if ratios else 1.0

        def predict(m, n, k, grid=grid, t0=t0, wbytes=wbytes, peak=peak, penalty=penalty):
            r = grid.at((m, n, k))
            t = t0 + gemm_ideal(m, n, k, wbytes, peak, bw) / r
            return t * (penalty if (m > 16 and m % 16) else 1.0)

        fit_err, test_err, test_aligned, test_large = [], [], [], []
        held = []
        for m, n, k, t in rows:
            e = predict(m, n, k) / t - 1.0
            if n in POW2 and k in POW2:
                fit_err.append(e)
                continue
            test_err.append(e)
            held.append((m, n, k, t))
            if m <= 16 or m % 16 == 0:
                test_aligned.append(e)
            if 2.0 * m * n * k >= 1e11:
                test_large.append(e)
        report.append("  gemm %-9s t0 %.2f us, unaligned-m penalty %.2f; fit rows: %s; held out: %s; "
                      "held out aligned: %s; held out >= 100 GFLOP: %s" % (
                          name, t0 * 1e6, penalty, fmt_stats(summarize(fit_err)), fmt_stats(summarize(test_err)),
                          fmt_stats(summarize(test_aligned)), fmt_stats(summarize(test_large))))
        big = [h for h in held if 2.0 * h[0] * h[1] * h[2] >= 1e11]
        small = [h for h in held if 2.0 * h[0] * h[1] * h[2] < 1e11]
        for m, n, k, t in every(small, 60) + every(big, 60):
            holdout.append((name, m, n, k, "%.5g" % (t * 1e3)))
        out[name] = {"grid": grid, "t0": t0, "penalty": penalty, "axes": ("m", "n", "k"),
                     "csv": "gemm_%s.csv" % csv_dtype, "predict": predict,
                     "stats": (summarize(test_err), summarize(test_large))}
    return out


def fit_prefill(folder, spec, report, holdout):
    out = {}
    rows = read_csv(os.path.join(folder, "attention_context.csv"))
    for attn in ("bfloat16", "fp8"):
        sel = [r for r in rows if r["attn_dtype"] == attn and r["kv_cache_dtype"] == ("fp8" if attn == "fp8" else "bfloat16")]
        if not sel:
            continue
        peak = spec["fp8" if attn == "fp8" else "bf16"]
        kvb = 1.0 if attn == "fp8" else 2.0
        pts = [(int(r["batch_size"]), int(r["isl"]), int(r["num_heads"]), int(r["num_key_value_heads"]),
                int(r["head_dim"]), float(r["latency"]) * 1e-3) for r in sel]
        t0 = t0_of([p[-1] for p in pts])
        ideal = lambda b, s, h, kv, d: prefill_ideal(b, s, h, kv, d, kvb, peak, spec["hbm"])
        fit = [p for p in pts if p[2] in POW2]
        samples = [((p[1], p[0] * p[2]), clamp_r(ideal(*p[:5]), p[5], t0)) for p in fit
                   if p[1] in PREFILL_ISL and p[0] * p[2] in PREFILL_BH]
        grid = fit_grid([PREFILL_ISL, PREFILL_BH], samples)
        predict = lambda b, s, h, kv, d: t0 + ideal(b, s, h, kv, d) / grid.at((s, b * h))
        test = [p for p in pts if p[2] not in POW2]
        errs = [predict(*p[:5]) / p[5] - 1 for p in test]
        big = [predict(*p[:5]) / p[5] - 1 for p in test if p[5] >= 1e-3]
        name = "bf16" if attn == "bfloat16" else "fp8"
        report.append("  attention prefill %-4s t0 %.2f us; fit rows (power-of-two heads): %s; held out "
                      "(other head counts): %s; held out >= 1 ms: %s" % (
                          name, t0 * 1e6, fmt_stats(summarize([predict(*p[:5]) / p[5] - 1 for p in fit])),
                          fmt_stats(summarize(errs)), fmt_stats(summarize(big))))
        for p in every(test, 80):
            holdout.append((name,) + p[:5] + ("%.5g" % (p[5] * 1e3),))
        out[name] = {"grid": grid, "t0": t0, "axes": ("isl", "batch_heads"), "csv": "attention_context.csv"}
    return out


def fit_decode(folder, spec, report, holdout):
    out = {}
    rows = read_csv(os.path.join(folder, "attention_generation.csv"))
    for kvd in ("bfloat16", "fp8"):
        sel = [r for r in rows if r["kv_cache_dtype"] == kvd]
        kvb = 1.0 if kvd == "fp8" else 2.0
        pts = [(int(r["batch_size"]), int(r["step"]) + 1, int(r["num_heads"]), int(r["num_key_value_heads"]),
                int(r["head_dim"]), float(r["latency"]) * 1e-3) for r in sel]
        t0 = t0_of([p[-1] for p in pts])
        ideal = lambda b, c, h, kv, d: decode_ideal(b, c, h, kv, d, kvb, spec["bf16"], spec["hbm"])
        fit = [p for p in pts if p[2] in POW2 and p[3] in POW2]
        samples = [((p[1], p[0] * p[3], p[2] // p[3]), clamp_r(ideal(*p[:5]), p[5], t0)) for p in fit
                   if p[1] in DECODE_CTX and p[0] * p[3] in DECODE_BKV and p[2] // p[3] in DECODE_GQA]
        grid = fit_grid([DECODE_CTX, DECODE_BKV, DECODE_GQA], samples)
        predict = lambda b, c, h, kv, d: t0 + ideal(b, c, h, kv, d) / grid.at((c, b * kv, h / kv))
        test = [p for p in pts if not (p[2] in POW2 and p[3] in POW2)]
        errs = [predict(*p[:5]) / p[5] - 1 for p in test]
        big = [predict(*p[:5]) / p[5] - 1 for p in test if p[5] >= 1e-4]
        name = "bf16" if kvd == "bfloat16" else "fp8"
        report.append("  attention decode kv %-4s t0 %.2f us; fit rows: %s; held out (other head counts): %s; "
                      "held out >= 100 us: %s" % (
                          name, t0 * 1e6, fmt_stats(summarize([predict(*p[:5]) / p[5] - 1 for p in fit])),
                          fmt_stats(summarize(errs)), fmt_stats(summarize(big))))
        for p in every(test, 80):
            holdout.append((name,) + p[:5] + ("%.5g" % (p[5] * 1e3),))
        out[name] = {"grid": grid, "t0": t0, "axes": ("context", "batch_kv_heads", "heads_per_kv_head"),
                     "csv": "attention_generation.csv"}
    return out


def fit_mla(folder, spec, report, holdout_p, holdout_d):
    """MLA core (DeepSeek-V3 shapes). Fit on even-log2 batch sizes, hold out the odd ones."""
    out = {"prefill": {}, "decode": {}}
    fit_b = {1, 4, 16, 64, 256, 1024}
    rows = read_csv(os.path.join(folder, "mla_context.csv"))
    for kvd in ("bfloat16", "fp8"):
        kvb = 1.0 if kvd == "fp8" else 2.0
        pts = [(int(r["batch_size"]), int(r["isl"]), int(r["num_heads"]), float(r["latency"]) * 1e-3)
               for r in rows if r["kv_cache_dtype"] == kvd]
        t0 = t0_of([p[-1] for p in pts])
        ideal = lambda b, s, h: mla_prefill_ideal(b, s, h, kvb, spec["bf16"], spec["hbm"])
        fit = [p for p in pts if p[0] in fit_b]
        grid = fit_grid([MLA_PREFILL_ISL, MLA_PREFILL_BH],
                        [((p[1], p[0] * p[2]), clamp_r(ideal(*p[:3]), p[3], t0)) for p in fit
                         if p[1] in MLA_PREFILL_ISL and p[0] * p[2] in MLA_PREFILL_BH])
        predict = lambda b, s, h: t0 + ideal(b, s, h) / grid.at((s, b * h))
        test = [p for p in pts if p[0] not in fit_b]
        errs = [predict(*p[:3]) / p[3] - 1 for p in test]
        name = "bf16" if kvd == "bfloat16" else "fp8"
        report.append("  mla prefill kv %-4s t0 %.2f us; held out (batch 2, 8, 32, 128): %s" % (
            name, t0 * 1e6, fmt_stats(summarize(errs))))
        for p in every(test, 40):
            holdout_p.append((name,) + p[:3] + ("%.5g" % (p[3] * 1e3),))
        out["prefill"][name] = {"grid": grid, "t0": t0, "axes": ("isl", "batch_heads"), "csv": "mla_context.csv"}
    rows = read_csv(os.path.join(folder, "mla_generation.csv"))
    for kvd in ("bfloat16", "fp8"):
        kvb = 1.0 if kvd == "fp8" else 2.0
        seen = set()
        pts = []
        for r in rows:
            if r["kv_cache_dtype"] != kvd:
                continue
            key = (int(r["batch_size"]), int(r["step"]) + 1, int(r["num_heads"]))
            if key in seen:
                continue
            seen.add(key)
            pts.append(key + (float(r["latency"]) * 1e-3,))
        t0 = t0_of([p[-1] for p in pts])
        ideal = lambda b, c, h: mla_decode_ideal(b, c, h, kvb, spec["bf16"], spec["hbm"])
        fit = [p for p in pts if p[0] in fit_b]
        grid = fit_grid([MLA_DECODE_CTX, MLA_DECODE_BATCH, MLA_DECODE_HEADS],
                        [((p[1], p[0], p[2]), clamp_r(ideal(*p[:3]), p[3], t0)) for p in fit
                         if p[1] in MLA_DECODE_CTX and p[2] in MLA_DECODE_HEADS])
        predict = lambda b, c, h: t0 + ideal(b, c, h) / grid.at((c, b, h))
        test = [p for p in pts if p[0] not in fit_b]
        errs = [predict(*p[:3]) / p[3] - 1 for p in test]
        name = "bf16" if kvd == "bfloat16" else "fp8"
        report.append("  mla decode kv %-4s t0 %.2f us; held out (batch 2, 8, 32, ...): %s" % (
            name, t0 * 1e6, fmt_stats(summarize(errs))))
        for p in every(test, 40):
            holdout_d.append((name,) + p[:3] + ("%.5g" % (p[3] * 1e3),))
        out["decode"][name] = {"grid": grid, "t0": t0, "axes": ("context", "batch", "heads"), "csv": "mla_generation.csv"}
    return out


MOE_PER = [1, 4, 16, 64, 256, 1024, 4096, 16384]
MOE_EXPERT_PARAMS = [262144, 1048576, 4194304, 16777216, 67108864, 268435456]


def moe_terms(tokens, hidden, inter, topk, experts, tp, ep, wbytes):
    """Token-expert pairs, active experts, FLOPs and bytes of one GPU's share of a MoE layer with
    uniform routing (no all-to-all); the same as compute::moe_work() in the C++ code."""
    local = experts / ep
    pairs = tokens * topk * local / experts
    active = max(min(local, pairs), 1e-9)
    i_local = inter / tp
    params = 3.0 * hidden * i_local                  # gate, up, down of one expert
    flops = 2.0 * pairs * params
    nbytes = active * params * wbytes + ACT_BYTES * (pairs * (2 * hidden + 3 * i_local) + 2 * tokens * hidden)
    return pairs / active, params, flops, nbytes


def fit_moe(folder, spec, report, holdout):
    """Fused MoE layer (routing, grouped GEMMs, activation, finalize): roofline efficiency by tokens
    per active expert and parameters per expert, fitted on power-of-two token counts (nearest grid
    node in log space); other token counts only test."""
    out = {}
    # Where two kernel families were measured for a point (fp8_block: CUTLASS and DeepGEMM), keep
    # the faster one, as a framework's kernel selection would.
    best = {}
    for r in read_csv(os.path.join(folder, "moe.csv")):
        if r["distribution"] != "balanced":
            continue
        key = tuple(r[c] for c in ("moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk",
                                   "num_experts", "moe_tp_size", "moe_ep_size"))
        if key not in best or float(r["latency"]) < float(best[key]["latency"]):
            best[key] = r
    rows = list(best.values())
    for csv_dtype, (name, peak_key, wbytes) in DTYPES.items():
        sel = [r for r in rows if r["moe_dtype"] == csv_dtype]
        if not sel or peak_key not in spec:
            continue
        peak, bw = spec[peak_key], spec["hbm"]
        pts = [(int(r["num_tokens"]), int(r["hidden_size"]), int(r["inter_size"]), int(r["topk"]),
                int(r["num_experts"]), int(r["moe_tp_size"]), int(r["moe_ep_size"]),
                float(r["latency"]) * 1e-3) for r in sel]
        t0 = t0_of([p[7] for p in pts])

        def terms(p):
            per, params, flops, nbytes = moe_terms(*p[:7], wbytes)
            return per, params, max(flops / peak, nbytes / bw)

        def nearest(axis, x):
            return min(axis, key=lambda a: abs(math.log(a) - math.log(x)))
        fit = [p for p in pts if p[0] in POW2]
        samples = []
        for p in fit:
            per, params, ideal = terms(p)
            samples.append(((nearest(MOE_PER, per), nearest(MOE_EXPERT_PARAMS, params)), clamp_r(ideal, p[7], t0)))
        grid = fit_grid([MOE_PER, MOE_EXPERT_PARAMS], samples)

        def predict(p, grid=grid, t0=t0):
            per, params, ideal = terms(p)
            return t0 + ideal / grid.at((per, params))
        test = [p for p in pts if p[0] not in POW2]
        errs = [predict(p) / p[7] - 1 for p in test]
        big = [predict(p) / p[7] - 1 for p in test if p[7] >= 1e-3]
        report.append("  moe %-9s t0 %.1f us; fit rows (power-of-two tokens): %s; held out (other token counts): %s; "
                      ">= 1 ms: %s" % (name, t0 * 1e6, fmt_stats(summarize([predict(p) / p[7] - 1 for p in fit])),
                                       fmt_stats(summarize(errs)), fmt_stats(summarize(big))))
        for p in every(test, 40):
            holdout.append((name,) + p[:7] + ("%.5g" % (p[7] * 1e3),))
        out[name] = {"grid": grid, "t0": t0, "axes": ("tokens_per_expert", "expert_params"), "csv": "moe.csv"}
    return out


# ---------------------------------------------------------------- output

def sig(x, digits=4):
    if x == 0:
        return "0"
    s = "%.*g" % (digits, x)
    return s


def grid_rows(grid, labels):
    """One string per row of the last axis: 'm=1 n=32 | r r r ...'."""
    out = []
    axes = grid.axes

    def rec(ax, prefix):
        if ax == len(axes) - 1:
            label = " ".join("%s=%d" % (labels[i], prefix[i]) for i in range(len(prefix)))
            vals = " ".join(sig(grid.values[tuple(prefix) + (x,)], 3) for x in axes[-1])
            out.append("%s | %s" % (label, vals))
            return
        for x in axes[ax]:
            rec(ax + 1, prefix + [x])
    rec(0, [])
    return out


def ylist(xs):
    return "[" + ", ".join(str(x) for x in xs) + "]"


def tflops(x):
    return "%s TFLOP/s" % sig(x / 1e12, 6)


FAMILY_DOC = {
    "gemm": "m x n x k GEMM (bf16 activations; weights in the table's dtype); fit at power-of-two m, n, k; "
            "unaligned-m penalty from the x / x+1 pairs",
    "attention_prefill": "causal context attention, head_dim 128, by isl and batch x heads; fit on "
                         "power-of-two head counts",
    "attention_decode": "decode attention, head_dim 128, by context, batch x kv heads and heads per kv head; "
                        "fit on power-of-two head counts",
    "mla_prefill": "DeepSeek MLA context attention core by isl and batch x heads; fit on batch 1, 4, 16, 64, 256",
    "mla_decode": "DeepSeek MLA decode (absorbed) core by context, batch and heads; fit on batch 1, 4, 16, 64, 256, 1024",
    "moe": "fused MoE layer (routing, grouped GEMMs, activation, finalize; balanced routing, no all-to-all) by "
           "tokens per active expert and parameters per expert; fit on power-of-two token counts",
}


def write_yaml(path, gpu, device, system, spec, fits, hbm_eff, hbm_note, derived=None):
    L = []
    src_dir = "shared/reference/measured/%s/" % (derived["from"] if derived else system)
    L.append("# Compute-model calibration for %s: roofline efficiencies of GEMM, attention, MLA and MoE" % gpu)
    L.append("# kernels (docs/models/compute.md). GENERATED by tools/fit_compute.py from %s" % src_dir)
    L.append("# (%s; converted and fitted by clustertwin). Do not edit by hand." % AIC)
    if derived:
        L.append("# %s." % derived["why"])
    L.append("compute:")
    L.append("  gpu: %s" % gpu)
    L.append("  measured_device: \"%s\"" % device)
    if derived:
        L.append("  derived_from: %s" % derived["from"])
    L.append("  reference_peak:")
    for key, val in spec.items():
        if key != "hbm":
            L.append("    %s: {value: %s, source: spec}" % (key, tflops(val)))
    L.append("  reference_hbm_bandwidth: {value: %s TB/s, source: spec}" % sig(spec["hbm"] / 1e12, 6))
    L.append("  hbm_efficiency: {value: %s, source: hbm}" % sig(hbm_eff, 3))
    L.append("  launch_overhead: {value: %s us, source: gemm-bf16, note: \"0.9 x the fastest bf16 GEMM call (CUDA graph replay)\"}"
             % sig(fits["gemm"]["bf16"]["t0"] * 1e6, 3))
    cites = []
    for fam in ("gemm", "attention_prefill", "attention_decode", "mla_prefill", "mla_decode", "moe"):
        tables = fits[fam]
        if not tables:
            continue
        L.append("  %s:  # %s" % (fam, FAMILY_DOC[fam]))
        for name, f in tables.items():
            tag = "%s-%s" % (fam.replace("_", "-"), name)
            L.append("    %s:" % name)
            L.append("      source: %s" % tag)
            L.append("      launch_overhead: %s us" % sig(f["t0"] * 1e6, 3))
            if "penalty" in f:
                L.append("      unaligned_m_penalty: %s" % sig(f["penalty"], 3))
            L.append("      axes:")
            for an, values in zip(f["axes"], f["grid"].axes):
                L.append("        %s: %s" % (an, ylist(values)))
            L.append("      efficiency:")
            for row in grid_rows(f["grid"], f["axes"]):
                L.append("        - \"%s\"" % row)
            cites.append((tag, f["csv"], FAMILY_DOC[fam]))
    L.append("sources:")
    if derived:
        L.append("  spec: \"%s\"" % derived["source"])
    else:
        L.append("  spec: \"AIConfigurator spec aic-core/src/aiconfigurator_core/systems/%s, copied as %s%s (%s)\"" % (
            SYSTEMS[system][1], src_dir, SYSTEMS[system][1], AIC))
    L.append("  hbm: \"%s\"" % hbm_note)
    extra = (" Measured on %s, applied to this GPU's own peaks: %s." % (derived["from"], derived["why"])) if derived else ""
    for tag, table, what in cites:
        L.append("  %s: \"%s%s (%s), converted and fitted by clustertwin (tools/fit_compute.py): roofline "
                 "efficiency of the %s.%s\"" % (tag, src_dir, table, AIC, what, extra))
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def write_csv(path, header, rows, source_note):
    with open(path, "w", newline="") as f:
        f.write("# %s\n" % source_note)
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow(r)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--reference", default=os.path.join(here, "..", "..", "shared", "reference"))
    ap.add_argument("--out", default=os.path.join(here, ".."))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    measured = os.path.join(args.reference, "measured")
    if not os.path.isdir(measured):
        sys.exit("error: %s: no measured/ folder (pass --reference)" % args.reference)
    report = []
    holdouts = {k: [] for k in ("gemm", "prefill", "decode", "mla_prefill", "mla_decode", "moe")}
    all_fits = {}
    for system, (gpu, spec_file, device) in SYSTEMS.items():
        folder = os.path.join(measured, system)
        spec = read_aic_spec(os.path.join(folder, spec_file))
        report.append("%s (%s):" % (gpu, device))
        hg, hp, hd, hmp, hmd, hm = [], [], [], [], [], []
        fits = {"gemm": fit_gemm(folder, spec, report, hg)}
        fits["attention_prefill"] = fit_prefill(folder, spec, report, hp)
        fits["attention_decode"] = fit_decode(folder, spec, report, hd)
        mla = fit_mla(folder, spec, report, hmp, hmd)
        fits["mla_prefill"], fits["mla_decode"] = mla["prefill"], mla["decode"]
        fits["moe"] = fit_moe(folder, spec, report, hm)
        for key, lst in (("gemm", hg), ("prefill", hp), ("decode", hd), ("mla_prefill", hmp),
                         ("mla_decode", hmd), ("moe", hm)):
            holdouts[key] += [(gpu,) + row for row in lst]
        all_fits[gpu] = (fits, spec, device, system)
    print("\n".join(report))
    if args.check:
        return
    os.makedirs(os.path.join(args.out, "catalog", "compute"), exist_ok=True)

    def hbm_of(gpu, peak_bw):
        base = HBM_FRACTION_FROM.get(gpu, gpu)
        bw, note = AZURE_HBM[base]
        base_peak = all_fits[base][1]["hbm"] if base in all_fits else None
        frac = bw / base_peak
        if base != gpu:
            note = "%s; %s has no such measurement, so %s's fraction %.3f is used" % (note, gpu, base, frac)
        return frac, note

    for gpu, (fits, spec, device, system) in all_fits.items():
        eff, note = hbm_of(gpu, spec["hbm"])
        write_yaml(os.path.join(args.out, "catalog", "compute", gpu + ".yaml"), gpu, device, system, spec,
                   fits, eff, note)
    for gpu, d in DERIVED.items():
        fits, _, _, system = all_fits[d["from"]]
        fits = dict(fits)
        if "fp8" not in d["peaks"]:
            fits = {fam: {k: v for k, v in tables.items() if k == "bf16"} for fam, tables in fits.items()}
        spec = dict(d["peaks"])
        spec["hbm"] = d["hbm"]
        eff, note = hbm_of(gpu, d["hbm"])
        write_yaml(os.path.join(args.out, "catalog", "compute", gpu + ".yaml"), gpu, d["device"], system,
                   spec, fits, eff, note, derived=d)
    vdir = os.path.join(args.out, "tests", "validation", "data")
    os.makedirs(vdir, exist_ok=True)
    note = ("held-out rows of shared/reference/measured/<gpu>/%s (" + AIC +
            "), converted and filtered by clustertwin (tools/fit_compute.py); latency in ms; NOT used for fitting")
    write_csv(os.path.join(vdir, "compute_gemm_holdout.csv"), ["gpu", "dtype", "m", "n", "k", "latency_ms"],
              holdouts["gemm"], note % "gemm_<dtype>.csv")
    write_csv(os.path.join(vdir, "compute_attention_prefill_holdout.csv"),
              ["gpu", "dtype", "batch", "isl", "heads", "kv_heads", "head_dim", "latency_ms"],
              holdouts["prefill"], note % "attention_context.csv")
    write_csv(os.path.join(vdir, "compute_attention_decode_holdout.csv"),
              ["gpu", "kv_dtype", "batch", "context", "heads", "kv_heads", "head_dim", "latency_ms"],
              holdouts["decode"], note % "attention_generation.csv (context = step + 1)")
    write_csv(os.path.join(vdir, "compute_mla_prefill_holdout.csv"),
              ["gpu", "kv_dtype", "batch", "isl", "heads", "latency_ms"], holdouts["mla_prefill"],
              note % "mla_context.csv")
    write_csv(os.path.join(vdir, "compute_mla_decode_holdout.csv"),
              ["gpu", "kv_dtype", "batch", "context", "heads", "latency_ms"], holdouts["mla_decode"],
              note % "mla_generation.csv (context = step + 1)")
    write_csv(os.path.join(vdir, "compute_moe_holdout.csv"),
              ["gpu", "dtype", "tokens", "hidden", "inter", "topk", "experts", "tp", "ep", "latency_ms"],
              holdouts["moe"], note % "moe.csv (balanced routing)")


if __name__ == "__main__":
    main()
