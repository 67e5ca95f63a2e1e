#!/usr/bin/env bash
# FaultSense action (on: confirmed): drain the faulty component's Slurm node, with the verdict
# as the reason, so running jobs finish and no new job starts there.
#
#   actions:
#     - name: drain
#       on: confirmed
#       command: [examples/actions/slurm-drain.sh]
#       kinds: [gpu, nic, nvswitch]
#       persist: [2, 3]
#       max_per_fleet: 4
#       dry_run: false
#
# Exit 0: drained. Exit 2: no node in the verdict. Else scontrol's exit code.
set -euo pipefail

SCONTROL="${SCONTROL:-scontrol}"

node="${FAULTSENSE_NODE:-}"
component="${FAULTSENSE_COMPONENT:-unknown}"
if [[ -z "$node" ]]; then
  echo "no node for ${component}: give the replica a topology with node_names" >&2
  exit 2
fi
if [[ ! "$node" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ ]]; then
  echo "refusing node name '${node}'" >&2
  exit 2
fi
cat > /dev/null

reason="faultsense ${FAULTSENSE_REPLICA:-?} ${component} x${FAULTSENSE_SLOWDOWN:-?} at ${FAULTSENSE_HOUR:-?}"
"$SCONTROL" update "NodeName=${node}" State=DRAIN "Reason=${reason}"
