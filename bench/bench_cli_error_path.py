"""CPU time and peak memory of the ``faultsense`` command refusing a malformed input.

Runs the installed console script on inputs of ``tests/cli/test_hostile_inputs.py`` under
``/usr/bin/time -v`` (user + system CPU seconds, maximum resident set size), each ``--runs``
times, and reports the median CPU and the largest RSS, the exit status, the error line's
start, and which heavy libraries the error path imported (a second run through
``python -c`` that prints ``sys.modules``). Results: ``bench/results/cli_error_path.md``.

    nice -n 10 .venv/bin/python bench/bench_cli_error_path.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HEAVY = ("torch", "dagster", "pandas", "numpy", "pyarrow", "deltalake", "scipy", "sklearn", "networkx", "httpx", "duckdb")

_MODULES = """
import json, sys
sys.argv = ["faultsense", *json.loads(sys.argv[1])]
from faultsense_pipelines.console import main
try:
    main()
except SystemExit:
    pass
print(json.dumps([m for m in {heavy!r} if m in sys.modules]), file=sys.__stdout__)
"""


def cases(tmp: Path) -> list[tuple[str, list[str]]]:
    """(case id, faultsense arguments) for inputs of the hostile-input tests, files written under ``tmp``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.cli import test_hostile_inputs as hostile

    fleets = {c[0]: c[1] for c in hostile.FLEETS}
    scenarios = {c[0]: c[1] for c in hostile.SCENARIOS}
    out = []
    for name in ("duplicate-key", "alias-bomb", "5000-digit-gpus"):
        path = tmp / f"fleet-{name}.yaml"
        path.write_text(fleets[name].replace("{ledger}", str(tmp / "ledger")))
        out.append((f"fleet {name}", ["sweep", "--fleet", str(path), "--hour", "2026-11-30-08:00"]))
    for name in ("5000-digit-seed", "duplicate-key"):
        path = tmp / f"scenario-{name}.json"
        path.write_text(scenarios[name])
        out.append((f"scenario {name}", ["simulate", "--scenario", str(path), "--json"]))
    (tmp / "s.json").write_text('{"gpus": 8, "probe_size": 4, "faults": []}')
    out += [
        ("sweep --repeats abc", ["sweep", "--repeats", "abc"]),
        ("probe build --seed -1", ["probe", "build", "--gpus", "8", "--probe-size", "4", "--out", "o", "--seed", "-1"]),
        ("minder train --seed -1", ["minder", "train", "--metrics", "m.csv", "--out", "o", "--seed", "-1"]),
        ("flowpulse --seed 2^32", ["flowpulse", "simulate", "--out", "o", "--seed", str(2**32)]),
    ]
    return out


def measure(exe: Path, args: list[str], cwd: Path) -> tuple[float, int, int, str]:
    """(user + system CPU s, max RSS MB, exit status, first stderr line) of one run."""
    proc = subprocess.run(["/usr/bin/time", "-v", str(exe), *args], cwd=cwd, capture_output=True, text=True)
    stats = proc.stderr
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", stats).group(1))
    system = float(re.search(r"System time \(seconds\): ([\d.]+)", stats).group(1))
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", stats).group(1))
    code = int(m.group(1)) if (m := re.search(r"Command exited with non-zero status (\d+)", stats)) else 0
    first = next((ln for ln in stats.splitlines() if ln.startswith("error:")), "")
    return user + system, rss_kb // 1024, code, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    opts = parser.parse_args()
    exe = Path(sys.executable).with_name("faultsense")
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        print("| input | CPU s (median) | max RSS MB | exit | heavy modules imported | error line |")
        print("|---|---:|---:|---:|---|---|")
        for name, args in cases(cwd):
            runs = [measure(exe, args, cwd) for _ in range(opts.runs)]
            cpu = statistics.median(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            code, line = runs[0][2], runs[0][3]
            probe = subprocess.run(
                [sys.executable, "-c", _MODULES.format(heavy=HEAVY), json.dumps(args)],
                cwd=cwd, capture_output=True, text=True,
            )  # fmt: skip
            heavy = ", ".join(json.loads(probe.stdout.strip().splitlines()[-1])) or "none"
            print(f"| {name} | {cpu:.2f} | {rss} | {code} | {heavy} | `{line[:60]}` |", flush=True)


if __name__ == "__main__":
    main()
