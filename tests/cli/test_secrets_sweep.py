"""End to end: a ``faultsense sweep`` against servers that echo the API key back never lets it out.

Real sweeps (subprocesses, a real Dagster instance under ``$DAGSTER_HOME``) of a fleet of two
vLLM replicas: ``newline-b`` has a key with a trailing newline, so the fleet's sweep is refused
before any run (one line naming the variable, exit 2); then ``echo-a`` alone talks to a
loopback server that echoes the Authorization header in a different form on every request
(whole in an HTTP 500, cut through at 300 characters, re-spaced, as a logprob).
Afterwards the key is searched, as every 8-character window of it, in stdout, stderr, every
file of the Dagster storage and every file of the ledger (raw bytes, and every string cell
of every Parquet file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.hostile_server import HostileServer, models_card, send_json, send_stream, token_chunk

pytestmark = pytest.mark.integration  # a real CLI sweep in a subprocess against loopback servers

KEY_A = "sk-5d1f0c9b7e3a42c6e8a1"  # shares no 8 characters with a replica or batch name
KEY_B = "sk-8e2c4a6f1d3b5079c4d2\n"
HOUR = "2026-11-30-08:00"


def _windows(key: str) -> list[str]:
    core = "".join(key.split())
    return [core[i : i + 8] for i in range(len(core) - 7)]


def _echo_forms(request, conn, state={"n": 0}):  # noqa: B006 - a per-module request counter
    if request.path == "/v1/models":
        send_json(conn, 200, models_card(state["root"]))
        return
    state["n"] += 1
    auth = request.auth
    form = state["n"] % 4
    if form == 1:
        send_json(conn, 500, {"error": {"message": "x" * 280 + auth + " tail"}})
    elif form == 2:
        send_json(conn, 500, {"error": {"message": auth[:14] + "\n \t" + auth[14:]}})
    elif form == 3:
        send_stream(conn, [token_chunk(auth)])
    else:
        send_json(conn, 401, {"error": {"message": f"bad {auth!r}"}})


def _strings(path: Path) -> list[str]:
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError):
        return []
    out = []
    for column in table.columns:
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            out.extend(v for v in column.to_pylist() if v)
    return out


def test_a_sweep_against_echoing_servers_leaks_the_key_nowhere(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    root.mkdir()
    (root / "config.json").write_text(json.dumps({"hidden_size": 64, "num_experts": 4, "num_experts_per_tok": 2}))
    _echo_forms.__defaults__[0]["root"] = str(root)  # type: ignore[index]
    ledger, home = tmp_path / "ledger", tmp_path / "dagster"
    home.mkdir()
    with HostileServer(_echo_forms) as server:
        fleet = tmp_path / "fleet.yaml"
        fleet.write_text(
            f"ledger: {ledger}\nreplicas:\n"
            f"  - {{name: echo-a, gpus: 4, probe_size: 2, executor: vllm, vllm: {{url: '{server.url}', api_key_env: FS_KEY_A, timeout_s: 2, retries: 1}}}}\n"
            f"  - {{name: newline-b, gpus: 4, probe_size: 2, executor: vllm, vllm: {{url: '{server.url}', api_key_env: FS_KEY_B}}}}\n"
        )
        env = {**os.environ, "FS_KEY_A": KEY_A, "FS_KEY_B": KEY_B, "DAGSTER_HOME": str(home)}
        env.pop("FAULTSENSE_LEDGER", None)
        sweep = [str(Path(sys.executable).with_name("faultsense")), "sweep", "--fleet", str(fleet), "--ledger", str(ledger)]
        refused = subprocess.run([*sweep, "--hour", HOUR], capture_output=True, text=True, env=env, timeout=300)
        # newline-b's key is unusable: the whole sweep is refused before any run, naming the variable
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout + refused.stderr
        assert refused.stderr.count("\n") == 1 and "replicas[1].vllm.api_key_env" in refused.stderr
        assert "FS_KEY_B" in refused.stderr and "whitespace" in refused.stderr and "nothing was swept" in refused.stderr
        assert not ledger.exists() and not server.requests
        out = subprocess.run(
            [*sweep, "--replica", "echo-a", "--hour", HOUR], capture_output=True, text=True, env=env, timeout=300
        )
        echoed = [r.auth for r in server.requests if r.path != "/v1/models"]
    assert out.returncode == 1, out.stdout + out.stderr  # the replica fails: its probes are error rows
    assert echoed and all(a == f"Bearer {KEY_A}" for a in echoed)  # the server did get (and echo) the key
    files = [p for base in (home, ledger) for p in base.rglob("*") if p.is_file()]
    assert any(ledger in p.parents for p in files) and any(home in p.parents for p in files)
    for key in (KEY_A, KEY_B):
        for window in _windows(key):
            assert all(window not in text for text in (out.stdout, out.stderr, refused.stdout, refused.stderr)), window
            for path in files:
                assert window.encode() not in path.read_bytes(), (window, path)
                if path.suffix == ".parquet":
                    assert not [s for s in _strings(path) if window in s], (window, path)
    # the error rows say what went wrong, scrubbed
    errors = [s for p in files if p.suffix == ".parquet" for s in _strings(p) if "HTTP" in s or "logprob" in s or "circuit" in s]
    assert errors, "no error rows in the ledger"
