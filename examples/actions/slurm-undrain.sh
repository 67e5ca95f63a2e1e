#!/usr/bin/env bash
# FaultSense action (on: resolved): return a node drained by slurm-drain.sh to service once the
# component was judged healthy in resolve_after sweeps.
#
#   actions:
#     - name: undrain
#       on: resolved
#       command: [examples/actions/slurm-undrain.sh]
#       resolve_after: 2
#       dry_run: false
#
# Exit 0: resumed. Exit 2: no node in the verdict. Else scontrol's exit code.
set -euo pipefail

SCONTROL="${SCONTROL:-scontrol}"

node="${FAULTSENSE_NODE:-}"
if [[ -z "$node" ]]; then
  echo "no node for ${FAULTSENSE_COMPONENT:-unknown}: give the replica a topology with node_names" >&2
  exit 2
fi
if [[ ! "$node" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ ]]; then
  echo "refusing node name '${node}'" >&2
  exit 2
fi
cat > /dev/null

"$SCONTROL" update "NodeName=${node}" State=RESUME
