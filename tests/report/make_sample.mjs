// Writes tests/report/sample_results.json: a results JSON with every report section, for the
// browser test (tests/e2e/) to exercise every chart type before the layers that will produce
// these sections have landed. The cluster section is real `clustertwin describe` output; the
// collective, training, inference and power numbers are ILLUSTRATIVE (simple closed forms below,
// not simulation results), and the file says so in meta.note.
//
// The last collectives entry is a real `clustertwin collective --json` output, in that verb's own
// layout, so the page is tested on both layouts it reads.
//
//   clustertwin describe azure-ndv6-gb300 --json /tmp/d.json
//   clustertwin collective --cluster 'gb300-nvl72*1' --op all_reduce -b 1K -e 16G -f 4 --json /tmp/c.json
//   node tests/report/make_sample.mjs /tmp/d.json /tmp/c.json > tests/report/sample_results.json
import { readFileSync } from 'node:fs';

const cluster = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const r = (v, d = 4) => Number(v.toPrecision(d));

// Collectives: busbw(S) = peak * S / (S + S_half), a saturating curve with a latency knee.
function curve(op, algo, gpus, peak, sHalf, protocol, scope) {
  const factor = op === 'all_reduce' ? (2 * (gpus - 1)) / gpus : (gpus - 1) / gpus;
  const rows = [];
  for (let s = 1024; s <= 16 * 2 ** 30; s *= 4) {
    const busbw = peak * s / (s + sHalf);
    const algbw = busbw / factor;
    rows.push({ size_B: s, busbw_GBps: r(busbw), time_us: r(s / (algbw * 1e3)), algo,
                protocol: typeof protocol === 'function' ? protocol(s) : protocol });
  }
  return { op, algo, gpus, scope, rows };
}
const llSimple = (s) => (s < 64 * 1024 ? 'LL' : s < 8 * 2 ** 20 ? 'LL128' : 'Simple');
const collectives = [
  curve('all_reduce', 'ring', 72, 690, 6e6, llSimple, 'NVLink domain'),
  curve('all_reduce', 'tree', 72, 610, 2.5e6, llSimple, 'NVLink domain'),
  curve('all_reduce', 'nvls', 72, 780, 3e6, 'Simple', 'NVLink domain'),
  curve('all_reduce', 'nvls_tree', 72, 720, 1.5e6, 'Simple', 'NVLink domain'),
  curve('all_reduce', 'ring', 4608, 92, 4e7, llSimple, 'InfiniBand'),
  curve('all_reduce', 'tree', 4608, 88, 1.2e7, llSimple, 'InfiniBand'),
  curve('all_reduce', 'collnet_direct', 4608, 176, 2e7, 'Simple', 'InfiniBand'),
  curve('all_gather', 'ring', 72, 700, 4e6, llSimple, 'NVLink domain'),
  curve('all_gather', 'nvls', 72, 760, 2e6, 'Simple', 'NVLink domain'),
  curve('all_gather', 'pat', 72, 640, 8e5, llSimple, 'NVLink domain'),
];
if (process.argv[3]) collectives.push(JSON.parse(readFileSync(process.argv[3], 'utf8')));

