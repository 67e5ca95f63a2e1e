"""The built wheel carries its data: the default fleet, the stored cover tables and the example
inputs the ``minder_faults`` and ``flowpulse_faults`` assets scan by default.

A non-editable ``pip install .`` only ships what the wheel holds; a data file that lives
outside the packages (or is missing from ``[tool.setuptools.package-data]``) is silently
absent, and the cover tables even fall back to slower constructions without a word. So the
wheel is built here from a copy of the source tree (the working tree gets no ``build/``),
installed with pip into a folder of its own, and used from a directory outside the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from faultsense_pipelines.cover import plan_cover

pytestmark = pytest.mark.integration  # builds and installs the wheel, runs it in subprocesses

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "faultsense_pipelines"
# sizes whose plan changes when one stored table is missing (checked by deleting each from an
# installed copy): cover/data/small.json (34, 4), large.json (112, 8), holey.json
# (160, 8: 490 probes, 497 without), resolvable.json (25, 8: 6 rounds, 13 without),
# cyclic.json (75, 8: 15 rounds, 21 without)
TABLED_SIZES = ((34, 4), (112, 8), (160, 8), (25, 8), (75, 8))
# the files the passive detectors' assets read when the run config names none
ASSET_DEFAULTS = (
    "faultsense_pipelines/data/minder/metrics.parquet",
    "faultsense_pipelines/data/minder/model/minder.json",
    "faultsense_pipelines/data/minder/model/minder.safetensors",
    "faultsense_pipelines/data/flowpulse/counters.parquet",
    "faultsense_pipelines/data/flowpulse/topology.json",
)


_SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
# installed package name -> the repository folder it is built from
_PACKAGE_DIRS: dict[str, str] = _SETUPTOOLS["package-dir"]


def test_every_package_folder_of_the_repository_is_an_installed_package_of_the_one_namespace() -> None:
    found = set()
    for name, folder in _PACKAGE_DIRS.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            relative = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *relative)))
    assert found == set(_SETUPTOOLS["packages"])
    assert all(p == "faultsense_pipelines" or p.startswith("faultsense_pipelines.") for p in found)


def _shipped_data_files() -> dict[str, Path]:
    """Wheel path -> source file for every data file the wheel must carry: all of ``data/``, the cover tables."""
    data = [f for f in sorted((PACKAGE / "data").rglob("*")) if f.is_file() and "__pycache__" not in f.parts]
    files = [*data, *sorted((PACKAGE / "cover" / "data").glob("*.json"))]
    return {f.relative_to(ROOT).as_posix(): f for f in files}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built offline from a copy of pyproject.toml, README.md and the packages."""
    src = tmp_path_factory.mktemp("src")
    shutil.copy(ROOT / "pyproject.toml", src)
    shutil.copy(ROOT / "README.md", src)
    for top in sorted(set(_PACKAGE_DIRS.values())):
        shutil.copytree(ROOT / top, src / top, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(out)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("faultsense-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed by pip (no dependencies: the test venv has them) into its own folder."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    return target


def test_the_wheel_holds_the_default_fleet_the_asset_examples_and_every_cover_table_byte_for_byte(wheel: Path) -> None:
    expected = _shipped_data_files()
    assert set(ASSET_DEFAULTS) | {"faultsense_pipelines/data/fleet.yaml"} <= set(expected) and len(expected) >= 10
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        missing = sorted(set(expected) - names)
        assert not missing, f"not in the wheel: {missing}"
        for name, source in expected.items():
            assert zf.read(name) == source.read_bytes(), name
            # readable by every user once installed (safetensors writes its file owner-only)
            assert (zf.getinfo(name).external_attr >> 16) & 0o444 == 0o444, f"{name} is not world-readable"


def test_the_installed_wheel_adds_only_the_project_namespace_and_its_dist_info(installed: Path) -> None:
    top = sorted(p.name for p in installed.iterdir() if p.name != "bin")
    assert top == ["faultsense-0.1.0.dist-info", "faultsense_pipelines"]
    assert {p.name for p in (installed / "faultsense_pipelines").iterdir() if p.is_dir()} >= {"assets", "resources", "probe"}


_PROBE = """
import json, sys
from importlib.resources import files
from faultsense_pipelines.fleet import DEFAULT_FLEET_PATH, load_fleet
from faultsense_pipelines.cover import plan_cover
fleet = load_fleet()
covers = {f"{n},{k}": [[list(p) for p in c.probes], [list(r) for r in c.rounds]]
          for n, k in json.loads(sys.argv[1]) for c in [plan_cover(n, k)]}
print(json.dumps({
    "package": str(files("faultsense_pipelines")),
    "default": str(DEFAULT_FLEET_PATH),
    "names": fleet.names,
    "ledger": fleet.ledger,
    "covers": covers,
}))
"""


def test_the_installed_package_loads_its_default_fleet_and_cover_tables_outside_the_repository(
    installed: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "FAULTSENSE_FLEET"}
    env["PYTHONPATH"] = str(installed)
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(TABLED_SIZES)],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    seen = json.loads(run.stdout)
    # the installed copy answered, not the repository's (editable) one
    assert Path(seen["package"]) == installed / "faultsense_pipelines"
    assert Path(seen["default"]) == installed / "faultsense_pipelines" / "data" / "fleet.yaml"
    source = yaml.safe_load((PACKAGE / "data" / "fleet.yaml").read_text())
    assert seen["names"] == [r["name"] for r in source["replicas"]]
    # relative: the ledger lands under the directory the sweep runs in, not in site-packages
    assert seen["ledger"] == source["ledger"] == ".faultsense/ledger"
    for n, k in TABLED_SIZES:
        cover = plan_cover(n, k)
        assert seen["covers"][f"{n},{k}"] == [[list(p) for p in cover.probes], [list(r) for r in cover.rounds]], (n, k)


def test_the_installed_sweep_command_names_the_packaged_default_fleet(installed: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(installed), "COLUMNS": "200"}
    run = subprocess.run(
        [sys.executable, "-c", "from faultsense_pipelines.cli import main; main()", "sweep", "--help"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert "faultsense_pipelines/data/fleet.yaml" in run.stdout


_MATERIALIZE = """
import json, sys
import dagster as dg
import faultsense_pipelines.assets.flowpulse as flowpulse_assets
import faultsense_pipelines.assets.minder as minder_assets
import faultsense_pipelines.assets as assets
from faultsense_pipelines.ledger import LedgerStore
from faultsense_pipelines.resources.ledger import LedgerResource
minder, flowpulse = minder_assets.MinderScanConfig(), flowpulse_assets.FlowPulseScanConfig()
result = dg.materialize([minder_assets.minder_faults, flowpulse_assets.flowpulse_faults],
                        resources={"ledger": LedgerResource(uri=sys.argv[1])})
found = {node: result.asset_materializations_for_node(node)[0].metadata
         for node in ("minder_faults", "flowpulse_faults")}
rows = LedgerStore(sys.argv[1]).read_faults()
print(json.dumps({
    "assets": assets.__file__,
    "defaults": [minder.metrics, minder.model, flowpulse.counters, flowpulse.topology],
    "success": result.success,
    "faulty_machines": found["minder_faults"]["faulty_machines"].value,
    "lossy_links": found["flowpulse_faults"]["lossy_links"].value,
    "ledger": sorted(rows["detector"] + " " + rows["component"] + " " + rows["status"]),
}))
"""


def test_the_installed_passive_detector_assets_default_to_packaged_examples_and_materialize_outside_the_repository(
    installed: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(installed)}
    run = subprocess.run(
        [sys.executable, "-c", _MATERIALIZE, str(tmp_path / "ledger")],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(seen["assets"]) == installed / "faultsense_pipelines" / "assets" / "__init__.py"
    package = installed / "faultsense_pipelines" / "data"
    assert [Path(p) for p in seen["defaults"]] == [
        package / "minder" / "metrics.parquet",
        package / "minder" / "model",
        package / "flowpulse" / "counters.parquet",
        package / "flowpulse" / "topology.json",
    ]
    for name in ASSET_DEFAULTS:
        assert (installed / name).read_bytes() == (ROOT / name).read_bytes(), name
    assert seen["success"]
    # what the examples were generated with: scripts/make_minder_example.py throttles node-0005's GPU
    # (a blip on node-0011 and a job-wide slowdown are no machine fault); the fabric was simulated
    # with a 1% loss on the leaf01-spine02 link in both directions
    assert seen["faulty_machines"] == ["node-0005"]
    assert seen["lossy_links"] == ["fabric_link:leaf01/up02-spine02", "fabric_link:spine02/down01-leaf01"]
    assert seen["ledger"] == [
        "flowpulse fabric_link:leaf01/up02-spine02 confirmed",
        "flowpulse fabric_link:spine02/down01-leaf01 confirmed",
        "minder machine:node-0005 confirmed",
    ]


def test_the_packaged_flowpulse_example_is_what_its_documented_simulate_command_writes(tmp_path: Path) -> None:
    """docs/flowpulse.md and assets/flowpulse.py say how the example was made; it must stay true."""
    from typer.testing import CliRunner

    from faultsense_pipelines.cli import app

    command = ["flowpulse", "simulate", "--out", str(tmp_path), "--iterations", "80", "--start", "40"]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    shipped = PACKAGE / "data" / "flowpulse"
    written = pd.read_parquet(tmp_path / "counters.parquet")
    pd.testing.assert_frame_equal(written, pd.read_parquet(shipped / "counters.parquet"))
    assert json.loads((tmp_path / "topology.json").read_text()) == json.loads((shipped / "topology.json").read_text())
