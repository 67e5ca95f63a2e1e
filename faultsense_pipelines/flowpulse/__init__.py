"""FlowPulse (HotNets '25): lossy links in packet-spraying fabrics, from switch-port counters.

topology (fabric file) -> counters (file contract, per-switch ingress) -> model (expected
shares) -> detect (per-switch CUSUM) -> scan (all switches, echoes dropped) -> ``LinkFault``.
``simulate`` produces counters of a sprayed fat tree running ring all-reduce. See docs/flowpulse.md.
"""
