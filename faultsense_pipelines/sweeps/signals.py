"""Stopping a sweep: Ctrl-C (``SIGINT``) and ``SIGTERM`` end it between or during replicas'
runs, never in the middle of a ledger commit (:func:`~faultsense_pipelines.assets.commit.interrupts_deferred`)."""

from __future__ import annotations

import signal
import socket
import threading

__all__ = ["SigintWatch", "SweepInterrupted", "TermInterrupts", "interrupted"]


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (``SIGINT``); ``replica`` is the one whose run it stopped
    (its ledger partition is whole: its last completed sweep, or this run's if the interrupt
    came while the run was committing it), or empty between runs."""

    def __init__(self, replica: str = "") -> None:
        super().__init__(replica)
        self.replica = replica


class SigintWatch:
    """Notices every ``SIGINT`` the process receives while it is active, whichever Python
    handler (ours, Dagster's) took it -- through the signal wakeup fd, which Python's C-level
    handler writes the signal number to before any Python handler runs. A Ctrl-C that Dagster
    turns into a plain run failure (e.g. one landing while an executor's workers shut down
    after the run's last step) is still an interrupt of the sweep. Main thread only (where
    ``signal.set_wakeup_fd`` is allowed); elsewhere it notices nothing.
    """

    def __enter__(self) -> SigintWatch:
        self._sock = None
        if threading.current_thread() is threading.main_thread():
            self._sock, write = socket.socketpair()
            for end in (self._sock, write):
                end.setblocking(False)
            self._write = write
            self._previous = signal.set_wakeup_fd(write.fileno(), warn_on_full_buffer=False)
        return self

    def fired(self) -> bool:
        """Whether a ``SIGINT`` arrived since the last call."""
        got = b""
        while self._sock is not None:
            try:
                chunk = self._sock.recv(4096)
            except BlockingIOError:
                break
            if not chunk:
                break
            got += chunk
        return signal.SIGINT in got or signal.SIGTERM in got

    def __exit__(self, *exc) -> None:
        if self._sock is not None:
            signal.set_wakeup_fd(self._previous)
            self._sock.close()
            self._write.close()


class TermInterrupts:
    """While a sweep runs, ``SIGTERM`` stops it as Ctrl-C does (``KeyboardInterrupt``: exit 130,
    no further replica swept), whatever the process inherited.

    Every Dagster run sets ``SIGTERM``'s handler to ``SIGINT``'s when it starts and ends
    (``dagster._utils.interrupts.setup_interrupt_handlers``, meant for Kubernetes). A process
    started in the background from a script inherits ``SIGINT`` ignored, so after its first run
    ``SIGTERM`` was ignored too, and a ``kill`` between two replicas let the sweep run on and
    exit 0. :meth:`arm` (on entry and right after each run) sets ``SIGTERM`` back to raising
    ``KeyboardInterrupt``; during a run Dagster's own handler captures it as an interrupt. (A
    ``SIGTERM`` in the instant between Dagster's restore at a run's end and :meth:`arm` is still
    lost when ``SIGINT`` is ignored.) The handler the process had is restored on exit. Main
    thread only; elsewhere nothing changes.
    """

    def __enter__(self) -> TermInterrupts:
        self._main = threading.current_thread() is threading.main_thread()
        self._previous = signal.getsignal(signal.SIGTERM) if self._main else None
        self.arm()
        return self

    def arm(self) -> None:
        """Make ``SIGTERM`` raise ``KeyboardInterrupt`` (main thread only)."""
        if self._main:
            signal.signal(signal.SIGTERM, signal.default_int_handler)

    def __exit__(self, *exc) -> None:
        if self._main and self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)


def interrupted(result) -> bool:
    """Whether a Dagster run was stopped by an interrupt (Ctrl-C) rather than failing."""
    from faultsense_pipelines.resources.dagster_internals import ErrorSource

    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data.error_source == ErrorSource.INTERRUPT:
            return True
        if event.event_type_value in ("RUN_CANCELED", "PIPELINE_CANCELED"):
            return True
    return False
