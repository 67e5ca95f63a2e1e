"""The built wheel carries its data: the default fleet and the stored cover tables.

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

import pytest
import yaml

from faultsense_pipelines.cover import plan_cover

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "faultsense_pipelines"
# sizes whose plan changes when one stored table is missing (checked by deleting each from an
# installed copy): small_covers.json (34, 4), large_covers.json (112, 8), holey_covers.json
# (160, 8: 490 probes, 497 without), resolvable_covers.json (25, 8: 6 rounds, 13 without)
TABLED_SIZES = ((34, 4), (112, 8), (160, 8), (25, 8))


def _shipped_data_files() -> dict[str, Path]:
    """Wheel path -> source file for every data file the wheel must carry."""
    files = [PACKAGE / "data" / "fleet.yaml", *sorted((PACKAGE / "cover").glob("*.json"))]
    return {f.relative_to(ROOT).as_posix(): f for f in files}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built offline from a copy of pyproject.toml, README.md and the packages."""
    src = tmp_path_factory.mktemp("src")
    shutil.copy(ROOT / "pyproject.toml", src)
    shutil.copy(ROOT / "README.md", src)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for pattern in config["tool"]["setuptools"]["packages"]["find"]["include"]:
        top = pattern.rstrip("*")
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


def test_the_wheel_holds_the_default_fleet_and_every_cover_table_byte_for_byte(wheel: Path) -> None:
    expected = _shipped_data_files()
    assert "faultsense_pipelines/data/fleet.yaml" in expected and len(expected) >= 5
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        missing = sorted(set(expected) - names)
        assert not missing, f"not in the wheel: {missing}"
        for name, source in expected.items():
            assert zf.read(name) == source.read_bytes(), name


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
