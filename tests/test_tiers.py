"""The README's tier rule, read from the test sources: no default-tier test asserts a bound in
seconds (a ``*_WITHIN_S`` constant); such a test carries ``@pytest.mark.slow``."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _is_slow(node: ast.FunctionDef) -> bool:
    return any(ast.unparse(d).startswith("pytest.mark.slow") for d in node.decorator_list)


def _module_slow(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            return "pytest.mark.slow" in ast.unparse(node.value)
    return False


def test_every_test_asserting_a_bound_in_seconds_is_in_the_slow_tier() -> None:
    """tests/probe/test_local_orphans.py asserted GONE_WITHIN_S (1.0 s) in the default tier."""
    timed, default_tier = [], []
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        module_slow = _module_slow(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            asserts = [a for a in ast.walk(node) if isinstance(a, ast.Assert)]
            names = {n.id for a in asserts for n in ast.walk(a) if isinstance(n, ast.Name)}
            if any(n.endswith("_WITHIN_S") for n in names):
                where = f"{path.relative_to(TESTS)}::{node.name}"
                timed.append(where)
                if not (module_slow or _is_slow(node)):
                    default_tier.append(where)
    assert timed, "no test asserts a *_WITHIN_S bound: the check reads nothing"
    assert default_tier == []
