"""The import-layer contract: data flows one way, and the algorithms stay free of I/O frameworks.

The package is a stack of layers in the order a probe's latency travels (:data:`LAYERS`): at the
bottom the private utilities (``_utils``) and the input readers, then the replica, the cover,
measuring, localizing, then the simulator, the executors, the fleet file, the ledger, the passive
detectors, and on top the Dagster layer, the sweep orchestrator and the CLI. The graph is read
with :mod:`ast` from the source folders that ``pyproject.toml`` maps into the one installed
namespace (``assets/`` installs as ``faultsense_pipelines.assets``, and so on), so a lazy import
inside a function counts as much as one at the top of a module.

Rules:

1. Every module belongs to a layer, and imports only from its own layer or the ones below.
2. The core algorithms (:data:`CORE`) import no Dagster, torch, Ray or httpx, no executor, no
   ledger, no CLI, directly or through another module of the package.
3. Only the Dagster layer (resources, assets, definitions), the sweep orchestrator and the CLI
   import ``dagster``.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_PACKAGE_DIRS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]

_P = "faultsense_pipelines"

#: Bottom to top: a module may import its own layer and the layers before it, never a later one.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("utilities", (f"{_P}._utils",)),  # small helpers no stage owns (standard library only)
    # reading user input with one-line errors, secrets kept out of messages; the package's docstring
    ("input", (_P, f"{_P}.validation", f"{_P}.textfile", f"{_P}.redaction")),
    ("replica", (f"{_P}.replica",)),
    ("cover", (f"{_P}.cover",)),
    ("measure", (f"{_P}.measure",)),
    ("localize", (f"{_P}.localize",)),
    ("sim", (f"{_P}.sim",)),
    ("probe", (f"{_P}.probe",)),  # the executors and the probe model
    ("fleet", (f"{_P}.fleet",)),
    ("ledger", (f"{_P}.ledger",)),
    ("detectors", (f"{_P}.minder", f"{_P}.flowpulse")),
    ("actions", (f"{_P}.actions",)),  # guarded actions on the ledger's verdicts
    ("metrics", (f"{_P}.metrics",)),  # the Prometheus exporter: reads the fleet file and the ledger
    ("resources", (f"{_P}.resources",)),
    ("assets", (f"{_P}.assets",)),
    ("definitions", (f"{_P}.definitions", f"{_P}.old_paths")),
    ("sweeps", (f"{_P}.sweeps",)),  # sweeping a fleet now through the Dagster job: what `faultsense sweep` runs
    ("cli", (f"{_P}.cli", f"{_P}.console")),
)
#: The core algorithms: pure functions over numbers and files, no I/O framework.
CORE = (
    f"{_P}._utils",
    f"{_P}.validation",
    f"{_P}.textfile",
    f"{_P}.replica",
    f"{_P}.cover",
    f"{_P}.measure",
    f"{_P}.localize",
    f"{_P}.sim",
    f"{_P}.flowpulse",
)
CORE_FORBIDDEN = (
    "dagster",
    "torch",
    "ray",
    "httpx",
    f"{_P}.probe",
    f"{_P}.assets",
    f"{_P}.resources",
    f"{_P}.definitions",
    f"{_P}.ledger",
    f"{_P}.cli",
)
#: The layers that may import ``dagster`` itself.
DAGSTER_USERS = ("resources", "assets", "definitions", "sweeps", "cli")


def _within(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def layer_of(module: str) -> int | None:
    """The rank of ``module``'s layer in :data:`LAYERS` (longest matching prefix), or None.

    The bare package name ``faultsense_pipelines`` matches only itself.
    """
    best: tuple[int, int] | None = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            matches = module == p or (p != _P and module.startswith(p + "."))
            if matches and (best is None or len(p) > best[1]):
                best = (rank, len(p))
    return None if best is None else best[0]


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
            if target.startswith(_P):
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
        rank = layer_of(name)
        if rank is None:
            out.append(f"{name} is in no layer (add it to LAYERS)")
            continue
        for target in sorted(graph[name]):
            there = layer_of(target) if target.startswith(_P) else None
            if there is not None and there > rank:
                out.append(f"{name} imports {target} upward ({LAYERS[rank][0]} < {LAYERS[there][0]})")
            if target == "dagster" and LAYERS[rank][0] not in DAGSTER_USERS:
                out.append(f"{name} imports dagster (only {', '.join(DAGSTER_USERS)} may)")
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
    return sorted(set(out))


def test_the_package_keeps_the_import_contract() -> None:
    graph = import_graph()
    assert "faultsense_pipelines.assets.sweep" in graph and "faultsense_pipelines.probe.executors.local" in graph
    assert "faultsense_pipelines.localize.driver" in graph and "faultsense_pipelines.measure.rounds" in graph
    assert violations(graph) == []


def test_every_layer_names_an_existing_module_or_package() -> None:
    graph = import_graph()
    for layer, prefixes in LAYERS:
        for p in prefixes:
            assert any(_within(m, (p,)) for m in graph), f"layer {layer}: {p} matches no module"


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        # a lazy torch import two modules below an algorithm
        (
            {
                "faultsense_pipelines.localize.driver": {"faultsense_pipelines.measure.repeats"},
                "faultsense_pipelines.measure.repeats": {"faultsense_pipelines.textfile"},
                "faultsense_pipelines.textfile": {"torch"},
            },
            [
                "algorithm faultsense_pipelines.localize.driver reaches torch: torch <- faultsense_pipelines.textfile"
                " <- faultsense_pipelines.measure.repeats <- faultsense_pipelines.localize.driver",
                "algorithm faultsense_pipelines.measure.repeats reaches torch: torch <- faultsense_pipelines.textfile"
                " <- faultsense_pipelines.measure.repeats",
                "algorithm faultsense_pipelines.textfile reaches torch: torch <- faultsense_pipelines.textfile",
            ],
        ),
        # an executor reaching up into the Dagster layer
        (
            {"faultsense_pipelines.probe.executors.local": {"faultsense_pipelines.resources.executors"}},
            [
                "faultsense_pipelines.probe.executors.local imports faultsense_pipelines.resources.executors upward"
                " (probe < resources)",
            ],
        ),
        # measuring reaching up into localizing; the replica into the simulator
        (
            {
                "faultsense_pipelines.measure.rounds": {"faultsense_pipelines.localize.suspects"},
                "faultsense_pipelines.replica.faults": {"faultsense_pipelines.sim.simulator"},
            },
            [
                "faultsense_pipelines.measure.rounds imports faultsense_pipelines.localize.suspects upward (measure < localize)",
                "faultsense_pipelines.replica.faults imports faultsense_pipelines.sim.simulator upward (replica < sim)",
            ],
        ),
        # the ledger importing Dagster; an algorithm reaching the ledger; a module in no layer
        (
            {
                "faultsense_pipelines.ledger.store": {"dagster"},
                "faultsense_pipelines.flowpulse.scan": {"faultsense_pipelines.ledger.store"},
                "faultsense_pipelines.scratch": set(),
            },
            [
                "algorithm faultsense_pipelines.flowpulse.scan reaches faultsense_pipelines.ledger.store:"
                " faultsense_pipelines.ledger.store <- faultsense_pipelines.flowpulse.scan",
                "faultsense_pipelines.ledger.store imports dagster (only resources, assets, definitions, sweeps, cli may)",
                "faultsense_pipelines.scratch is in no layer (add it to LAYERS)",
            ],
        ),
        # what is allowed: assets over the executors and Dagster; the package's own docstring
        (
            {
                "faultsense_pipelines.assets.sweep": {"faultsense_pipelines.probe", "dagster"},
                "faultsense_pipelines": set(),
                "faultsense_pipelines.localize.driver": {"faultsense_pipelines.cover", "faultsense_pipelines.measure.rounds"},
            },
            [],
        ),
    ],
)
def test_the_contract_checker_reports_each_broken_rule(graph: dict[str, set[str]], expected: list[str]) -> None:
    assert violations(graph) == expected
