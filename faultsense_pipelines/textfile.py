"""Reading the small text inputs users hand us (fleet YAML, scenario JSON) with one-line errors.

:func:`read_text` bounds what is read; :func:`load_json` and :func:`load_yaml` are the strict
decoders every input file goes through:

* a key given twice in one object / mapping is refused (``json`` and ``yaml.safe_load``
  silently keep the last one);
* YAML aliases (``*name``, also ``<<: *name`` merges) are refused: no input file needs them,
  and an alias bomb (a few hundred bytes that expand to billions of nodes) costs seconds and
  hundreds of MB before anything could reject it;
* an integer literal of more than :data:`MAX_INT_DIGITS` digits is not converted (Python
  refuses 4301 digits with a traceback, and no field takes more than 20); it decodes to an
  :class:`OversizedInteger` that every integer field then refuses, naming the field.

>>> load_json('{"gpus": 8, "gpus": 16}')
Traceback (most recent call last):
    ...
faultsense_pipelines.textfile.TextFileError: duplicate key 'gpus' (a key may appear once per object)
>>> load_yaml("a: &x 1\\nb: *x\\n")
Traceback (most recent call last):
    ...
faultsense_pipelines.textfile.TextFileError: YAML aliases (*name) are not allowed in an input file (the anchor at line 1 is used again)
>>> load_json('{"seed": ' + "9" * 5000 + "}")
{'seed': a 5000-digit integer}
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "MAX_INT_DIGITS",
    "MAX_TEXT_BYTES",
    "OversizedInteger",
    "TextFileError",
    "load_json",
    "load_yaml",
    "read_text",
]

#: The largest input file read (bytes): fleet and scenario files are a few KiB; a bigger one is
#: a wrong path (a log, a device), refused before it is read into memory.
MAX_TEXT_BYTES = 16 * 1024 * 1024
#: The longest integer literal decoded (digits, sign and YAML's ``0x``/``_`` included): 2^64 has
#: 20 digits, and no field of any input takes a larger integer.
MAX_INT_DIGITS = 24


class TextFileError(ValueError):
    """An input file that cannot be read or decoded; the message says why, without the path."""


class OversizedInteger:
    """An integer literal longer than :data:`MAX_INT_DIGITS` characters, left unconverted.

    It is not an ``int``, so every integer field refuses it; its ``repr`` (what an error
    shows) is ``a 5000-digit integer``, never the digits.
    """

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"a {self.digits}-digit integer"


def read_text(path: str | Path, max_bytes: int | None = None) -> str:
    """The UTF-8 text of ``path``.

    Raises:
        TextFileError: the file cannot be opened (``cannot read (No such file or directory)``),
            is not a regular file (a directory, /dev/zero, a FIFO), is larger than ``max_bytes``
            (default :data:`MAX_TEXT_BYTES`), or is not UTF-8 (``not a UTF-8 text file (byte 0xff at offset 1)``).

    >>> read_text("/dev/zero")
    Traceback (most recent call last):
        ...
    faultsense_pipelines.textfile.TextFileError: not a regular file
    """
    p = Path(path)
    limit = MAX_TEXT_BYTES if max_bytes is None else max_bytes
    try:
        if p.exists() and not p.is_file():
            raise TextFileError("not a regular file")
        with p.open("rb") as f:
            raw = f.read(limit + 1)
    except OSError as exc:
        raise TextFileError(f"cannot read ({exc.strerror or exc})") from None
    except TextFileError:
        raise
    except ValueError as exc:  # a path with a NUL byte
        raise TextFileError(f"cannot read ({exc})") from None
    if len(raw) > limit:
        raise TextFileError(f"larger than {limit:,} bytes: not an input file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TextFileError(f"not a UTF-8 text file (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})") from None


def _shown_key(key: object) -> str:
    text = repr(key)
    return text if len(text) <= 80 else text[:79] + "…"


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise TextFileError(f"duplicate key {_shown_key(key)} (a key may appear once per object)")
        out[key] = value
    return out


def _json_int(text: str) -> int | OversizedInteger:
    return int(text) if len(text) <= MAX_INT_DIGITS else OversizedInteger(len(text.lstrip("-")))


def load_json(text: str) -> Any:
    """Decode JSON strictly (duplicate keys refused, huge integers not converted).

    Raises:
        TextFileError: ``malformed JSON at line 3 column 5: Expecting ',' delimiter``,
            ``malformed JSON: nested too deeply``, or ``duplicate key 'gpus' ...``.
    """
    try:
        return json.loads(text, object_pairs_hook=_json_object, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise TextFileError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise TextFileError("malformed JSON: nested too deeply") from None


#: What PyYAML's constructors raise besides ``YAMLError`` on values they cannot convert.
_VALUE_ERRORS = (ValueError, TypeError, IndexError, KeyError, AttributeError, OverflowError)


def _unreadable(node: yaml.Node | None, exc: BaseException) -> str:
    what = f"the value {_shown_key(node.value)} " if node is not None and isinstance(node.value, str) else "a value "
    tag = f"as {node.tag.rsplit(':', 1)[-1]} " if node is not None else ""
    return f"{what}cannot be read {tag}({type(exc).__name__})"


_Base: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when present (C, not pure Python)
_YAML_INT_TAG = "tag:yaml.org,2002:int"


class StrictLoader(_Base):  # the base is chosen at import
    """``yaml.SafeLoader`` (libyaml's when installed) that refuses aliases and duplicate keys
    and leaves huge integers unconverted and dates as their text; the errors are
    ``yaml.constructor.ConstructorError``."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # a node constructed before is reached a second time only through an alias
        # (libyaml shares the node itself, so the line is that of the anchor, not of the alias)
        if node in self.constructed_objects or node in self.recursive_objects:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"YAML aliases (*name) are not allowed in an input file (the anchor at line {node.start_mark.line + 1} is used again)",
            )
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except _VALUE_ERRORS as exc:  # PyYAML's own constructors: '!!int ' is an IndexError, a bad date a ValueError
            raise yaml.constructor.ConstructorError(None, None, _unreadable(node, exc), node.start_mark) from None

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                # scalar keys only (a sequence or mapping key is unhashable: the base class says so)
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node)
                self.constructed_objects.pop(key_node, None)  # the base class builds it again
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {_shown_key(key)} (a key may appear once per mapping)", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.Node) -> Any:
        value = str(node.value)
        if len(value) > MAX_INT_DIGITS:
            return OversizedInteger(len(re.sub(r"[^0-9a-fA-F]", "", value)))
        return super().construct_yaml_int(node)


