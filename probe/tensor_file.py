"""A bf16 tensor in ``torch.save``'s file format, written with NumPy alone.

vLLM takes a request's ``prompt_embeds`` as base64 of ``torch.save(tensor)`` and reads it with
``torch.load(..., weights_only=True)``. The ``vllm`` executor is an HTTP client: building that
payload should not cost it torch (~300 MB and seconds to import). This module writes the same
archive torch 2.x writes for a contiguous CPU tensor: a stored (uncompressed) zip whose
``archive/data.pkl`` is the pickle ``torch._utils._rebuild_tensor_v2(storage, 0, size,
stride, False, OrderedDict())`` -- the storage a persistent id ``('storage',
torch.BFloat16Storage, '0', 'cpu', numel)`` -- and whose ``archive/data/0`` holds the
elements, little-endian, plus the ``byteorder`` and ``version`` records. Only the names
``weights_only`` loading allows appear in the pickle. ``tests/probe/test_tensor_file.py``
loads it with ``torch.load(weights_only=True)`` and compares with ``torch.save`` of the same
tensor.

bf16 values are rounded from float32 to nearest, ties to even (what ``tensor.to(torch.bfloat16)``
does); NaN stays NaN.
"""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np

__all__ = ["bf16_bits", "save_bf16"]

_ARCHIVE = "archive"


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """The bfloat16 bit patterns (``uint16``, same shape) of ``values``, rounded from float32
    to nearest, ties to even; NaN becomes a quiet NaN.

    >>> bf16_bits(np.array([1.0, -2.0, 0.0], dtype=np.float32)).tolist()
    [16256, 49152, 0]
    """
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((bits + (0x7FFF + ((bits >> 16) & 1))) >> 16).astype(np.uint16)
    nan = np.isnan(values)
    if nan.any():
        rounded = np.where(nan, ((bits >> 16) | 0x0040).astype(np.uint16), rounded)
    return rounded


def _int(value: int) -> bytes:
    """A pickle opcode pushing the non-negative ``value`` (BININT1, BININT or LONG1)."""
    if value < 256:
        return b"K" + bytes([value])
    if value < 2**31:
        return b"J" + struct.pack("<i", value)
    raw = value.to_bytes((value.bit_length() + 8) // 8, "little")
    return b"\x8a" + bytes([len(raw)]) + raw


def _text(value: str) -> bytes:
    raw = value.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _ints(values: tuple[int, ...]) -> bytes:
    return b"(" + b"".join(_int(v) for v in values) + b"t"


def _pickle(shape: tuple[int, ...], stride: tuple[int, ...], numel: int) -> bytes:
    """``_rebuild_tensor_v2(storage, 0, shape, stride, False, OrderedDict())``, protocol 2."""
    storage = b"(" + _text("storage") + b"ctorch\nBFloat16Storage\n" + _text("0") + _text("cpu") + _int(numel) + b"t"
    return (
        b"\x80\x02"
        + b"ctorch._utils\n_rebuild_tensor_v2\n"
        + b"("
        + storage
        + b"Q"  # BINPERSID: the storage, by its persistent id
        + _int(0)
        + _ints(shape)
        + _ints(stride)
        + b"\x89"  # requires_grad False
        + b"ccollections\nOrderedDict\n)R"  # backward hooks: an empty OrderedDict
        + b"tR."
    )


def save_bf16(bits: np.ndarray) -> bytes:
    """``torch.save`` of the contiguous CPU bf16 tensor whose elements are ``bits``.

    Args:
        bits: bfloat16 bit patterns, ``uint16``, any shape (e.g. ``(tokens, hidden)`` from
            :func:`bf16_bits`), at least one dimension.

    Returns:
        The file's bytes; ``torch.load(io.BytesIO(data), weights_only=True)`` gives a tensor
        of ``bits.shape`` and dtype ``torch.bfloat16``.

    Raises:
        ValueError: ``bits`` is not ``uint16`` or has no dimension.
    """
    if bits.dtype != np.uint16 or bits.ndim == 0:
        raise ValueError(f"bits must be a uint16 array of at least one dimension, got {bits.dtype} of shape {bits.shape}")
    shape = tuple(int(d) for d in bits.shape)
    stride = tuple(int(np.prod(shape[i + 1 :], dtype=np.int64)) for i in range(len(shape)))
    data = np.ascontiguousarray(bits).astype("<u2", copy=False).tobytes()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(f"{_ARCHIVE}/data.pkl", _pickle(shape, stride, int(bits.size)))
        archive.writestr(f"{_ARCHIVE}/byteorder", b"little")
        archive.writestr(f"{_ARCHIVE}/data/0", data)
        archive.writestr(f"{_ARCHIVE}/version", b"3\n")
    return out.getvalue()
