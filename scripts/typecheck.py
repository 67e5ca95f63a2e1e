"""Type-check the one installed namespace with mypy, as it is installed.

``assets/``, ``resources/`` and ``probe/`` live at the repository root but install as
``faultsense_pipelines.assets``, ``.resources`` and ``.probe`` (``[tool.setuptools.package-dir]``).
mypy does not follow setuptools' editable-install finder, so this builds the installed layout
from symbolic links in ``.mypy_layout/`` (git-ignored; fixed, so mypy's cache stays valid) and
checks that, with ``pyproject.toml``'s settings
(strict on the core algorithm packages, basic elsewhere). Exit status is mypy's.

Usage: ``python scripts/typecheck.py [extra mypy arguments]``
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _layout(package_dir: dict[str, str]) -> Path:
    """The installed layout of the namespace as symbolic links into the repository."""
    layout = ROOT / ".mypy_layout"
    shutil.rmtree(layout, ignore_errors=True)
    top = layout / "faultsense_pipelines"
    top.mkdir(parents=True)
    for entry in (ROOT / package_dir["faultsense_pipelines"]).iterdir():
        if entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry)
    for name, folder in package_dir.items():
        if name != "faultsense_pipelines":
            (layout / name.replace(".", "/")).symlink_to(ROOT / folder, target_is_directory=True)
    return layout


def main(argv: list[str]) -> int:
    """Run mypy over the installed layout; paths in its report are the repository's."""
    package_dir: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    (ROOT / ".mypy_cache").mkdir(exist_ok=True)
    lock = (ROOT / ".mypy_cache" / "layout.lock").open("w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one run at a time: each rebuilds .mypy_layout/
    layout = _layout(package_dir)
    config = str(ROOT / "pyproject.toml")
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        config,
        "--cache-dir",
        str(ROOT / ".mypy_cache"),
        "-p",
        "faultsense_pipelines",
    ]
    done = subprocess.run(
        [*command, *argv], cwd=layout, env={**os.environ, "MYPYPATH": str(layout)}, check=False, capture_output=True, text=True
    )
    for stream, text in ((sys.stdout, done.stdout), (sys.stderr, done.stderr)):
        for name, folder in package_dir.items():
            if name != "faultsense_pipelines":
                text = text.replace(name.replace(".", "/") + "/", folder + "/")
        stream.write(text)
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
