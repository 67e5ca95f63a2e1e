"""The import-layer contract: data flows one way, and the algorithms stay free of I/O frameworks.

topology -> plan -> probe -> evidence -> verdicts -> ledger -> analytics. The graph is read with
:mod:`ast` from the source folders that ``pyproject.toml`` maps into the one installed namespace
(``assets/`` installs as ``faultsense_pipelines.assets``, and so on), so a lazy import inside a
function counts as much as one at the top of a module.

Rules:

1. The core algorithms import no Dagster, torch, Ray or httpx, no executor, no ledger, no CLI,
   directly or through another module of the package.
2. Nothing imports upward: ``definitions`` > ``assets`` > ``resources`` > ``probe``.
3. Executors, detectors, the ledger and the fleet file never import the Dagster layer or the CLI.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_PACKAGE_DIRS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]

CORE = (
    "faultsense_pipelines.cover",
    "faultsense_pipelines.drilldown",
    "faultsense_pipelines.suspects",
    "faultsense_pipelines.latency_noise",
    "faultsense_pipelines.localize",
    "faultsense_pipelines.localization",
    "faultsense_pipelines.judge",
    "faultsense_pipelines.interleave",
    "faultsense_pipelines.anchor",
    "faultsense_pipelines.topology",
    "faultsense_pipelines.probes",
    "faultsense_pipelines.faults",
    "faultsense_pipelines.validation",
    "faultsense_pipelines.vocabulary",
    "faultsense_pipelines.simulator",
    "faultsense_pipelines.flowpulse",
)
CORE_FORBIDDEN = (
    "dagster",
    "torch",
    "ray",
    "httpx",
    "faultsense_pipelines.probe",
    "faultsense_pipelines.assets",
    "faultsense_pipelines.resources",
    "faultsense_pipelines.definitions",
    "faultsense_pipelines.ledger",
    "faultsense_pipelines.cli",
)
LAYERS = (
    "faultsense_pipelines.definitions",
    "faultsense_pipelines.assets",
    "faultsense_pipelines.resources",
    "faultsense_pipelines.probe",
)
BELOW_DAGSTER = (
    "faultsense_pipelines.probe",
    "faultsense_pipelines.minder",
    "faultsense_pipelines.flowpulse",
    "faultsense_pipelines.ledger",
    "faultsense_pipelines.fleet",
    "faultsense_pipelines.fleet_sections",
)
DAGSTER_LAYER = (
    "faultsense_pipelines.assets",
    "faultsense_pipelines.resources",
    "faultsense_pipelines.definitions",
    "faultsense_pipelines.cli",
)


def _within(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _modules() -> dict[str, Path]:
    """Installed module name -> source file, for every module of the namespace."""
    found: dict[str, Path] = {}
    for package, folder in _PACKAGE_DIRS.items():
        base = ROOT / folder
        for path in sorted(base.rglob("*.py")):
            parts = path.relative_to(base).with_suffix("").parts
            if any(p == "__pycache__" for p in parts):
                continue
            name = ".".join((package, *parts))
            found[name.removesuffix(".__init__")] = path
    # the mapped folders sit beside faultsense_pipelines/, not in it: keep each module once
    return found


def _imports(name: str, path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules it imports: package modules by full name, others by top-level name."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for target in _imports(name, path):
            if target.startswith("faultsense_pipelines"):
                # ``from .x import y`` names y too: keep only names that are modules
                if target in modules:
                    edges.add(target)
            else:
                edges.add(target.partition(".")[0])
        graph[name] = edges - {name}
    return graph


def violations(graph: Mapping[str, set[str]]) -> list[str]:
    """Every broken rule of the contract, one line each (empty when the contract holds)."""
    out = []
    for name in sorted(graph):
        if _within(name, CORE):
            seen, stack, parent = {name}, [name], {name: ""}
            while stack:
                here = stack.pop()
                for target in sorted(graph.get(here, ())):
                    if _within(target, CORE_FORBIDDEN):
                        chain = [target, here]
                        while parent.get(chain[-1]):
                            chain.append(parent[chain[-1]])
                        out.append(f"algorithm {name} reaches {target}: {' <- '.join(chain)}")
                    elif target in graph and target not in seen:
                        seen.add(target)
                        parent[target] = here
                        stack.append(target)
        for rank, layer in enumerate(LAYERS):
            if _within(name, (layer,)):
                out += [f"{name} imports {t} upward" for t in sorted(graph[name]) if _within(t, LAYERS[:rank])]
        if _within(name, BELOW_DAGSTER):
            out += [f"{name} imports the Dagster layer: {t}" for t in sorted(graph[name]) if _within(t, DAGSTER_LAYER)]
    return sorted(set(out))


def test_the_package_keeps_the_import_contract() -> None:
    graph = import_graph()
    assert "faultsense_pipelines.assets.sweep" in graph and "faultsense_pipelines.probe.executors.local" in graph
    assert violations(graph) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        # a lazy torch import two modules below an algorithm
        (
            {
                "faultsense_pipelines.localize": {"faultsense_pipelines.judge"},
                "faultsense_pipelines.judge": {"faultsense_pipelines.textfile"},
                "faultsense_pipelines.textfile": {"torch"},
            },
            [
                "algorithm faultsense_pipelines.judge reaches torch: torch <- faultsense_pipelines.textfile"
                " <- faultsense_pipelines.judge",
                "algorithm faultsense_pipelines.localize reaches torch: torch <- faultsense_pipelines.textfile"
                " <- faultsense_pipelines.judge <- faultsense_pipelines.localize",
            ],
        ),
        (
            {"faultsense_pipelines.probe.executors.local": {"faultsense_pipelines.resources.executors"}},
            [
                "faultsense_pipelines.probe.executors.local imports faultsense_pipelines.resources.executors upward",
                "faultsense_pipelines.probe.executors.local imports the Dagster layer: faultsense_pipelines.resources.executors",
            ],
        ),
        ({"faultsense_pipelines.assets.sweep": {"faultsense_pipelines.probe", "dagster"}}, []),
    ],
)
def test_the_contract_checker_reports_each_broken_rule(graph: dict[str, set[str]], expected: list[str]) -> None:
    assert violations(graph) == expected
