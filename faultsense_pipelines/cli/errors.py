"""One way for every sub-command to fail on bad input: one line naming the bad value."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

from ..cover.bounds import MAX_PLAN_PROBES, cover_too_large  # re-exported: the CLI's limit
from ..redaction import clip
from ..replica.vocabulary import DrilldownMethod
from ..validation import MAX_REPEATS, MAX_SEED, shown

_stderr = Console(stderr=True, highlight=False, soft_wrap=True)

__all__ = [
    "MAX_ERROR_CHARS",
    "MAX_ERROR_WORD_CHARS",
    "MAX_PLAN_PROBES",
    "MAX_SEED",
    "check_cover_args",
    "check_drilldown_option",
    "check_int_option",
    "check_number_option",
    "check_repeats_option",
    "cover_too_large",
    "error_line",
    "fail",
    "writing_to",
]

#: The longest error line printed (characters, ``error: `` included). Values are cut to 80
#: characters where the message is made (:func:`~faultsense_pipelines.validation.shown`);
#: this bound catches any message that still quotes a long value.
MAX_ERROR_CHARS = 600
#: The longest run of non-blank characters kept in an error line (a long path still fits).
MAX_ERROR_WORD_CHARS = 240
_LONG_WORD = re.compile(rf"\S{{{MAX_ERROR_WORD_CHARS + 1},}}")


def error_line(message: object) -> str:
    """``error: <message>`` as :func:`fail` prints it: registered secrets removed
    (:func:`~faultsense_pipelines.redaction.clip`), whitespace and newlines collapsed, each
    run of more than :data:`MAX_ERROR_WORD_CHARS` non-blank characters and the whole line cut
    with ``…`` to at most :data:`MAX_ERROR_CHARS` characters.

    >>> error_line("seed: got " + "9" * 5000)[:24], len(error_line("x" * 10**6)) <= MAX_ERROR_CHARS
    ('error: seed: got 999999', True)
    """
    text = clip(message, limit=10 * MAX_ERROR_CHARS)  # scrubbed before any cut
    text = _LONG_WORD.sub(lambda m: m.group()[: MAX_ERROR_WORD_CHARS - 1] + "…", text)
    line = f"error: {text}"
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 1] + "…"


def fail(message: str, code: int = 2) -> NoReturn:
    """Print :func:`error_line` of ``message`` on stderr and exit with ``code`` (default 2)."""
    _stderr.print(error_line(message), markup=False)
    raise typer.Exit(code)


_FLAGS = {"gpus": "--gpus", "probe_size": "--probe-size", "method": "--method"}


def check_cover_args(n: int, k: int, method: str = "best") -> None:
    """Fail (one line, exit 2) unless ``plan_cover(n, k, method)`` accepts the sizes; the line
    starts with the offending flag, e.g. ``error: --probe-size: probe_size must be <= gpus, ...``.
    """
    from ..cover import validate_cover_args

    try:
        validate_cover_args(n, k, method)
    except ValueError as exc:
        name = str(exc).split(" ", 1)[0]
        fail(f"{_FLAGS.get(name, name)}: {exc}")
    if problem := cover_too_large(n, k):
        fail(f"--gpus/--probe-size: {problem}")


def check_drilldown_option(word: str, recheck: bool) -> DrilldownMethod:
    """The ``--drilldown`` method, or fail (one line, exit 2) on an unknown word or on
    ``--no-recheck`` with a drill-down other than ``adaptive`` (the only one that re-checks)."""
    try:
        method = DrilldownMethod.parse(word, "--drilldown")
    except ValueError as exc:
        fail(str(exc))
    if not recheck and method != DrilldownMethod.ADAPTIVE:
        fail(f"--no-recheck is an option of --drilldown adaptive, got --drilldown {method}")
    return method


def check_int_option(value: int | None, flag: str, low: int, high: int) -> None:
    """Fail (one line, exit 2) unless ``value`` is None or in ``low..high``: ``--seed must be an
    integer in 0..4294967295, got -5``. Seeds are bounded by :data:`MAX_SEED` (32 bits)."""
    if value is not None and not low <= value <= high:
        fail(f"{flag} must be an integer in {low}..{high}, got {shown(value)}")


def check_repeats_option(text: str | None) -> int | None:
    """``--repeats`` given as text: an integer in 1..:data:`~faultsense_pipelines.validation.MAX_REPEATS`,
    or None when not given. Anything else (``abc``, ``2.5``, ``0``) is one line naming the flag and
    the value, exit 2; the same line for every command that takes the flag."""
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_REPEATS:
        fail(f"--repeats must be an integer in 1..{MAX_REPEATS}, got {shown(text)}")
    return value


def check_number_option(value: float | None, flag: str, low: float, high: float, *, low_open: bool = False) -> None:
    """Fail (one line, exit 2) unless ``value`` is None or a finite number in ``[low, high]``
    (``(low, high]`` with ``low_open``): ``inf`` and ``nan`` are refused by name."""
    if value is None:
        return
    inside = math.isfinite(value) and (low < value if low_open else low <= value) and value <= high
    if not inside:
        bounds = f"{'(' if low_open else '['}{low:g}, {high:g}]"
        fail(f"{flag} must be a finite number in {bounds}, got {shown(value)}")


@contextmanager
def writing_to(flag: str, path: Path) -> Iterator[None]:
    """Turn an ``OSError`` while writing ``path`` into one line naming the option, exit 2:
    ``--out /proc/x: cannot write (No such file or directory)``."""
    try:
        yield
    except OSError as exc:
        fail(f"{flag} {shown(str(path))}: cannot write ({exc.strerror or type(exc).__name__})")
