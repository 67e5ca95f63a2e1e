"""Running one action decision: a command or a webhook, with a deadline, secrets kept out.

A **command** is started without a shell, in its own session (so its timeout can kill its
whole process group), with a minimal environment: ``PATH``, the ``FAULTSENSE_*`` verdict
variables (:func:`verdict_env`) and the variables the action names in ``env`` -- nothing else
of the sweep's environment, so no credential the sweep holds reaches it. The verdict is also
on its stdin as one JSON object (:func:`verdict_payload`). Its stdout is discarded; the last
characters of its stderr are kept, with every secret scrubbed.

A **webhook** is one ``POST`` of the same JSON with httpx; header values come from the
environment variables ``headers_env`` names (never stored, logged or shown) and are scrubbed
from anything kept. The whole request (connect, send, answer) has one deadline,
``timeout_s``: a server that trickles its answer is abandoned at the deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from ..fleet.actions import WebhookSpec
from ..ledger.rows import MAX_ACTION_TEXT
from ..redaction import clip, register_secret, scrub
from .decide import Verdict

__all__ = ["Outcome", "run_command", "run_webhook", "verdict_env", "verdict_payload"]

#: Where a command finds programs when the sweep's own ``PATH`` is unset.
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_KILL_GRACE_S = 5.0


@dataclass(frozen=True)
class Outcome:
    """How running one decision ended: ``decision`` (``acted``, ``failed`` or ``timed_out``),
    ``reason`` (one line), ``exit_code`` (the command's; None for a webhook, a command that
    could not start or was killed at its timeout) and ``stderr`` (its tail, or the start of a
    webhook's answer; secrets scrubbed; None when empty)."""

    decision: str
    reason: str
    exit_code: int | None = None
    stderr: str | None = None


def verdict_payload(action: str, verdict: Verdict, key: str) -> dict[str, Any]:
    """The JSON object a command reads on stdin and a webhook receives: ``action``, ``on``,
    ``action_key``, ``replica``, ``component``, ``kind``, ``status``, ``confidence`` (0..1),
    ``slowdown`` (x), ``hour``, ``sweep_id``, ``node``, ``gpu``, ``peer_gpu`` (null where unknown)."""
    return {
        "action": action,
        "on": verdict.trigger,
        "action_key": key,
        "replica": verdict.replica,
        "component": verdict.component,
        "kind": verdict.kind,
        "status": verdict.status,
        "confidence": verdict.confidence,
        "slowdown": verdict.slowdown,
        "hour": verdict.hour,
        "sweep_id": verdict.sweep_id,
        "node": verdict.node,
        "gpu": verdict.gpu,
        "peer_gpu": verdict.peer_gpu,
    }


def verdict_env(payload: Mapping[str, Any]) -> dict[str, str]:
    """The payload as ``FAULTSENSE_<KEY>`` variables (``FAULTSENSE_REPLICA``,
    ``FAULTSENSE_COMPONENT``, ``FAULTSENSE_NODE``, ...); a null value is left unset."""
    return {f"FAULTSENSE_{k.upper()}": str(v) for k, v in payload.items() if v is not None}


def _tail(data: bytes, secrets: Sequence[str]) -> str | None:
    text = scrub(data.decode("utf-8", "replace"), secrets)
    text = " ".join(text.split())
    if not text:
        return None
    return text if len(text) <= MAX_ACTION_TEXT else "..." + text[-(MAX_ACTION_TEXT - 3) :]


def run_command(
    argv: Sequence[str],
    payload: Mapping[str, Any],
    *,
    timeout_s: float,
    pass_env: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> Outcome:
    """Run ``argv`` once with the verdict on stdin and in its environment; wait at most ``timeout_s``.

    Args:
        argv: program and arguments (no shell).
        payload: :func:`verdict_payload`.
        timeout_s: seconds; then the command's whole process group is killed (SIGKILL).
        pass_env: names of variables of ``environ`` the command also gets.
        environ: the sweep's environment (default ``os.environ``); only ``PATH`` and
            ``pass_env`` are read from it.

    Returns:
        ``acted`` (exit 0), ``failed`` (another exit code, a signal, or a program that cannot
        be started: not found, not executable) or ``timed_out``. Never raises for the
        command's own failures.
    """
    environ = os.environ if environ is None else environ
    given = {name: environ[name] for name in pass_env if name in environ}
    env = {"PATH": environ.get("PATH") or DEFAULT_PATH, **given, **verdict_env(payload)}
    secrets = list(given.values())
    data = json.dumps(payload).encode()
    with tempfile.TemporaryFile() as err:  # stderr on disk: a chatty command costs no memory
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
            return Outcome("failed", clip(f"cannot start {argv[0]}: {why}", MAX_ACTION_TEXT, secrets))
        try:
            proc.communicate(data, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=_KILL_GRACE_S)
            reason = f"timed out after {timeout_s:g} s; its process group was killed"
            return Outcome("timed_out", reason, None, _tail(_last_bytes(err), secrets))
        except BaseException:  # an interrupt of the sweep: the command goes with it
            _kill_group(proc)
            proc.wait()
            raise
        tail = _tail(_last_bytes(err), secrets)
    code = proc.returncode
    if code == 0:
        return Outcome("acted", "exit code 0", 0, tail)
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return Outcome("failed", f"killed by signal {name}", code, tail)
    return Outcome("failed", f"exit code {code}", code, tail)


def _last_bytes(f: IO[bytes], n: int = 8192) -> bytes:
    """The last ``n`` bytes written to ``f``."""
    f.seek(0, os.SEEK_END)
    f.seek(max(0, f.tell() - n))
    return f.read()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group the command leads (its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _header_value(variable: str) -> tuple[str, str]:
    """The value of a webhook header from environment variable ``variable``, registered as a
    secret (whole, and each word of it of 8 or more characters: the token of ``Bearer <token>``),
    and ``""``; or ``("", problem)`` (the value never shown)."""
    value = os.environ.get(variable)
    if value is None or not value.strip():
        return "", "is not set or empty"
    register_secret(value)
    for word in value.split():
        if len(word) >= 8:
            register_secret(word)
    if len(value) > 8192 or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "", "holds a control character (a trailing newline?) or is longer than 8192 characters"
    if not value.isascii():
        return "", "holds a non-ASCII character"
    return value, ""


def run_webhook(spec: WebhookSpec, payload: Mapping[str, Any], *, timeout_s: float) -> Outcome:
    """POST ``payload`` as JSON to the webhook; the whole exchange within ``timeout_s``.

    Header values come from the environment variables ``spec.headers_env`` names; each value
    (and each word of it of 8 or more characters) is registered as a secret
    (:func:`~faultsense_pipelines.redaction.register_secret`), so no message shows it.

    Returns:
        ``acted`` (HTTP 2xx), ``failed`` (another status, a connection error, a header
        variable unset or unusable: nothing is sent) or ``timed_out``; the reason never holds the URL's path or query or
        a header value. Never raises for the server's failures.
    """
    import httpx

    headers: dict[str, str] = {}
    for header, variable in spec.headers_env.items():
        value, problem = _header_value(variable)
        if problem:
            # the variable's name is not echoed: a value pasted where its name belongs (a token
            # that happens to look like a name) would otherwise reach the ledger and the logs
            return Outcome(
                "failed", f"webhook header {header}: the environment variable headers_env names {problem}; nothing sent"
            )
        headers[header] = value
    secrets = list(headers.values())
    host = "/".join(spec.url.split("/", 3)[:3])
    result: list[Outcome] = []

    def post() -> None:
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=False) as client,
                client.stream("POST", spec.url, json=dict(payload), headers=headers) as response,
            ):
                body = b""
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > 4096:
                        break
            status = response.status_code
            tail = _tail(body, secrets)
            if 200 <= status < 300:
                result.append(Outcome("acted", f"HTTP {status} from {host}", None, tail))
            else:
                result.append(Outcome("failed", f"HTTP {status} from {host}", None, tail))
        except httpx.TimeoutException:
            result.append(Outcome("timed_out", f"no answer from {host} within {timeout_s:g} s"))
        except httpx.HTTPError as exc:
            why = clip(f"{type(exc).__name__}: {exc}", 160, secrets).replace(spec.url, host)
            result.append(Outcome("failed", f"webhook {host} failed: {why}"))

    worker = threading.Thread(target=post, name="faultsense-webhook", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive() or not result:
        return Outcome("timed_out", f"no complete answer from {host} within {timeout_s:g} s; abandoned")
    return result[0]
