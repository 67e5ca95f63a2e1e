"""Reading the small text inputs users hand us (fleet YAML, scenario JSON) with one-line errors."""

from __future__ import annotations

from pathlib import Path

__all__ = ["MAX_TEXT_BYTES", "TextFileError", "read_text"]

#: The largest input file read (bytes): fleet and scenario files are a few KiB; a bigger one is
#: a wrong path (a log, a device), refused before it is read into memory.
MAX_TEXT_BYTES = 16 * 1024 * 1024


class TextFileError(ValueError):
    """An input file that cannot be read as UTF-8 text; the message says why, without the path."""


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
    if len(raw) > limit:
        raise TextFileError(f"larger than {limit:,} bytes: not an input file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TextFileError(f"not a UTF-8 text file (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})") from None
