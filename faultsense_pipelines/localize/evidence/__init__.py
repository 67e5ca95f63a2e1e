"""The evidence drill-down (Phase 2's default, ``--drilldown evidence``).

* :mod:`.drilldown` -- the evidence model over Phase 1's measurements and the paired tests
  that settle each suspect component, with a confidence.
* :mod:`.shared` -- the shared-component stage (NVSwitch, NIC, switch) of that drill-down.
* :mod:`.wiring` -- :func:`~.wiring.run_evidence_phase2`: the drill-down wired to an executor
  and a Phase 1 result.
"""
