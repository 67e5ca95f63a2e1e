"""Finite fields GF(q) and their products, as addition and multiplication tables.

A *finite field* GF(q) exists for every prime power q = p^a; its elements are coded here as
the integers 0..q-1 (the base-p digits of a code are the coefficients of a polynomial over
GF(p), reduced modulo a fixed irreducible polynomial of degree a). A *product ring*
GF(q1) x GF(q2) x ... of order m = q1 q2 ... is what MacNeish's construction of mutually
orthogonal Latin squares needs; it is coded by mixed-radix digits.

The designs in :mod:`.designs` only need ``add``, ``mul`` and a set of elements whose pairwise
differences are units, so both are exposed as one :class:`Ring` of numpy tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["Ring", "factor", "galois_field", "macneish_ring", "prime_power", "product_ring"]


@dataclass(frozen=True, eq=False)
class Ring:
    """A finite commutative ring with elements 0..order-1.

    Attributes:
        order: number of elements.
        add: (order, order) int table, ``add[x, y] = x + y``.
        mul: (order, order) int table, ``mul[x, y] = x * y``.
        neg: (order,) table of additive inverses.
        distinct: elements whose pairwise differences are units (length = the smallest
            prime-power factor of ``order``; all elements when the ring is a field).
    """

    order: int
    add: np.ndarray
    mul: np.ndarray
    neg: np.ndarray
    distinct: tuple[int, ...]

    def sub(self, x: int, y: int) -> int:
        """x - y."""
        return int(self.add[x, self.neg[y]])


def factor(m: int) -> list[tuple[int, int]]:
    """Prime factorisation of ``m >= 1`` as [(p, a), ...] with p increasing.

    >>> factor(72)
    [(2, 3), (3, 2)]
    """
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    out: list[tuple[int, int]] = []
    p = 2
    while p * p <= m:
        a = 0
        while m % p == 0:
            m //= p
            a += 1
        if a:
            out.append((p, a))
        p += 1
    if m > 1:
        out.append((m, 1))
    return out


def prime_power(q: int) -> tuple[int, int] | None:
    """(p, a) with q = p^a if ``q`` is a prime power, else None.

    >>> prime_power(49), prime_power(12)
    ((7, 2), None)
    """
    f = factor(q) if q >= 2 else []
    return f[0] if len(f) == 1 else None


def _irreducible(p: int, a: int) -> list[int]:
    """The first monic irreducible polynomial of degree ``a`` over GF(p) (coefficients low first)."""
    for code in range(p**a):
        low = [(code // p**i) % p for i in range(a)]
        poly = [*low, 1]
        if low[0] == 0:
            continue
        # irreducible iff no monic factor of degree 1..a//2 divides it (brute force, tiny fields)
        if all(_has_no_factor(poly, d, p) for d in range(1, a // 2 + 1)):
            return poly
    raise AssertionError(f"no irreducible polynomial of degree {a} over GF({p})")


def _has_no_factor(poly: list[int], d: int, p: int) -> bool:
    for code in range(p**d):
        divisor = [(code // p**i) % p for i in range(d)] + [1]
        rem = list(poly)
        for top in range(len(rem) - 1, d - 1, -1):
            c = rem[top]
            if c:
                for t in range(d + 1):
                    rem[top - d + t] = (rem[top - d + t] - c * divisor[t]) % p
        if not any(rem[:d]):
            return False
    return True


@lru_cache(maxsize=64)
def galois_field(q: int) -> Ring:
    """The finite field GF(q) for a prime power ``q``.

    Raises:
        ValueError: if ``q`` is not a prime power.

    >>> F = galois_field(4)
    >>> int(F.mul[2, 2]), int(F.add[2, 3])   # x*x = x+1, x + (x+1) = 1
    (3, 1)
    """
    pa = prime_power(q)
    if pa is None:
        raise ValueError(f"field order must be a prime power, got {q}")
    p, a = pa
    if a == 1:
        x = np.arange(q)
        return Ring(q, np.add.outer(x, x) % q, np.multiply.outer(x, x) % q, (-x) % q, tuple(range(q)))
    powers = p ** np.arange(a)
    # (q, a): coefficient i of element x; int16 holds p^2 + p for every p^a <= 2^15 with a >= 2
    digits = ((np.arange(q)[:, None] // powers) % p).astype(np.int16)
    add = ((digits[:, None, :] + digits[None, :, :]) % p) @ powers
    mul = _poly_mul_table(digits, _irreducible(p, a), p) @ powers
    neg = ((-digits) % p) @ powers
    return Ring(q, add, mul, neg, tuple(range(q)))


def _poly_mul_table(digits: np.ndarray, modulus: list[int], p: int) -> np.ndarray:
    """(q, q, a) coefficients of x * y mod ``modulus`` for all field elements x, y (digits (q, a)).

    x * y = sum_i x_i (t^i y): the products t^i y come from y by i multiplications by t
    (shift the coefficients up, reduce the top one by the monic modulus).
    """
    q, a = digits.shape
    low = np.asarray(modulus[:a], dtype=digits.dtype)
    shifted = digits.copy()  # t^i * y for every y, (q, a)
    out = np.zeros((q, q, a), dtype=digits.dtype)
    for i in range(a):
        out += digits[:, i, None, None] * shifted[None, :, :]
        out %= p
        top = shifted[:, a - 1].copy()
        shifted[:, 1:] = shifted[:, : a - 1]
        shifted[:, 0] = 0
        shifted = (shifted - top[:, None] * low[None, :]) % p
    return out


def product_ring(orders: tuple[int, ...]) -> Ring:
    """The product GF(q1) x GF(q2) x ... (mixed-radix codes, first factor least significant)."""
    rings = [galois_field(q) for q in orders]
    m = int(np.prod(orders))
    digits = np.array([[(x // int(np.prod(orders[:i]))) % q for i, q in enumerate(orders)] for x in range(m)])
    weights = np.array([int(np.prod(orders[:i])) for i in range(len(orders))])
    add = np.zeros((m, m), dtype=np.int64)
    mul = np.zeros((m, m), dtype=np.int64)
    neg = np.zeros(m, dtype=np.int64)
    for i, r in enumerate(rings):
        d = digits[:, i]
        add += r.add[d[:, None], d[None, :]] * weights[i]
        mul += r.mul[d[:, None], d[None, :]] * weights[i]
        neg += r.neg[d] * weights[i]
    s = min(orders)
    distinct = tuple(int(sum(j * w for w in weights)) for j in range(s))  # (j, j, ..., j)
    return Ring(m, add, mul, neg, distinct)


@lru_cache(maxsize=128)
def macneish_ring(m: int) -> Ring:
    """GF(m) if ``m`` is a prime power, else the product of the prime-power parts of ``m``.

    Its ``distinct`` elements have unit differences, which gives ``len(distinct) - 1``
    mutually orthogonal Latin squares of order ``m`` (MacNeish, 1922).
    """
    if m < 2:
        raise ValueError(f"ring order must be >= 2, got {m}")
    parts = tuple(p**a for p, a in factor(m))
    return galois_field(m) if len(parts) == 1 else product_ring(parts)
