"""Headless Chromium driven over the Chrome DevTools Protocol, for the slow UI tests
(tests/assets/test_ui.py, tests/assets/test_ui_restart.py)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import httpx


class DevTools:
    """Headless Chromium driven over the Chrome DevTools Protocol (``websockets``' sync client):
    open a page, lay it out at a width, evaluate JavaScript in it, screenshot. For what
    ``--dump-dom`` cannot do: wait for an image to load, measure where the layout put it.

    Args:
        chromium: the browser executable; profile: a fresh user-data directory; flags: its
            command-line flags (no ``--virtual-time-budget``: the page stays open).
    """

    def __init__(self, chromium: str, profile: Path, flags: Sequence[str]) -> None:
        self._argv = [
            chromium,
            *flags,
            "--remote-debugging-port=0",
            "--remote-allow-origins=*",
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        self._next = 0

    def __enter__(self) -> DevTools:
        from websockets.sync.client import connect

        self._proc = subprocess.Popen(self._argv, stderr=subprocess.PIPE, text=True, start_new_session=True)
        assert self._proc.stderr is not None
        for line in self._proc.stderr:  # "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/..."
            if "DevTools listening on" in line:
                port = int(line.rsplit(":", 1)[1].split("/", 1)[0])
                break
        else:
            raise AssertionError("chromium printed no DevTools address")
        pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json() if t["type"] == "page"]
        self._stack = contextlib.ExitStack()
        self._ws = self._stack.enter_context(connect(pages[0]["webSocketDebuggerUrl"], max_size=64 << 20, open_timeout=30))
        return self

    def _send(self, method: str, **params):
        self._next += 1
        self._ws.send(json.dumps({"id": self._next, "method": method, "params": params}))
        while True:
            reply = json.loads(self._ws.recv(timeout=120))
            if reply.get("id") == self._next:
                assert "error" not in reply, reply
                return reply["result"]

    def open(self, url: str) -> None:
        self._send("Page.navigate", url=url)

    def eval(self, expression: str):
        return self._send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float = 120):
        """The value of ``expression`` once truthy (polled every half second), else the last one."""
        deadline, value = time.monotonic() + timeout_s, None
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.5)
        return value

    def resize(self, width: int, height: int) -> None:
        """Lay pages out ``width`` x ``height`` CSS px (one device pixel each), as a window of that size."""
        self._send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self._send("Page.captureScreenshot", format="png")["data"]))

    def __exit__(self, *exc) -> None:
        with contextlib.suppress(Exception):
            self._stack.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait(timeout=30)
