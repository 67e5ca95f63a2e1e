"""Refusing a malformed input needs neither torch nor Dagster.

Each case runs the ``faultsense`` entry point in a fresh interpreter on an input of
``tests/cli/test_hostile_inputs.py`` and reads ``sys.modules`` after the one-line refusal:
the command modules are loaded only when their command runs, and every command checks its
inputs before it imports torch (``probe``, ``minder``) or Dagster (``sweep``). What the
error path costs is measured by ``bench/bench_cli_error_path.py`` (``bench/results/cli_error_path.md``),
not asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_hostile_inputs import FLEETS, SCENARIOS

pytestmark = pytest.mark.integration  # the CLI in fresh subprocesses

#: Runs the console script's ``main`` on argv[1] (JSON), then prints which of the heavy
#: libraries were imported; the exit status and stderr are the command's own.
_CHILD = """
import json, sys
sys.argv = ["faultsense", *json.loads(sys.argv[1])]
from faultsense_pipelines.console import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps(sorted(m for m in ("torch", "dagster", "ray", "httpx") if m in sys.modules)))
sys.exit(code)
"""

_FLEETS = {c[0]: c[1] for c in FLEETS}
_SCENARIOS = {c[0]: c[1] for c in SCENARIOS}

#: (case id, arguments; {fleet:<case>} / {scenario:<case>} become a file holding that input)
CASES = [
    ("fleet-duplicate-key", ["sweep", "--fleet", "{fleet:duplicate-key}", "--hour", "2026-11-30-08:00"]),
    ("fleet-alias-bomb", ["sweep", "--fleet", "{fleet:alias-bomb}"]),
    ("fleet-5000-digit-gpus", ["sweep", "--fleet", "{fleet:5000-digit-gpus}"]),
    ("sweep-repeats-not-int", ["sweep", "--repeats", "abc"]),
    ("sweep-hour-malformed", ["sweep", "--hour", "2026-13-30-08:00"]),
    ("scenario-5000-digit-seed", ["simulate", "--scenario", "{scenario:5000-digit-seed}", "--json"]),
    ("scenario-duplicate-key", ["simulate", "--scenario", "{scenario:duplicate-key}"]),
    ("probe-build-seed", ["probe", "build", "--gpus", "8", "--probe-size", "4", "--out", "o", "--seed", "-1"]),
    ("probe-build-probe-size", ["probe", "build", "--gpus", "8", "--probe-size", "9", "--out", "o"]),
    ("minder-train-seed", ["minder", "train", "--metrics", "m.csv", "--out", "o", "--seed", "-1"]),
    ("minder-scan-steps", ["minder", "scan", "--metrics", "m.csv", "--steps", "0"]),
    ("plan-gpus", ["plan", "--gpus", "9" * 50, "--probe-size", "4"]),
]


def _args(args: list[str], tmp_path: Path) -> list[str]:
    out = []
    for arg in args:
        if arg.startswith("{fleet:") or arg.startswith("{scenario:"):
            kind, name = arg[1:-1].split(":", 1)
            path = tmp_path / f"{kind}.{'yaml' if kind == 'fleet' else 'json'}"
            text = (_FLEETS if kind == "fleet" else _SCENARIOS)[name]
            path.write_text(text.replace("{ledger}", str(tmp_path / "ledger")))
            arg = str(path)
        out.append(arg)
    return out


@pytest.mark.parametrize("args", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_input_is_refused_without_importing_torch_or_dagster(tmp_path: Path, args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(_args(args, tmp_path))],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []  # none of torch, dagster, ray, httpx
    assert not (tmp_path / "ledger").exists() and not (tmp_path / "o").exists()
