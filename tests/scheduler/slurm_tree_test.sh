#!/usr/bin/env bash
# Checks `clustertwin export slurm --format tree` with Debian's real Slurm: writes a slurm.conf
# for the cluster's nodes (TopologyPlugin=topology/tree, loopback, auth/none, state under a temp
# dir), starts slurmctld, and requires `scontrol show topology` to list every switch of the
# export. Exits 77 (skipped) when slurmctld or scontrol is missing: apt-get install -y slurmctld.
# Usage: slurm_tree_test.sh CLUSTERTWIN WORKDIR
set -euo pipefail
bin=$1
work=$2
command -v slurmctld >/dev/null && command -v scontrol >/dev/null || {
  echo "skip: slurmctld/scontrol not installed (apt-get install -y slurmctld)"
  exit 77
}
if [[ $(id -u) != 0 ]]; then
  echo "skip: slurmctld runs as root here (SlurmUser=root)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work/state" "$work/spool"
check() {  # cluster, nodes expression, expected switch count
  local cluster=$1
  "$bin" export slurm --cluster "$cluster" --format tree --out "$work/topology.conf"
  local nodes
  nodes=$(grep -o 'Nodes=[^ ]*' "$work/topology.conf" | sed 's/Nodes=//' | paste -sd, -)
  local switches
  switches=$(grep -c '^SwitchName=' "$work/topology.conf")
  # A port per run, away from the defaults, so parallel runs and a real Slurm do not clash.
  local port=$((20000 + RANDOM % 20000))
  cat > "$work/slurm.conf" <<CONF
ClusterName=ct
SlurmctldHost=localhost
SlurmUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmctldLogFile=$work/slurmctld.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
TopologyPlugin=topology/tree
ReturnToService=1
NodeName=$nodes NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=all Nodes=ALL Default=YES State=UP
CONF
  export SLURM_CONF=$work/slurm.conf
  rm -rf "$work/state"/*
  slurmctld -i -f "$work/slurm.conf"
  local pid=""
  for _ in $(seq 50); do
    [[ -s $work/slurmctld.pid ]] && pid=$(cat "$work/slurmctld.pid") && scontrol ping >/dev/null 2>&1 && break
    sleep 0.2
  done
  local shown
  shown=$(scontrol show topology || true)
  [[ -n $pid ]] && kill "$pid" 2>/dev/null || true
  sleep 0.5
  local listed
  listed=$(grep -c '^SwitchName=' <<<"$shown" || true)
  echo "$cluster: export has $switches switches, scontrol lists $listed"
  if [[ $listed != "$switches" ]]; then
    echo "--- topology.conf"; cat "$work/topology.conf"
    echo "--- scontrol show topology"; echo "$shown"
    echo "--- slurmctld.log"; tail -20 "$work/slurmctld.log" || true
    exit 1
  fi
  # Every leaf of the export appears with its nodes.
  local first
  first=$(grep -m1 '^SwitchName=.* Nodes=' "$work/topology.conf" | sed 's/SwitchName=\([^ ]*\) Nodes=\([^ ]*\)/\1 \2/')
  awk -v s="SwitchName=${first% *} " -v n="Nodes=${first#* }" \
      'index($0, s) == 1 && index($0, "Level=0") && index($0, n) { found = 1 } END { exit !found }' \
      <<<"$shown" || {
    echo "leaf '${first% *}' with nodes '${first#* }' not in:"; echo "$shown"; exit 1; }
}
check gb300-nvl72*8    # 2 tiers: 8 leaves under one top
check eos-h100         # 3 tiers: leaves, pods, top
echo "ok"
