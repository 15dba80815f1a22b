#!/usr/bin/env bash
# A calibration profile given through a pipe (`--calibration <(...)`, a FIFO) is read once for
# every reader of the job: a training job reads it for its kernel tables, compute-time scale,
# eager issue time and collective lines, a serving job for its kernel tables and serving
# constants. Each used to open the path again, so the second reader of a pipe found it empty
# ("the document is empty") and the run failed. Here every verb gives the same output through a
# pipe as from the file (the profile's path aside), and the profile moves the output (so it was
# read, not skipped).
# Usage: profile_through_pipe.sh CLUSTERTWIN WORKDIR
set -u
bin=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 2
cat >profile.yaml <<'YAML'
# Collective lines of the catalog, a slow eager issue (5 ms per decoder layer) and no fused
# GEMM + all-reduce: each reader of a job has something to read.
collectives:
  name: piped
  gpus: [h100]
serving:
  gpu: h100
  eager_host_per_layer_s: 0.005
  tp_overlap: 0
YAML
fail=0
check() {  # NAME ARGS...: the same JSON from the file and through a pipe, and unlike no profile
  local name=$1
  shift
  "$bin" "$@" -q --json - >plain.json 2>plain.err || { echo "FAIL $name: no profile: $(cat plain.err)"; fail=1; return; }
  "$bin" "$@" -q --calibration profile.yaml --json - >file.json 2>file.err ||
    { echo "FAIL $name: from the file: $(cat file.err)"; fail=1; return; }
  "$bin" "$@" -q --calibration <(cat profile.yaml) --json - >pipe.json 2>pipe.err ||
    { echo "FAIL $name: through a pipe: $(cat pipe.err)"; fail=1; return; }
  sed -E 's#/dev/fd/[0-9]+#profile.yaml#g' pipe.json >pipe-named.json
  if ! cmp -s file.json pipe-named.json; then
    echo "FAIL $name: the pipe's output differs from the file's:"
    diff file.json pipe-named.json | head -20
    fail=1
    return
  fi
  if cmp -s plain.json file.json; then
    echo "FAIL $name: the profile changed nothing (was it read?)"
    fail=1
    return
  fi
  echo "ok: $name"
}
check train train --cluster hgx-h100*1 --model llama3.1-8b --tp 8 --micro-batch 1 --seq-len 1024 \
  --global-batch 8 --cuda-graphs none
check serve serve --cluster hgx-h100*1 --gpus 2 --model llama3.1-8b --tp 2 --isl 1024 --osl 128 \
  --precision fp8 --requests 200 --scenario offline
exit $fail
