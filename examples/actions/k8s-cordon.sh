#!/usr/bin/env bash
# FaultSense action (on: confirmed): cordon the faulty component's Kubernetes node and taint it
# so that no new serving pod lands there. The node comes from FAULTSENSE_NODE (the replica's
# topology node_names should be the Kubernetes node names); the verdict is also on stdin as JSON.
#
#   actions:
#     - name: cordon
#       on: confirmed
#       command: [examples/actions/k8s-cordon.sh]
#       env: [KUBECONFIG]          # the only variables of the sweep's environment it sees
#       dry_run: false
#
# Exit 0: cordoned and tainted (already cordoned counts). Exit 2: no node in the verdict.
# Anything else: kubectl's own exit code (recorded in the ledger's actions row).
set -euo pipefail

KUBECTL="${KUBECTL:-kubectl}"
TAINT_KEY="${TAINT_KEY:-faultsense.io/gray-failure}"

node="${FAULTSENSE_NODE:-}"
component="${FAULTSENSE_COMPONENT:-unknown}"
if [[ -z "$node" ]]; then
  echo "no node for ${component}: give the replica a topology with node_names" >&2
  exit 2
fi
# node names as Kubernetes allows them (RFC 1123 subdomain): nothing else reaches kubectl
if [[ ! "$node" =~ ^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$ ]]; then
  echo "refusing node name '${node}': not an RFC 1123 name" >&2
  exit 2
fi
cat > /dev/null  # the verdict JSON on stdin is not needed here

"$KUBECTL" cordon "$node"
"$KUBECTL" taint nodes "$node" "${TAINT_KEY}=${component//[^a-z0-9.-]/_}:NoSchedule" --overwrite
