#!/usr/bin/env bash
# Fails when a source file includes a layer that comes later in the layer order (ARCHITECTURE.md).
# Foundation layers (base, engine) may be included from anywhere. Usage: check_layers.sh [ROOT]
set -euo pipefail
root=${1:-$(dirname "$0")/..}
order=(base config hardware topology network collective compute models workload engine execution power scheduler calibration search sweep report scenario)
index_of() { local i; for i in "${!order[@]}"; do [[ ${order[$i]} == "$1" ]] && { echo "$i"; return; }; done; echo -1; }
status=0
for dir in "$root"/src/clustertwin/*/; do
  layer=$(basename "$dir")
  me=$(index_of "$layer")
  if [[ $me == -1 ]]; then echo "error: $dir: folder is not a layer in the order (${order[*]})"; status=1; continue; fi
  while IFS= read -r hit; do
    file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}
    dep=$(sed -E 's|.*#include "clustertwin/([a-z_]+)/.*|\1|' <<<"$rest")
    [[ $dep == "$layer" || $dep == base || $dep == engine ]] && continue
    di=$(index_of "$dep")
    if [[ $di == -1 || $di -gt $me ]]; then
      echo "error: ${file#$root/}:$line: layer '$layer' includes '$dep', which comes later in the layer order"
      status=1
    fi
  done < <(grep -rn --include='*.h' --include='*.cpp' '#include "clustertwin/' "$dir" || true)
done
[[ $status == 0 ]] && echo "layers: every include points down the order"
exit $status
