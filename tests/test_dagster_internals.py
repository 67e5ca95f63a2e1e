"""Dagster's private API is used in one module only, and every name it takes still exists."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADAPTER = ROOT / "resources" / "dagster_internals.py"
SOURCES = ("faultsense_pipelines", "assets", "resources", "probe")


def test_every_private_dagster_name_the_project_uses_still_imports() -> None:
    internals = importlib.import_module("faultsense_pipelines.resources.dagster_internals")
    for name in internals.__all__:
        assert getattr(internals, name) is not None
    spec = internals.NOOP_COMPUTE_LOGS
    assert getattr(importlib.import_module(spec["module"]), spec["class"]) is not None


def test_no_other_module_reaches_into_dagster_private_modules() -> None:
    offenders = []
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ADAPTER:
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (
                    (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dagster._"))
                    or (isinstance(node, ast.Import) and any(a.name.startswith("dagster._") for a in node.names))
                    or (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("dagster._"))
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], offenders