StrictLoader.add_constructor(_YAML_INT_TAG, StrictLoader.construct_yaml_int)
# YAML 1.1 (PyYAML's) reads ``1e-3`` and ``1e9`` as text (its floats need a dot); YAML 1.2
# reads them as numbers, as a user writing ``alpha: 1e-3`` means: the 1.2 forms are floats
# too (PyYAML's own float resolver, which needs the dot, still comes first)
StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)
# a date or timestamp stays the text written (``since: 2026-12-01`` is the string
# "2026-12-01"): the field that reads it checks it and names itself in the error, where
# PyYAML's own conversion would turn it into a date or fail with no field named
StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", StrictLoader.construct_yaml_str)


def load_yaml(text: str) -> Any:
    """Decode YAML strictly with :class:`StrictLoader` (safe tags only, no aliases, no duplicate keys).

    Raises:
        TextFileError: ``line 3: not valid YAML (mapping values are not allowed here)``,
            ``line 4: duplicate key 'gpus' (...)``, ``YAML aliases (*name) are not allowed ...``,
            naming the line where the parser knows it.
    """
    try:
        return yaml.load(text, Loader=StrictLoader)  # StrictLoader is a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        if not isinstance(exc, yaml.constructor.ConstructorError):  # a syntax error, not a refused value
            problem = f"not valid YAML ({problem})"
        raise TextFileError(f"{where}{problem}") from None
    except RecursionError:
        raise TextFileError("not valid YAML (nested too deeply)") from None
    except _VALUE_ERRORS as exc:  # raised while a mapping or sequence is filled in, outside construct_object
        raise TextFileError(f"not valid YAML ({_unreadable(None, exc)})") from None
