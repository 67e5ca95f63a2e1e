"""Outputs that Dagster pickled before the stage packages still load.

``tests/data/localization_*_before_house.pkl`` are :class:`Localization` objects pickled
(protocol 4, as Dagster's filesystem IO manager writes them) by the flat layout, whose classes
lived in ``faultsense_pipelines.localization``, ``.topology`` and ``.vocabulary``: the
``evidence`` one (of a drill-down since retired) holds a topology with NVSwitch and NIC components. They are loaded through
Dagster's own IO manager in a fresh interpreter, after importing the code location as Dagster
does, and compared with the same localization computed now.
"""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import Localization, localize
from faultsense_pipelines.old_paths import OLD_PATHS
from faultsense_pipelines.replica.faults import GpuFault, LinkFault
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.sim.simulator import SimulatedReplica

DATA = Path(__file__).parent / "data"
METHODS = ("evidence", "adaptive")


def _localization(method: str) -> Localization:
    """What the fixture pickles hold, computed by today's code; the verdicts' ``node`` (newer
    than the pickles, which read it as None) left out."""
    topology = ReplicaTopology(16, gpus_per_node=8)
    replica = SimulatedReplica(16, [GpuFault(5, 1.6), LinkFault((2, 11), 1.8)], noise_sigma=0.02, seed=4, topology=topology)
    today = localize(replica, plan_cover(16, 4), repeats=3, method=method, topology=topology)
    assert any(v.node for v in today.verdicts)  # today's verdicts name their node ...
    return replace(today, verdicts=tuple(replace(v, node=None) for v in today.verdicts))  # ... the pickles' did not


#: A fresh interpreter: put the pickle where Dagster's filesystem IO manager keeps the output
#: of asset ``phase2_drilldown``, then load it through that IO manager and re-pickle it.
_CHILD = textwrap.dedent(
    """
    import pickle, shutil, sys
    from pathlib import Path
    if sys.argv[3] == "definitions":
        import faultsense_pipelines.definitions  # what Dagster's code location loads first
    import dagster as dg
    base = Path(sys.argv[2])
    shutil.copy(sys.argv[1], base / "phase2_drilldown")
    manager = dg.FilesystemIOManager(base_dir=str(base)).create_io_manager(dg.build_init_resource_context())
    key = dg.AssetKey("phase2_drilldown")
    context = dg.build_input_context(asset_key=key, upstream_output=dg.build_output_context(asset_key=key))
    loaded = manager.load_input(context)
    sys.stdout.buffer.write(pickle.dumps(loaded, 4))
    """
)


def _load_in_child(pkl: Path, tmp_path: Path, first: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", _CHILD, str(pkl), str(tmp_path), first], capture_output=True, timeout=300)


@pytest.mark.integration  # fresh interpreters importing Dagster
@pytest.mark.parametrize("method", METHODS)
def test_an_output_pickled_under_the_old_module_paths_loads_through_dagsters_io_manager(tmp_path: Path, method: str) -> None:
    pkl = DATA / f"localization_{method}_before_house.pkl"
    assert b"faultsense_pipelines.localization" in pkl.read_bytes()  # the fixture names the old path
    proc = _load_in_child(pkl, tmp_path, "definitions")
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    loaded = pickle.loads(proc.stdout)
    assert isinstance(loaded, Localization)
    if method == "evidence":  # a drill-down since retired: the pickle holds the injected faults
        assert loaded.topology == ReplicaTopology(16, gpus_per_node=8)
        assert {v.component for v in loaded.verdicts if v.status == "confirmed"} == {"gpu:5", "link:2-11"}
        assert loaded.to_dict()["faulty_gpus"] == [5] and loaded.to_dict()["faulty_links"] == [[2, 11]]
        return
    assert loaded == _localization(method)
    assert loaded.to_dict() == _localization(method).to_dict()


@pytest.mark.integration
def test_without_the_aliases_the_old_pickle_does_not_load(tmp_path: Path) -> None:
    """The control: the fixture really needs :func:`alias_old_paths` (no old module is left)."""
    proc = _load_in_child(DATA / "localization_evidence_before_house.pkl", tmp_path, "bare")
    assert proc.returncode != 0
    assert b"No module named 'faultsense_pipelines.localization'" in proc.stderr


def test_every_old_path_names_a_module_that_exists_and_no_old_module_is_left() -> None:
    for old, new in OLD_PATHS.items():
        assert importlib.import_module(new).__name__ == new
        rel = old.removeprefix("faultsense_pipelines.").replace(".", "/")
        root = Path(__file__).resolve().parents[1] / "faultsense_pipelines"
        assert not (root / f"{rel}.py").exists() and not (root / rel / "__init__.py").exists(), old
