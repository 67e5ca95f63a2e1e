"""Which code a benchmark run measured: the commit its results file names."""

from __future__ import annotations

import subprocess


def code_commit(*paths: str) -> str:
    """The short hash of HEAD at the call (a commit landing later is not in this process), with
    ``+uncommitted`` when ``faultsense_pipelines`` or any of ``paths`` differs from it; ``?``
    when git cannot say."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "faultsense_pipelines", *paths], capture_output=True, text=True, check=False
    ).stdout
    return (commit or "?") + ("+uncommitted" if dirty.strip() else "")
