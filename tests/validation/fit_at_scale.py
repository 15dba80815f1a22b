#!/usr/bin/env python3
"""Fits catalog/collectives/at-scale.yaml to the at-scale collective cases and reports the error
of every case, fitted and held out, plus the leave-one-source-out (LOSO) error of each fitting
source. Standard library only; the model is the clustertwin binary itself (--catalog DIR with a
rewritten at-scale.yaml), so what is fitted is exactly what ships.

  tests/validation/fit_at_scale.py BINARY            report (table in docs/models/collectives.md)
  tests/validation/fit_at_scale.py BINARY --fit      refit, rewrite the values in at-scale.yaml

Cases: tests/validation/data/collective/at_scale.csv (copied from shared/reference/
calibration-at-scale.csv). Parameters and the sources that set them are PARAMS below; each is
fitted by Nelder-Mead on the squared log error of its sources' rows (role `fit`)."""
import csv, json, math, os, re, shutil, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, "data", "collective")
SCALE = "at-scale.yaml"
A2A = "moe-a2a.yaml"

# (file, entry, field, unit, start, lower, upper, sources that fit it). Figures that several
# entries share (DeepEP's link fractions, used by both kernels) name every entry, joined by |.
PARAMS = [
    (SCALE, "- gpus: [h100, h200, h800]|- gpus: [b200, b300]", "nic_efficiency", "", 0.92, 0.5, 1.0, ["dell-309"]),
    (SCALE, "- gpus: [h100, h200, h800]", "sharp_efficiency", "", 0.5, 0.05, 1.0, ["cw-h100"]),
    (SCALE, "- gpus: [h100, h200, h800]|- gpus: [b200, b300]", "cross_domain_fill", " us", 250, 0, 5000, ["cw-h100"]),
    (SCALE, "- gpus: [gb200, gb300]", "nic_efficiency", "", 0.98, 0.5, 1.0, ["nccl-1801"]),
    (SCALE, "- gpus: [gb200, gb300]", "nvls_channel_bw", " GB/s", 34, 5, 200, ["cw-gb200"]),
    (SCALE, "- gpus: [gb200, gb300]", "cross_domain_fill", " us", 900, 0, 5000, ["cw-gb200"]),
    (A2A, "- impl: deepep-normal|- impl: deepep-ll", "nvlink_efficiency", "", 0.67, 0.1, 1.0, ["deepep-v1"]),
    (A2A, "- impl: deepep-normal|- impl: deepep-ll", "rdma_efficiency", "", 0.89, 0.1, 1.0, ["deepep-v1"]),
    (A2A, "- impl: deepep-normal", "rdma_per_peer", " GB/s", 21.5, 1, 100, ["deepep-v1"]),
    (A2A, "- impl: deepep-ll", "dispatch_floor", " us", 33, 0, 1000, ["deepep-v1-ll"]),
    (A2A, "- impl: deepep-ll", "combine_floor", " us", 22, 0, 1000, ["deepep-v1-ll"]),
    (A2A, "- impl: nvlink-onesided", "nvlink_efficiency", "", 0.78, 0.1, 1.0, ["trtllm-18"]),
    (A2A, "- impl: nvlink-onesided", "dispatch_floor", " us", 18.9, 0, 1000, ["trtllm-18"]),
    (A2A, "- impl: nvlink-onesided", "combine_floor", " us", 31, 0, 1000, ["trtllm-18"]),
    (A2A, "- impl: nvlink-onesided", "dispatch_overlap", " us", 5.9, 0, 18, ["trtllm-18"]),
    (A2A, "- impl: nvlink-onesided", "combine_overlap", " us", 11.8, 0, 30, ["trtllm-18"]),
]


def size_bytes(s):
    m = re.fullmatch(r"(\d+)([KMG]?)", s)
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def cases():
    rows = []
    for name, kind in (("at_scale.csv", "collective"), ("moe_a2a.csv", "a2a")):
        with open(os.path.join(DATA, name)) as f:
            for r in csv.DictReader(l for l in f if not l.startswith("#")):
                r["kind"] = kind
                rows.append(r)
    return rows


def set_param(texts, file, entries, field, value, unit):
    """Rewrites `field: {value: V...` inside the named entries of a file (or drops the field
    when value is None, so the model runs without it)."""
    texts = dict(texts)
    for entry in entries.split("|"):
        texts[file] = set_one(texts[file], entry, field, value, unit)
    return tuple(sorted(texts.items()))


