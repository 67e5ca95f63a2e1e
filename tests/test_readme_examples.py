"""The README's Python examples run as written, as a script, against a generated ledger.

Every ```python block of README.md is written to a file and run with this Python from a
folder holding ``.faultsense/ledger`` (the README's path): a ledger of one replica with a
confirmed slow GPU (gpu:5) in two sweeps and a confirmed link (1-9) in one, written with
:class:`LedgerStore`. What a reader must see is checked on the script's stdout.
"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from faultsense_pipelines.ledger import FaultRow, LedgerStore, make_fault_id

README = Path(__file__).resolve().parents[1] / "README.md"
pytestmark = pytest.mark.integration  # the examples run in a subprocess


def _blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.M | re.S)


def _row(hour: int, component: str, gpu: int, peer: int | None) -> FaultRow:
    window = f"2026-11-30T{hour:02d}"
    return FaultRow(
        fault_id=make_fault_id("faultsense", "sim-64", window, component),
        detected_at=datetime(2026, 11, 30, hour, 10, tzinfo=UTC), sweep_id=f"run-{hour}", replica="sim-64",
        detector="faultsense", component_kind="gpu" if peer is None else "link", component=component,
        gpu=gpu, peer_gpu=peer, slowdown=1.5, status="confirmed", phase=2, probes_used=90,
    )  # fmt: skip


def test_the_readme_has_python_examples() -> None:
    assert _blocks(), "README.md has no ```python block"


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_a_readme_python_example_runs_as_a_script_and_prints_the_ledger(tmp_path: Path, index: int) -> None:
    store = LedgerStore(str(tmp_path / ".faultsense" / "ledger"))
    store.write_faults([_row(7, "gpu:5", 5, None)], day="2026-11-30", batch="faultsense-sim-64-h07")
    store.write_faults([_row(8, "gpu:5", 5, None), _row(8, "link:1-9", 1, 9)], day="2026-11-30", batch="faultsense-sim-64-h08")
    script = tmp_path / "example.py"
    script.write_text(_blocks()[index])
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # DuckDB's table: gpu:5 in two sweeps, link:1-9 in one, most first
    counts = [
        (m.group(1), int(m.group(2))) for m in (re.search(r"│\s*sim-64\s*│\s*(\S+)\s*│\s*(\d+)\s*│", x) for x in lines) if m
    ]
    assert counts == [("gpu:5", 2), ("link:1-9", 1)], out.stdout
    # pandas with pyarrow dtypes prints GPU ids as integers, never 5.0 or 9.0
    link = next(x for x in lines if "link:1-9" in x and "confirmed" in x)
    assert re.search(r"link:1-9\s+1\s+9\s+confirmed", link), link
    assert not re.search(r"\b[159]\.0\b", out.stdout), out.stdout
