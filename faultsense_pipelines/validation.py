"""One-line messages for validation errors, shared by every edge that reads user input.

The fleet file (:mod:`faultsense_pipelines.fleet`), its executor sections and the scenario
file (:mod:`faultsense_pipelines.sim.scenario`) are validated by pydantic; :func:`first_error`
turns the first error into ``<field>: <problem>, got <value>``, e.g.
``replicas[1].simulated.faults[0].slowdown: must be a finite number >= 1 (a gray failure slows
down), got 0.5``. No message echoes a secret: a URL's password is redacted
(:func:`redact_url`) and the value of an ``api_key_env`` field is never shown.

>>> redact_url("https://user:secret@probe.example:8000")
'https://user:***@probe.example:8000'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

__all__ = [
    "MAX_MIN_SLOWDOWN",
    "MAX_PATH_CHARS",
    "MAX_REPEATS",
    "MAX_SEED",
    "MAX_STRING_CHARS",
    "MIN_ERROR_BUDGET",
    "SHOWN_VALUE_CHARS",
    "USERINFO",
    "check_path_text",
    "first_error",
    "first_long_string",
    "format_loc",
    "path_problem",
    "redact_url",
    "shown",
]

#: ``scheme://user:password@`` (or ``user@``) at the start of a URL: what :func:`redact_url` hides.
USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)([^/@\s]*)@")

#: pydantic error types whose message already says everything (our own validators' messages
#: name the value themselves; "missing" and "extra_forbidden" are about the key, not a value).
_MESSAGE_IS_ENOUGH = frozenset({"value_error", "missing", "extra_forbidden", "unexpected_keyword_argument"})
#: The most characters of a bad value an error line shows; a longer one is cut with ``…``.
SHOWN_VALUE_CHARS = 80
#: The longest path or URI accepted (``--ledger``, ``$FAULTSENSE_LEDGER``, a fleet's ``ledger:``);
#: Linux's PATH_MAX.
MAX_PATH_CHARS = 4096
#: The longest string any field of an input file takes (a URL, an address, a model name); a
#: longer one is refused before the file is validated field by field.
MAX_STRING_CHARS = 4096
#: The largest seed any input takes (a scenario's, a fleet's simulated section, ``--seed``):
#: 32-bit unsigned, what NumPy's and torch's generators take whole.
MAX_SEED = 2**32 - 1
#: Most measurements per probe any input asks for (a fleet's or a scenario's ``repeats``,
#: ``--repeats``).
MAX_REPEATS = 100
#: Largest ``min_slowdown`` any input accepts (a fleet's, a scenario's, ``--min-slowdown``).
MAX_MIN_SLOWDOWN = 100.0
#: Smallest error budget of the sequential drill-down any input accepts (a fleet's
#: ``phase2.alpha``, a scenario's ``alpha``, ``--error-budget``): the first claim is tested
#: at ``alpha / 2``, an e-value of 2 million or more, at least 21 rounds a sub-test at one
#: measurement a probe; a smaller budget leaves every claim inconclusive.
MIN_ERROR_BUDGET = 1e-6
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def shown(value: Any, limit: int = SHOWN_VALUE_CHARS) -> str:
    """``repr(value)`` as an error line shows it: at most ``limit`` characters, a longer one cut
    with ``…`` (a 200 KB value must not become a 200 KB error line); a URL's password redacted.

    >>> len(shown("A" * 200_000)), shown("A" * 200_000)[-3:]
    (80, 'AA…')
    >>> shown(8)
    '8'
    """
    if isinstance(value, str):
        lead = len(value) - len(value.lstrip())  # ' s3://key:pw@...' is a URL too
        text = repr((value[:lead] + redact_url(value[lead:]))[: limit + 1])  # redacted whole, then cut
    elif isinstance(value, list | tuple | dict | set) and len(value) > limit:
        text = f"a {type(value).__name__} of {len(value)} items"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def first_long_string(data: Any, limit: int = MAX_STRING_CHARS) -> tuple[str, int] | None:
    """The field path and length of the first string (value or key) in decoded JSON/YAML
    ``data`` longer than ``limit`` characters, or ``None``.

    >>> first_long_string({"replicas": [{"name": "a"}, {"url": "x" * 5000}]})
    ('replicas[1].url', 5000)
    """
    stack: list[tuple[tuple[Any, ...], Any]] = [((), data)]
    while stack:
        loc, value = stack.pop()
        if isinstance(value, str):
            if len(value) > limit:
                return format_loc(loc), len(value)
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                if isinstance(key, str) and len(key) > limit:
                    return f"{format_loc(loc)} key", len(key)
                stack.append(((*loc, key), item))
        elif isinstance(value, list):
            stack.extend(((*loc, i), item) for i, item in reversed(list(enumerate(value))))
    return None


def path_problem(value: str) -> str | None:
    """What makes ``value`` unusable as a path or URI, or ``None`` (see :func:`check_path_text`)."""
    if not value:
        return "must be a path or URI, got an empty value"
    if value != value.strip():
        return f"must be a path or URI without leading or trailing whitespace, got {shown(value)}"
    if m := _CONTROL.search(value):
        return (
            f"must be a path or URI without control characters, got {shown(value)} (character {m.start() + 1} is {m.group()!r})"
        )
    if len(value) > MAX_PATH_CHARS:
        return f"must be at most {MAX_PATH_CHARS} characters, got {len(value)}"
    return None


def check_path_text(value: str, field: str) -> str:
    """``value`` if it can be a path or URI, else ``ValueError`` naming ``field``.

    Refused: empty, leading or trailing whitespace (``--ledger ' /tmp/x'`` would write under
    ``./ /tmp/x``), control characters (NUL, newline, escape sequences), more than
    :data:`MAX_PATH_CHARS` characters. The message shows the value cut short
    (:func:`shown`), its URL password redacted.

    >>> check_path_text(" /tmp/x", "--ledger")
    Traceback (most recent call last):
        ...
    ValueError: --ledger: must be a path or URI without leading or trailing whitespace, got ' /tmp/x'
    """
    if problem := path_problem(value):
        raise ValueError(f"{field}: {problem}")
    return value


def redact_url(v: str) -> str:
    """``v`` with the password of a ``scheme://user:password@host`` URL replaced by ``***`` (a
    lone ``scheme://token@host`` user part too: it is often a token), so that no error
    message can echo a secret."""
    m = USERINFO.match(v)
    if not m:
        return v
    user, colon, _ = m.group(2).partition(":")
    return f"{m.group(1)}{user + ':***' if colon else '***'}@{v[m.end() :]}"


def format_loc(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a field path: ``replicas[1].simulated.faults[0].gpu``.

    Union tags (``<gpu fault>``, see :mod:`faultsense_pipelines.replica.faults`) are left out: they
    name the model chosen, not a key of the file.
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.startswith("<"):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _shown_input(value: Any, loc: tuple[Any, ...]) -> str:
    """The offending value as an error shows it: ``0``, ``True``, ``'magic'``, ``an empty value``;
    a URL's password redacted, the value of ``api_key_env`` or an action's ``headers_env`` never
    shown (it may be the key)."""
    if "api_key_env" in loc or "headers_env" in loc:
        return "a value that is not shown"
    if value is None:
        return "an empty value"
    return shown(value)


def _error_message(err: Mapping[str, Any]) -> str:
    """One pydantic error as ``<problem>, got <value>`` (pydantic's own messages omit the value)."""
    kind, msg = err["type"], str(err["msg"]).removeprefix("Value error, ")
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        msg = "Extra inputs are not permitted"
    if kind in _MESSAGE_IS_ENOUGH:
        return msg
    if kind == "finite_number":
        msg = "must be a finite number (NaN and infinity are not allowed)"
    value = err.get("input")
    boolean = " (a boolean)" if kind in ("int_type", "float_type") and isinstance(value, bool) else ""
    return f"{msg}, got {_shown_input(value, tuple(err['loc']))}{boolean}"


def first_error(exc: ValidationError) -> str:
    """The first error of ``exc`` as ``<field>: <problem>`` plus ``(and N more)``.

    A validator that knows a deeper location than pydantic's says so with a message
    ``"@<suffix>: <problem>"``; the suffix is appended to the location.
    """
    errors = exc.errors(include_url=False)
    err = errors[0]
    msg = _error_message(err)
    loc = format_loc(tuple(err["loc"]))
    if msg.startswith("@"):
        suffix, _, msg = msg[1:].partition(": ")
        loc = f"{loc}{suffix}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{loc}: {msg}{more}"