def set_one(text, entry, field, value, unit):
    start = text.index(entry)
    end = text.find("\n  - ", start + 1)
    end = len(text) if end < 0 else end
    block = text[start:end]
    pat = re.compile(r"\n    " + field + r": \{value: [^,]+,")
    if value is None:
        block = re.sub(r"\n    " + field + r": \{[^}]*\}", "", block)
    else:
        v = f"{value:.4g}{unit}"
        block = pat.sub(f"\n    {field}: {{value: {v},", block)
    return text[:start] + block + text[end:]


class ModelError(Exception):
    pass


class Model:
    def __init__(self, binary):
        self.binary = binary
        self.tmp = tempfile.mkdtemp(prefix="ct-at-scale-")
        self.cat = os.path.join(self.tmp, "catalog")
        shutil.copytree(os.path.join(ROOT, "catalog"), self.cat)
        self.cache = {}

    def predict(self, texts, row):
        key = (texts, tuple(row.values()))
        if key in self.cache:
            return self.cache[key]
        for name, text in texts:
            with open(os.path.join(self.cat, "collectives", name), "w") as f:
                f.write(text)
        if row["kind"] == "a2a":
            self.cache[key] = self.predict_a2a(row)
            return self.cache[key]
        cluster = row["cluster"]
        if cluster.endswith(".yaml"):
            cluster = os.path.join(DATA, cluster)
        size = size_bytes(row["size"])
        lo = 8 if row["metric"] == "max_busbw" else size
        cmd = [self.binary, "--catalog", self.cat, "collective", "--cluster", cluster,
               "--gpus", row["gpus"], "--op", row["op"], "-b", str(lo), "-e", str(size),
               "--algo", row["algo"], "--sharp", row["sharp"], "--json", "-"]
        if row["per_domain"] != "0":
            cmd += ["--gpus-per-domain", row["per_domain"]]
        if row["channels"] != "0":
            cmd += ["--channels", row["channels"]]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise ModelError(f"{row['id']}: {' '.join(cmd)}\n{out.stderr}")
        res = json.loads(out.stdout)["results"]
        busbw = max(r["busbw_GBps"] for r in res) if row["metric"] == "max_busbw" else res[-1]["busbw_GBps"]
        algo = max(res, key=lambda r: r["busbw_GBps"])["algorithm"] if row["metric"] == "max_busbw" else res[-1]["algorithm"]
        self.cache[key] = (busbw, algo)
        return busbw, algo


    def predict_a2a(self, row):
        cmd = [self.binary, "--catalog", self.cat, "collective", "--cluster", row["cluster"],
               "--gpus", row["gpus"], "--op", "all_to_all", "--impl", row["impl"],
               "--moe", "deepseek-v3", "--tokens", row["tokens"], "--token-bytes",
               row["token_bytes"], "--phase", row["phase"], "--json", "-"]
        if row["balanced"] == "yes":
            cmd.append("--balanced")
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise ModelError(f"{row['id']}: {' '.join(cmd)}\n{out.stderr}")
        res = json.loads(out.stdout)["results"][0]
        key = {"time_us": "time_us", "logical_bw": "logical_bw_GBps", "rdma_bw": "rdma_bw_GBps",
               "nvl_bw": "nvl_bw_GBps"}[row["metric"]]
        return res[key], res["bottleneck"] or "latency"


