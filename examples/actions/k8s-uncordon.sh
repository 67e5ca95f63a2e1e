#!/usr/bin/env bash
# FaultSense action (on: resolved): the component was judged healthy in resolve_after sweeps
# after it was confirmed; remove the taint k8s-cordon.sh set and uncordon the node.
#
#   actions:
#     - name: uncordon
#       on: resolved
#       command: [examples/actions/k8s-uncordon.sh]
#       env: [KUBECONFIG]
#       resolve_after: 2
#       dry_run: false
#
# Exit 0: uncordoned (a taint already gone counts). Exit 2: no node in the verdict.
set -euo pipefail

KUBECTL="${KUBECTL:-kubectl}"
TAINT_KEY="${TAINT_KEY:-faultsense.io/gray-failure}"

node="${FAULTSENSE_NODE:-}"
if [[ -z "$node" ]]; then
  echo "no node for ${FAULTSENSE_COMPONENT:-unknown}: give the replica a topology with node_names" >&2
  exit 2
fi
if [[ ! "$node" =~ ^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$ ]]; then
  echo "refusing node name '${node}': not an RFC 1123 name" >&2
  exit 2
fi
cat > /dev/null

# the taint may already be gone (removed by hand): not an error
"$KUBECTL" taint nodes "$node" "${TAINT_KEY}:NoSchedule-" || true
"$KUBECTL" uncordon "$node"