// Training, in the layout the execution layer writes (src/clustertwin/report/training.cpp):
// a 1F1B pipeline, 8 stages x 16 micro-batches (forward 110 ms, backward 220 ms, 2 ms
// stage-to-stage transfer), then per stage the exposed data-parallel reduction and the optimizer.
const pp = 8, m = 16, tf = 0.110, tb = 0.220, p2p = 0.002;
const order = [];
for (let s = 0; s < pp; ++s) {
  const warm = Math.min(pp - s - 1, m);
  const ops = [];
  for (let i = 0; i < warm; ++i) ops.push(['F', i]);
  let f = warm, b = 0;
  while (b < m) {
    if (f < m) ops.push(['F', f++]);
    ops.push(['B', b++]);
  }
  order.push(ops);
}
const done = {};
const free = new Array(pp).fill(0);
const next = new Array(pp).fill(0);
const timeline = [];
for (let progress = true; progress;) {
  progress = false;
  for (let s = 0; s < pp; ++s) {
    while (next[s] < order[s].length) {
      const [kind, i] = order[s][next[s]];
      const dep = kind === 'F' ? (s === 0 ? 0 : done[`F${s - 1}.${i}`])
                               : (s === pp - 1 ? done[`F${s}.${i}`] : done[`B${s + 1}.${i}`]);
      if (dep === undefined) break;
      const start = Math.max(free[s], dep + (dep > 0 ? p2p : 0));
      const end = start + (kind === 'F' ? tf : tb);
      timeline.push({ stage: s, chunk: 0, micro: i, kind, start_s: r(start, 6), end_s: r(end, 6) });
      done[`${kind}${s}.${i}`] = free[s] = end;
      next[s]++;
      progress = true;
    }
  }
}
const pipeEnd = Math.max(...free);
const stages = free.map((end, s) => ({
  stage: s, layers: s === 0 || s === pp - 1 ? 15 : 16, busy_s: r(m * (tf + tb)), pipeline_end_s: r(end, 6),
  dp_exposed_s: 0.21, optimizer_s: 0.06, end_s: r(end + 0.27, 6),
}));
const stepTime = Math.max(...stages.map((s) => s.end_s));
const compute = m * (tf + tb);
const training = {
  cluster: cluster.cluster.name,
  model: 'llama3.1-405b',
  gpu: cluster.cluster.gpu,
  gpus: 4608,
  layout: { tp: 8, pp, dp: 72, cp: 1, ep: 1, vpp: 1, micro_batch: 1, global_batch: 1152, seq_len: 8192,
            micro_batches: m, precision: 'bf16', recompute: 'selective', zero: 1, sequence_parallel: true,
            tp_comm_overlap: true, dp_overlap: true, ep_overlap: false, summary: 'TP8 PP8 DP72' },
  step_time_s: r(stepTime),
  tokens_per_step: 1152 * 8192,
  tokens_per_s: r(1152 * 8192 / stepTime),
  tokens_per_s_per_gpu: r(1152 * 8192 / stepTime / 4608),
  model_tflops_per_gpu: 1030,
  hardware_tflops_per_gpu: 1121,
  mfu: 0.412,
  breakdown_s: {
    forward_compute: r(m * tf * 0.93), backward_compute: r(m * tb * 0.93), recompute: 0,
    tp_comm_exposed: r(compute * 0.07), cp_comm_exposed: 0, ep_comm_exposed: 0,
    pipeline_bubble: r(pipeEnd - compute), dp_comm_exposed: 0.21, optimizer: 0.06,
    pp_send_in_bubble: r(p2p * 2 * (pp - 1)),
  },
  memory_per_gpu: {
    weights_B: r(405e9 * 2 / (8 * pp) * 1.12), gradients_B: r(405e9 * 4 / (8 * pp) / 72),
    optimizer_B: r(405e9 * 12 / (8 * pp) / 72), activations_B: 3.59e10, logits_B: 4.2e9, buffers_B: 6e9,
    total_B: 0, stage: 0, params_per_gpu: r(405e9 / (8 * pp) * 1.12),
  },
  stages,
  timeline,
  notes: ['illustrative sample: a 1F1B schedule from closed forms, not a simulation'],
};
training.memory_per_gpu.total_B = r(Object.entries(training.memory_per_gpu)
  .filter(([k]) => k.endsWith('_B') && k !== 'total_B').reduce((a, [, v]) => a + v, 0));

