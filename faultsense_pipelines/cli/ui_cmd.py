"""``faultsense ui``: the Dagster UI (``dagster dev``) on the persistent instance of :mod:`faultsense_pipelines.sweeps.home`.

It sets ``DAGSTER_HOME`` (creating the folder and its ``dagster.yaml`` on first use), restores
the default ``SIGINT`` and ``SIGTERM`` handlers -- a process started with ``&`` from a
non-interactive shell inherits them *ignored*, and ``dagster dev`` then cannot be stopped and
leaves its webserver and daemon behind -- and replaces itself with ``dagster dev`` loading
``faultsense_pipelines.definitions``. ``kill -TERM <pid>`` (or Ctrl-C) then stops the UI, its
daemon and its code server; the run history stays in the instance.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import typer

from .errors import fail
from .options import FleetOption, HostOption, LedgerOption, PortOption

__all__ = ["SUPERSEDED_WARNING", "dagster_dev_argv", "dev_environment", "register"]


#: ``dagster dev`` warns on every start that it is superseded by ``dg dev`` (the
#: ``dagster-dg-cli`` package, which wants a ``dg`` project layout this project does not use);
#: ``dagster dev`` is what this Dagster release runs, so the one warning is filtered, by its text.
SUPERSEDED_WARNING = "ignore:Function `dev_command` is superseded"


def dagster_dev_argv(host: str, port: int, *, tty: bool = True) -> list[str]:
    """The ``dagster dev`` command line that ``faultsense ui`` runs (the ``dagster`` script beside
    this Python): coloured logs on a terminal, JSON lines (no ANSI colour codes) when the output
    goes to a file or a pipe."""
    dagster = str(Path(sys.executable).with_name("dagster"))
    log_format = "colored" if tty else "json"
    argv = [dagster, "dev", "-m", "faultsense_pipelines.definitions", "--host", host, "--port", str(port)]
    return [*argv, "--log-format", log_format]


def dev_environment(env: dict[str, str]) -> dict[str, str]:
    """``env`` with :data:`SUPERSEDED_WARNING` added to ``PYTHONWARNINGS`` (kept, not replaced)."""
    warnings = env.get("PYTHONWARNINGS", "")
    return {**env, "PYTHONWARNINGS": f"{warnings},{SUPERSEDED_WARNING}" if warnings else SUPERSEDED_WARNING}


def register(app: typer.Typer) -> None:
    """Add ``faultsense ui`` to ``app``."""

    @app.command("ui")
    def ui(
        port: PortOption = 3000,
        host: HostOption = "127.0.0.1",
        fleet: FleetOption = None,
        ledger: LedgerOption = None,
    ) -> None:
        """Start the Dagster UI on the persistent instance (.faultsense/dagster or $DAGSTER_HOME); SIGTERM stops it."""
        from faultsense_pipelines.sweeps.home import ensure_home, open_instance

        try:
            home = ensure_home()
            open_instance(home).dispose()  # storage tables created under the lock, not raced by a sweep
        except ValueError as exc:
            fail(str(exc))
        env = {**os.environ, "DAGSTER_HOME": str(home)}
        if fleet is not None:
            if not fleet.is_file():
                fail(f"--fleet: no such file {str(fleet)[:200]!r}")
            env["FAULTSENSE_FLEET"] = str(fleet.resolve())
        if ledger is not None:
            if not ledger.strip() or ledger != ledger.strip():
                fail(f"--ledger must be a path or URI without surrounding whitespace, got {ledger[:80]!r}")
            env["FAULTSENSE_LEDGER"] = ledger
        argv = dagster_dev_argv(host, port, tty=sys.stdout.isatty())
        env = dev_environment(env)
        if not Path(argv[0]).exists():
            fail(f"dagster is not installed beside {sys.executable} (pip install dagster-webserver)")
        typer.echo(f"Dagster UI at http://{host}:{port} (DAGSTER_HOME={home}); Ctrl-C or SIGTERM stops it", err=True)
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.execve(argv[0], argv, env)
