"""``faultsense metrics``: bad input is one line and exit 2; the server answers /metrics and stops on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from tests.pipeline_helpers import write_fleet

EXE = str(Path(sys.executable).with_name("faultsense"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_once_prints_one_scrape_of_an_empty_ledger(tmp_path: Path) -> None:
    fleet, _ = write_fleet(tmp_path)
    result = CliRunner().invoke(app, ["metrics", "--fleet", str(fleet), "--once"])
    assert result.exit_code == 0, result.output
    assert "faultsense_exporter_ledger_version -1.0" in result.stdout
    assert 'faultsense_replica_sweep_interval_seconds{replica="sim-faulty"} 3600.0' in result.stdout
    # a ledger that is not there (a mistyped path, or no sweep yet) is served empty, and said
    assert result.stderr.startswith("warning: no ledger at ") and "serving an empty state" in result.stderr


@pytest.mark.integration  # a real CLI process
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--port", "0"], "--port"),
        (["--port", "70000"], "--port"),
        (["--window-days", "0"], "--window-days"),
        (["--persistence-sweeps", "abc"], "--persistence-sweeps"),
    ],
)
def test_a_bad_option_is_one_line_naming_it_and_exit_2(tmp_path: Path, args: list[str], expected: str) -> None:
    fleet, _ = write_fleet(tmp_path)
    result = subprocess.run([EXE, "metrics", "--fleet", str(fleet), *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and expected in lines[0], result.stderr


@pytest.mark.integration  # a real CLI process
def test_a_malformed_fleet_or_a_ledger_that_is_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("replicas:\n  - name: x\n    gpus: 1\n")
    result = subprocess.run([EXE, "metrics", "--fleet", str(bad), "--once"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and "bad.yaml" in result.stderr
    fleet, _ = write_fleet(tmp_path)
    afile = tmp_path / "ledger-file"
    afile.write_text("x")
    result = subprocess.run(
        [EXE, "metrics", "--fleet", str(fleet), "--ledger", str(afile), "--once"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and "is a file" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.integration  # a real server process on a loopback port
def test_a_port_in_use_is_one_clear_line_and_exit_2(tmp_path: Path) -> None:
    fleet, _ = write_fleet(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [EXE, "metrics", "--fleet", str(fleet), "--port", str(port)], capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: --port {port}: address 127.0.0.1:{port} is already in use"


@pytest.mark.integration  # a real server process on a loopback port
def test_the_server_answers_metrics_and_stops_on_sigterm(tmp_path: Path) -> None:
    fleet, _ = write_fleet(tmp_path)
    port = free_port()
    proc = subprocess.Popen(
        [EXE, "metrics", "--fleet", str(fleet), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline, body = time.monotonic() + 60, ""
        while time.monotonic() < deadline and proc.poll() is None and not body:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
                body = response.text if response.status_code == 200 else ""
            except httpx.HTTPError:
                time.sleep(0.3)
        assert "faultsense_exporter_ledger_version -1.0" in body
        assert "process_resident_memory_bytes" in body
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
