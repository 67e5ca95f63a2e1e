"""The module paths of the flat layout before the stage packages, for pickles written then.

Dagster's filesystem IO manager pickles asset outputs (a :class:`Phase1Result`, a
:class:`Localization`) under ``$DAGSTER_HOME/storage``; a pickle names each class by its
module, e.g. ``faultsense_pipelines.localization.Localization``. When the flat modules moved
into one package per stage (``localization.py`` became :mod:`faultsense_pipelines.localize.verdicts`),
such a pickle stopped loading: a re-executed run, or a ``fault_ledger`` materialized from an
earlier run's ``phase1_probe_run``, read outputs written before the move.

:func:`alias_old_paths` registers every old path in :data:`sys.modules` as the module that
replaced it, so :func:`pickle.load` finds the classes where they live now. It only aliases
(each module is still imported once, under its new name), and :mod:`faultsense_pipelines.definitions`
calls it when it is imported, before Dagster loads any output; nothing else needs it. A script
that unpickles such outputs outside Dagster calls it first. ``tests/test_old_paths.py`` loads
pickles made before the move, through Dagster's IO manager.

Two old paths are now packages that re-export what the old module defined
(``faultsense_pipelines.localize``, ``faultsense_pipelines.fleet``), so they need no alias.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["OLD_PATHS", "alias_old_paths"]

#: Old module path -> the module that holds its code now.
OLD_PATHS: dict[str, str] = {
    "faultsense_pipelines.topology": "faultsense_pipelines.replica.topology",
    "faultsense_pipelines.faults": "faultsense_pipelines.replica.faults",
    "faultsense_pipelines.probes": "faultsense_pipelines.replica.executor",
    "faultsense_pipelines.vocabulary": "faultsense_pipelines.replica.vocabulary",
    "faultsense_pipelines.judge": "faultsense_pipelines.measure.repeats",
    "faultsense_pipelines.interleave": "faultsense_pipelines.measure.rounds",
    "faultsense_pipelines.latency_noise": "faultsense_pipelines.measure.noise",
    "faultsense_pipelines.suspects": "faultsense_pipelines.localize.suspects",
    "faultsense_pipelines.anchor": "faultsense_pipelines.localize.anchor",
    "faultsense_pipelines.localization": "faultsense_pipelines.localize.verdicts",
    "faultsense_pipelines.drilldown": "faultsense_pipelines.localize.drilldown",
    "faultsense_pipelines.drilldown.adaptive": "faultsense_pipelines.localize.drilldown.adaptive",
    "faultsense_pipelines.drilldown.common": "faultsense_pipelines.localize.drilldown.common",
    "faultsense_pipelines.drilldown.paper": "faultsense_pipelines.localize.drilldown.paper",
    "faultsense_pipelines.drilldown.recheck": "faultsense_pipelines.localize.drilldown.recheck",
    "faultsense_pipelines.simulator": "faultsense_pipelines.sim.simulator",
    "faultsense_pipelines.latency_model": "faultsense_pipelines.sim.latency",
    "faultsense_pipelines.scenario": "faultsense_pipelines.sim.scenario",
    "faultsense_pipelines.fleet_sections": "faultsense_pipelines.fleet.sections",
    "faultsense_pipelines.fleet_maintenance": "faultsense_pipelines.fleet.maintenance",
    "faultsense_pipelines.hours": "faultsense_pipelines.fleet.hours",
}


def alias_old_paths() -> None:
    """Make every old module path of :data:`OLD_PATHS` name its new module (idempotent).

    A path that some module already holds in :data:`sys.modules` is left alone.
    """
    for old, new in OLD_PATHS.items():
        sys.modules.setdefault(old, importlib.import_module(new))
