"""``faultsense metrics``: a Prometheus exporter of the fleet's current state, read from the ledger.

Serves ``/metrics`` (:mod:`faultsense_pipelines.metrics.exporter`) until SIGTERM or Ctrl-C;
``--once`` prints one scrape's text on stdout and exits (a look at what Prometheus would get).
Bad input -- a malformed fleet file, a ledger path that is a file, a port in use -- is one line
naming the option, exit 2.
"""

from __future__ import annotations

import errno
import logging
import signal
import sys
import threading
from pathlib import Path

import typer

from ..validation import shown
from .errors import fail
from .options import FleetOption, HostOption, LedgerOption, PortOption

__all__ = ["register"]


def _fleet_and_store(fleet: Path | None, ledger: str | None):
    """The fleet file (for topology and schedule), the ledger store and whether the ledger is
    not there yet, or one line and exit 2."""
    from faultsense_pipelines.fleet import FleetError, load_fleet
    from faultsense_pipelines.ledger import LedgerStore

    from .ledger_cmd import default_ledger_uri

    try:
        loaded = load_fleet(fleet)
        store = LedgerStore(default_ledger_uri(ledger, fleet))
        kind = store.root_kind()
    except (FleetError, ValueError) as exc:
        fail(str(exc))
    if kind == "file":
        fail(f"ledger {shown(store.display_uri)}: is a file, not a ledger directory")
    return loaded, store, kind == "missing"


def _warn_missing(store) -> None:
    """A ledger not there yet is served (an exporter may start before the first sweep), but said,
    once the exporter is up (a bad option is still the only line it prints)."""
    typer.echo(f"warning: no ledger at {shown(store.display_uri)} yet: serving an empty state until a sweep writes one", err=True)


def register(app: typer.Typer) -> None:
    """Add ``faultsense metrics`` to ``app``."""
    from faultsense_pipelines.metrics.exporter import DEFAULT_PERSISTENCE_SWEEPS, DEFAULT_WINDOW_DAYS

    @app.command("metrics")
    def metrics(
        fleet: FleetOption = None,
        ledger: LedgerOption = None,
        port: PortOption = 9464,
        host: HostOption = "127.0.0.1",
        window_days: int = typer.Option(
            DEFAULT_WINDOW_DAYS, "--window-days", min=1, max=90, help="Days of ledger partitions read (by swept hour)."
        ),
        persistence_sweeps: int = typer.Option(
            DEFAULT_PERSISTENCE_SWEEPS,
            "--persistence-sweeps",
            min=1,
            max=168,
            help="N of 'confirmed in M of the last N sweeps' (faultsense_component_confirmed_sweeps).",
        ),
        once: bool = typer.Option(False, "--once", help="Print one scrape on stdout and exit."),
    ) -> None:
        """Serve the fleet's state from the ledger as Prometheus metrics; SIGTERM stops it."""
        from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest, start_http_server

        from faultsense_pipelines.metrics.exporter import SWEEP_INTERVAL_S, FleetCollector

        loaded, store, missing = _fleet_and_store(fleet, ledger)
        topology = {replica.name: replica.replica_topology for replica in loaded.replicas}
        collector = FleetCollector(
            store,
            topology=topology,
            intervals={r.name: SWEEP_INTERVAL_S for r in loaded.replicas},
            window_days=window_days,
            persistence_sweeps=persistence_sweeps,
        )
        registry = CollectorRegistry(auto_describe=False)
        registry.register(collector)
        logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
        if once:
            if missing:
                _warn_missing(store)
            try:
                sys.stdout.write(generate_latest(registry).decode())
            finally:
                collector.close()
            if collector.scrape_errors:
                raise typer.Exit(1)
            return
        ProcessCollector(registry=registry)
        try:
            server, thread = start_http_server(port, addr=host, registry=registry)
        except OSError as exc:
            collector.close()
            if exc.errno == errno.EADDRINUSE:
                fail(f"--port {port}: address {host}:{port} is already in use")
            fail(f"--host {shown(host)} --port {port}: cannot listen ({exc.strerror or type(exc).__name__})")
        if missing:
            _warn_missing(store)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        typer.echo(
            f"faultsense metrics on http://{host}:{port}/metrics (ledger {store.display_uri}); Ctrl-C or SIGTERM stops it",
            err=True,
        )
        try:
            while not stop.wait(0.5):
                pass
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
            collector.close()