// Inference: layouts x batch sizes; TPOT grows with batch, throughput per GPU too.
const layouts = [
  { layout: 'TP8 EP8 x9', gpus: 72, base: 0.012, slope: 0.00030, prefill: 0.35 },
  { layout: 'TP4 EP18 x4', gpus: 72, base: 0.015, slope: 0.00018, prefill: 0.5 },
  { layout: 'EP72 DP72 (wide EP)', gpus: 72, base: 0.021, slope: 0.00008, prefill: 0.9 },
  { layout: 'disagg 1P:3D', gpus: 72, base: 0.017, slope: 0.00011, prefill: 0.28 },
];
const points = [];
for (const l of layouts) {
  for (let b = 1; b <= 1024; b *= 2) {
    const tpot = l.base + l.slope * b;
    const users = b * (72 / 8);
    points.push({ layout: l.layout, batch: b, tpot_s: r(tpot), ttft_s: r(l.prefill * (1 + b / 256)),
                  tokens_per_s_per_user: r(1 / tpot), tokens_per_s_per_gpu: r(users / tpot / l.gpus) });
  }
}
for (const p of points) {
  p.meets_slo = p.ttft_s <= 2 && p.tpot_s <= 0.08;
  p.pareto = !points.some((q) => q !== p && q.tokens_per_s_per_gpu >= p.tokens_per_s_per_gpu &&
    q.tokens_per_s_per_user >= p.tokens_per_s_per_user &&
    (q.tokens_per_s_per_gpu > p.tokens_per_s_per_gpu || q.tokens_per_s_per_user > p.tokens_per_s_per_user));
}
const chosen = points.filter((p) => p.meets_slo).sort((a, b) => b.tokens_per_s_per_gpu - a.tokens_per_s_per_gpu)[0];
const inference = {
  model: 'deepseek-r1', gpus: 72, precision: 'fp4', scenario: 'interactive',
  ttft_limit_s: 2, tpot_limit_s: 0.08,
  tokens_per_s_per_gpu: chosen.tokens_per_s_per_gpu,
  points,
  chosen: { ...chosen, prefill_gpus: 18, decode_gpus: 54, kv_cache_per_gpu_B: 9.1e10 },
  // `serve --compare hgx-h200*1`: the per-GPU ratio as a chain of changes (figures illustrative).
  generation_ratio: {"title": "per-GPU deepseek-r1 throughput over hgx-h200*1 (illustrative)", "steps": [{"change": "baseline", "layout": "DEP8 x1 batch 128", "tokens_per_s_per_gpu": 1852, "factor": 1, "meets_slo": true}, {"change": "GPU compute, HBM and NVLink bandwidth", "layout": "DEP8 x1 batch 202", "tokens_per_s_per_gpu": 4326, "factor": 2.336, "meets_slo": true}, {"change": "memory capacity", "layout": "DEP8 x1 batch 384", "tokens_per_s_per_gpu": 5872, "factor": 1.357, "meets_slo": true}, {"change": "FP4 weights", "layout": "DEP8 x1 batch 512", "tokens_per_s_per_gpu": 7225, "factor": 1.23, "meets_slo": true}, {"change": "NVLink domain size", "layout": "ctx DEP2 x3 + gen DEP16 x4", "tokens_per_s_per_gpu": 7778, "factor": 1.077, "meets_slo": true}], "ratio": 4.2},
};

// Power: cluster IT load and one rack over 60 s of training at 10 Hz: compute plateaus,
// dips while communication is exposed, a deep dip at the optimizer step.
const t = [], cl = [], rack = [];
for (let i = 0; i <= 600; ++i) {
  const ts = i / 10, ph = ts % stepTime;
  const level = ph < pipeEnd * 0.08 ? 0.72 : ph < pipeEnd ? 0.93 + 0.04 * Math.sin(ts * 7) : 0.45;
  t.push(r(ts, 6));
  cl.push(r(cluster.power.cluster_it_W * (0.18 + 0.78 * level)));
  rack.push(r(cluster.power.system_nameplate_W * (0.15 + 0.8 * level)));
}
const power = {
  peak_W: Math.max(...cl), average_W: r(cl.reduce((a, b) => a + b) / cl.length), min_W: Math.min(...cl),
  energy_J: r(cl.reduce((a, b) => a + b) / cl.length * 60),
  waveforms: [
    { name: 'cluster IT load', t_s: t, power_W: cl, limit_W: cluster.power.cluster_it_W },
    { name: 'rack 0', t_s: t, power_W: rack, limit_W: cluster.power.rack_power_limit_W },
  ],
};

const results = {
  schema_version: 1,
  meta: { generator: 'tests/report/make_sample.mjs', sample: true,
          note: 'cluster section from clustertwin describe; collective, training, inference and power figures are illustrative, not simulation results' },
  cluster, collectives, training, inference, power,
  warnings: [
    'sample data: collective, training, inference and power sections are illustrative',
    'training: the pipeline bubble is 29% of the step; more microbatches or interleaving (vpp) would shrink it',
  ],
};
process.stdout.write(JSON.stringify(results, null, 1) + '\n');
