"""One scrubber for every message that can leave the process, and the API-key loading rule.

Secrets (API keys) are *registered* when they are loaded (:func:`load_secret`); every text
that may leave the process -- exception messages, error rows of the ledger, log lines,
Dagster events and metadata, CLI output -- passes :func:`scrub`, which removes each
registered secret in any form it may have taken on the way:

* verbatim, and as Python ``repr`` / JSON / ``unicode_escape`` / URL escapes of it;
* with whitespace (or escaped ``\\n``, ``\\t``, ``\\r``) inserted between its characters, as a
  server echoing a header and a later ``" ".join(text.split())`` produce;
* *truncated*: a prefix of at least :data:`MIN_PREFIX` characters at the end of the text or
  right before a truncation mark (``...``, ``…``), as a server or proxy that cuts a long echo
  leaves it.

:func:`clip` shortens a message *after* scrubbing, so a cut never goes through a secret.

>>> register_secret("sk-test-0123456789")
>>> scrub("auth failed for 'Bearer sk-test-0123456789'")
"auth failed for 'Bearer ***'"
>>> scrub("echo: Bearer sk-test-0123\\n456789 and Bearer sk-test-01...")
'echo: Bearer *** and Bearer ***...'
>>> forget_secrets()
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import quote

__all__ = [
    "MAX_SECRET_CHARS",
    "MIN_PREFIX",
    "MIN_SECRET_CHARS",
    "REDACTED",
    "SecretError",
    "check_secret",
    "clip",
    "forget_secrets",
    "load_secret",
    "register_secret",
    "scrub",
]

#: What a removed secret is replaced by.
REDACTED = "***"
#: Secrets shorter than this are not scrubbed (they would match ordinary text).
MIN_SECRET_CHARS = 4
#: A key longer than this is refused at load.
MAX_SECRET_CHARS = 4096
#: The shortest truncated prefix of a secret that is still removed.
MIN_PREFIX = 4

_lock = threading.Lock()
_registry: set[str] = set()
_GAP = r"(?:\s|\\[nrt])*"  # whitespace, or an escaped newline / tab / return, between characters


class SecretError(ValueError):
    """A secret's environment variable is unset or holds an unusable value (never shown)."""


def check_secret(value: str, variable: str) -> str:
    """``value`` if it is usable as an API key, else :class:`SecretError` naming ``variable``.

    A key must be 1..:data:`MAX_SECRET_CHARS` printable ASCII characters without whitespace
    (a trailing newline from ``$(cat keyfile)`` is the usual mistake); the error says which
    position is bad but never shows the value.

    Raises:
        SecretError: empty, too long, or holding whitespace, a control or a non-ASCII character.
    """
    if not value:
        raise SecretError(f"environment variable {variable} (the API key) is not set or empty")
    if len(value) > MAX_SECRET_CHARS:
        raise SecretError(f"environment variable {variable} (the API key) is longer than {MAX_SECRET_CHARS} characters")
    for i, ch in enumerate(value):
        if not (" " < ch <= "~"):
            what = "whitespace" if ch.isspace() else "a control character" if not ch.isprintable() else "a non-ASCII character"
            raise SecretError(
                f"environment variable {variable} (the API key) holds {what} at character {i + 1} of {len(value)}; "
                "a key must be printable ASCII without spaces or newlines (check for a trailing newline)"
            )
    return value


def load_secret(variable: str) -> str:
    """Read the API key from environment variable ``variable``, check it and register it.

    Returns:
        The key (to send as a header; never to print).

    Raises:
        SecretError: naming the variable (never the value) when it is unset or unusable.
    """
    raw = os.environ.get(variable)
    if raw is not None:
        register_secret(raw)  # even a refused value must never be echoed
    return check_secret(raw or "", variable)


def register_secret(value: str) -> None:
    """Add ``value`` to the secrets :func:`scrub` removes (process-wide, thread-safe)."""
    if isinstance(value, str) and len(value.strip()) >= MIN_SECRET_CHARS:
        with _lock:
            _registry.add(value)


def forget_secrets() -> None:
    """Clear the registry (tests)."""
    with _lock:
        _registry.clear()


def _forms(secret: str) -> set[str]:
    core = "".join(secret.split())
    forms = {
        secret,
        secret.strip(),
        core,
        repr(secret)[1:-1],
        json.dumps(secret)[1:-1],
        secret.encode("unicode_escape").decode("ascii"),
        quote(secret, safe=""),
        quote(core, safe=""),
    }
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


def _spaced(text: str) -> str:
    return _GAP.join(re.escape(ch) for ch in text)


_GAP_RE = re.compile(_GAP)
_CUT_RE = re.compile(r"\s*(?:\.\.\.|…|\Z)")


@lru_cache(maxsize=256)
def _pattern(secret: str) -> re.Pattern[str]:
    forms = sorted(_forms(secret), key=len, reverse=True)
    return re.compile("|".join(_spaced(f) for f in forms))


@lru_cache(maxsize=256)
def _head(core: str) -> re.Pattern[str]:
    return re.compile(_spaced(core[:MIN_PREFIX]))


def _strip_prefixes(text: str, core: str) -> str:
    """Replace each prefix (>= MIN_PREFIX characters, gaps allowed) of ``core`` that ends at a cut."""
    if len(core) < MIN_PREFIX:
        return text
    out, pos = [], 0
    for m in _head(core).finditer(text):
        if m.start() < pos:
            continue
        i, j = m.end(), MIN_PREFIX
        while j < len(core):
            gap = _GAP_RE.match(text, i)
            k = gap.end() if gap else i
            if k < len(text) and text[k] == core[j]:
                i, j = k + 1, j + 1
            else:
                break
        if _CUT_RE.match(text, i):
            out.append(text[pos : m.start()])
            out.append(REDACTED)
            pos = i
    out.append(text[pos:])
    return "".join(out)


def scrub(text: object, extra: Iterable[str | None] = ()) -> str:
    """``text`` (made a string) with every registered secret and each of ``extra`` removed.

    Args:
        text: any message; ``None`` gives ``""``.
        extra: further secrets for this call only (e.g. a key read but not yet registered).

    Returns:
        The text with each secret, in every form described in the module docstring,
        replaced by :data:`REDACTED`.
    """
    out = "" if text is None else text if isinstance(text, str) else str(text)
    with _lock:
        secrets = set(_registry)
    secrets.update(s for s in extra if isinstance(s, str) and len(s.strip()) >= MIN_SECRET_CHARS)
    for secret in sorted(secrets, key=len, reverse=True):
        out = _strip_prefixes(_pattern(secret).sub(REDACTED, out), "".join(secret.split()))
    return out


def clip(text: object, limit: int = 300, extra: Iterable[str | None] = ()) -> str:
    """:func:`scrub`, then whitespace collapsed, then cut to at most ``limit`` characters.

    Scrubbing comes first, so a cut never goes through a secret; a cut text ends in ``...``.
    """
    out = " ".join(scrub(text, extra).split())
    if len(out) <= limit:
        return out
    cut = out[: max(0, limit - 3)]
    # never end inside a redaction mark (a dangling '*' reads like part of a value)
    cut = cut.rstrip("*") if cut.endswith("*") and not cut.endswith(REDACTED) else cut
    return cut + "..."