def nelder_mead(f, x0, lo, hi, iters=80):
    n = len(x0)
    clamp = lambda x: [min(max(v, l), h) for v, l, h in zip(x, lo, hi)]
    pts = [clamp(x0)] + [clamp([v * (1.15 if i == j else 1) + (0.05 if i == j and v == 0 else 0)
                                for j, v in enumerate(x0)]) for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        c = [sum(p[j] for p in pts[:-1]) / n for j in range(n)]
        r = clamp([c[j] + (c[j] - pts[-1][j]) for j in range(n)])
        fr = f(r)
        if fr < vals[0]:
            e = clamp([c[j] + 2 * (c[j] - pts[-1][j]) for j in range(n)])
            fe = f(e)
            pts[-1], vals[-1] = (e, fe) if fe < fr else (r, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = r, fr
        else:
            k = clamp([c[j] + 0.5 * (pts[-1][j] - c[j]) for j in range(n)])
            fk = f(k)
            if fk < vals[-1]:
                pts[-1], vals[-1] = k, fk
            else:
                pts = [pts[0]] + [clamp([pts[0][j] + 0.5 * (p[j] - pts[0][j]) for j in range(n)]) for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
        if max(vals) - min(vals) < 1e-7:
            break
    i = min(range(n + 1), key=lambda i: vals[i])
    return pts[i]


def measured(r):
    return float(r.get("measured_GBps") or r.get("measured"))


def fit(model, text, rows, exclude=()):
    """Fits every parameter whose sources are not all excluded; parameters left without a
    source are dropped from the file (the model runs without them)."""
    for file, entries, field, unit, x0, lo, hi, srcs in PARAMS:
        if not [s for s in srcs if s not in exclude]:
            text = set_param(text, file, entries, field, None, unit)
    groups = {}
    for p in PARAMS:
        use = [s for s in p[7] if s not in exclude]
        if use:
            groups.setdefault(tuple(use), []).append(p)
    for srcs, ps in groups.items():
        if exclude and all(set(p[7]) == set(srcs) for p in ps):
            continue  # untouched by the exclusion: keep the values already fitted
        fit_rows = [r for r in rows if r["source"] in srcs and r["role"] == "fit"]

        def loss(x, text=text, ps=ps):
            t = text
            for (file, entries, field, unit, *_), v in zip(ps, x):
                t = set_param(t, file, entries, field, v, unit)
            try:
                return sum(math.log(model.predict(t, r)[0] / measured(r)) ** 2 for r in fit_rows)
            except ModelError:
                return 1e9  # outside what the catalog accepts (an overlap above its floor)

        x = nelder_mead(loss, [p[4] for p in ps], [p[5] for p in ps], [p[6] for p in ps])
        for (file, entries, field, unit, *_), v in zip(ps, x):
            text = set_param(text, file, entries, field, v, unit)
    return text


def main():
    binary = sys.argv[1]
    model = Model(binary)
    rows = cases()
    catdir = os.path.join(ROOT, "catalog", "collectives")
    text = tuple(sorted((n, open(os.path.join(catdir, n)).read()) for n in (SCALE, A2A)))
    if "--fit" in sys.argv:
        text = fit(model, text, rows)
        for n, t in text:
            open(os.path.join(catdir, n), "w").write(t)
    print("| case | source | role | GPUs | what | size | algorithm / bottleneck | measured | predicted | error | LOSO error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    loso = {}
    for src in sorted({s for p in PARAMS for s in p[7]}):
        t = fit(model, text, rows, exclude=(src,))
        for r in rows:
            if r["source"] == src:
                loso[r["id"]] = model.predict(t, r)[0] / measured(r) - 1
    errs = []
    degraded_ok = True
    for r in rows:
        got, algo = model.predict(text, r)
        err = got / measured(r) - 1
        if r["role"] == "degraded":
            degraded_ok = degraded_ok and err > 0
        if r["role"] != "degraded":
            errs.append(abs(err))
        l = f"{100 * loso[r['id']]:+.1f}%" if r["id"] in loso else ""
        if r["kind"] == "a2a":
            what = f"{r['impl']} {r['phase']} {r['metric']}"
            size = f"{r['tokens']} tok x {r['token_bytes']} B"
            unit = " us" if r["metric"] == "time_us" else " GB/s"
        else:
            what = f"{r['op']} busbw" + (" (max)" if r["metric"] == "max_busbw" else "")
            size, unit = r["size"], " GB/s"
        print(f"| {r['id']} | {r['source']} | {r['role']} | {r['gpus']} | {what} | {size} | {algo} | "
              f"{measured(r):g}{unit} | {got:.1f} | {100 * err:+.1f}% | {l} |")
    checks = [abs(model.predict(text, r)[0] / measured(r) - 1) for r in rows if r["role"] == "check"]
    print(f"\nall {len(errs)} rows (degraded excluded): median |error| {100 * statistics.median(errs):.1f}%, "
          f"worst {100 * max(errs):.1f}%; held-out rows ({len(checks)}): median "
          f"{100 * statistics.median(checks):.1f}%, worst {100 * max(checks):.1f}%; fitted rows with "
          f"their source left out (the mechanism it sets falls back to NCCL's default or is "
          f"absent): median {100 * statistics.median([abs(v) for v in loso.values()]):.1f}%; degraded rows "
          f"all below the prediction: {'yes' if degraded_ok else 'NO'}")
    shutil.rmtree(model.tmp)


if __name__ == "__main__":
    main()
