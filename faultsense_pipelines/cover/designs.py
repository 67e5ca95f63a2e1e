"""Block designs that cover every pair of points exactly once (or every cross-group pair).

A *2-(v, k, 1) design* (Steiner system S(2, k, v)) is a family of k-subsets (blocks) of a
v-set such that every pair of points lies in exactly one block; it has v(v-1)/(k(k-1)) blocks
and meets Schönheim's bound, so it is the best possible Phase 1 cover. A *transversal design*
TD(k, m) has k groups of m points and m^2 blocks, each block one point from every group, such
that every pair of points from different groups lies in exactly one block.

Constructions here (points are 0-based ints; ``classes`` lists parallel classes -- sets of
disjoint blocks that cover all points -- where the design is resolvable):

* lines of PG(d, q):   S(2, q+1, (q^{d+1}-1)/(q-1)), e.g. PG(2, 7) = S(2, 8, 57);
* lines of AG(d, q):   S(2, q, q^d), resolvable, e.g. AG(2, 8) = S(2, 8, 64);
* Denniston arcs:      S(2, 2^a, (2^a-1) 2^h + 2^a) in PG(2, 2^h), e.g. S(2, 8, 120), S(2, 4, 100);
* AG(2, q) plus one point on the q+1 lines through a fixed point (one per parallel class):
  a resolvable pair cover of q^2 + 1 points with blocks of q and q+1 points in q+1 rounds
  (not a Steiner system; for q = 7, 56 probes of 8 GPUs on 50 GPUs in 8 rounds);
* TD(k, m) from the ring of :func:`.fields.macneish_ring` (k <= smallest prime-power factor
  of m, resolvable; or one more group, not resolvable).

References:
    C. J. Colbourn, J. H. Dinitz (eds.), Handbook of Combinatorial Designs, 2nd ed., 2007:
    §VII.2 (finite geometry), §III.3 (MOLS, MacNeish), §VII.2.5 (maximal arcs).
    R. H. F. Denniston, "Some maximal arcs in finite projective planes", J. Comb. Theory 6 (1969).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .fields import Ring, galois_field, macneish_ring, prime_power

__all__ = [
    "Design",
    "affine_geometry",
    "affine_plus_one",
    "blocks_by_class",
    "build_design",
    "denniston_design",
    "design_sources",
    "difference_family_design",
    "max_td_groups",
    "projective_geometry",
    "td_coordinates",
    "transversal_design",
]


@dataclass(frozen=True)
class Design:
    """Blocks on points 0..points-1, with parallel classes (indices into ``blocks``) if known."""

    points: int
    blocks: tuple[tuple[int, ...], ...]
    classes: tuple[tuple[int, ...], ...] = ()


def _inverse_table(F: Ring) -> np.ndarray:
    inv = np.zeros(F.order, dtype=np.int64)
    for x in range(1, F.order):
        inv[x] = int(np.flatnonzero(F.mul[x] == 1)[0])
    return inv


def _vectors(d: int, q: int) -> np.ndarray:
    """All vectors of GF(q)^d as a (q^d, d) array, coordinate 0 least significant."""
    codes = np.arange(q**d)
    return np.stack([(codes // q**i) % q for i in range(d)], axis=1)


@lru_cache(maxsize=16)
def projective_geometry(d: int, q: int) -> Design:
    """Points and lines of the projective space PG(d, q): a 2-((q^{d+1}-1)/(q-1), q+1, 1) design.

    Args:
        d: dimension (>= 2).
        q: prime power, the field order.

    Returns:
        A :class:`Design` (not resolvable in general, so no classes).

    Notes:
        O(b (q+1)^2) for b lines; PG(2, q) has q^2+q+1 lines.

    >>> D = projective_geometry(2, 2)         # the Fano plane
    >>> D.points, len(D.blocks), {len(b) for b in D.blocks}
    (7, 7, {3})
    """
    F = galois_field(q)
    inv = _inverse_table(F)
    vecs = _vectors(d + 1, q)[1:]
    # a point is a nonzero vector whose last nonzero coordinate is 1
    last = np.array([v[np.flatnonzero(v)[-1]] for v in vecs])
    pts = vecs[last == 1]
    index = {tuple(p): i for i, p in enumerate(pts.tolist())}
    v = len(pts)

    def normalise(x: np.ndarray) -> tuple[int, ...]:
        lead = x[np.flatnonzero(x)[-1]]
        return tuple(int(c) for c in F.mul[inv[lead], x])

    covered = np.zeros((v, v), dtype=bool)
    blocks: list[tuple[int, ...]] = []
    for a in range(v):
        for b in range(a + 1, v):
            if covered[a, b]:
                continue
            line = {a, b}
            for t in range(1, q):  # points P + t Q for t != 0
                x = F.add[pts[a], F.mul[t, pts[b]]]
                line.add(index[normalise(x)])
            block = tuple(sorted(line))
            covered[np.ix_(block, block)] = True
            blocks.append(block)
    return Design(v, tuple(blocks))


@lru_cache(maxsize=16)
def affine_geometry(d: int, q: int) -> Design:
    """Points and lines of the affine space AG(d, q): a resolvable 2-(q^d, q, 1) design.

    Each parallel class is the set of lines with one direction.

    >>> D = affine_geometry(2, 3)
    >>> D.points, len(D.blocks), len(D.classes)
    (9, 12, 4)
    """
    F = galois_field(q)
    pts = _vectors(d, q)
    weights = q ** np.arange(d)
    # directions: nonzero vectors whose last nonzero coordinate is 1
    dirs = [x for x in pts[1:] if x[np.flatnonzero(x)[-1]] == 1]
    blocks: list[tuple[int, ...]] = []
    classes: list[tuple[int, ...]] = []
    for direction in dirs:
        seen = np.zeros(len(pts), dtype=bool)
        cls = []
        for start in range(len(pts)):
            if seen[start]:
                continue
            line = [int((F.add[pts[start], F.mul[t, direction]] * weights).sum()) for t in range(q)]
            seen[line] = True
            cls.append(len(blocks))
            blocks.append(tuple(sorted(line)))
        classes.append(tuple(cls))
    return Design(len(pts), tuple(blocks), tuple(classes))


@lru_cache(maxsize=16)
def affine_plus_one(q: int) -> Design:
    """AG(2, q) plus a point joined to the lines through point 0: a resolvable cover of q^2 + 1 points.

    In each parallel class of AG(2, q) exactly one line passes through point 0; the new point
    q^2 joins that line, so each class stays a set of disjoint blocks, and the q + 1 lines
    through point 0 cover the plane, so the new point meets every other point.

    >>> D = affine_plus_one(3)
    >>> D.points, len(D.blocks), len(D.classes), sorted(len(b) for b in D.blocks if 9 in b)
    (10, 12, 4, [4, 4, 4, 4])
    """
    A = affine_geometry(2, q)
    blocks = tuple((*b, q * q) if 0 in b else b for b in A.blocks)
    return Design(q * q + 1, blocks, A.classes)


@lru_cache(maxsize=16)
def denniston_design(h: int, a: int) -> Design:
    """The 2-((2^a - 1) 2^h + 2^a, 2^a, 1) design of a Denniston maximal arc in PG(2, 2^h).

    With q = 2^h, take x^2 + b x y + y^2 irreducible over GF(q) and the additive subgroup A of
    order 2^a; the arc {(x, y) : x^2 + b x y + y^2 in A} meets every affine line in 0 or 2^a
    points, so its secant lines form a Steiner system.

    Args:
        h: field GF(2^h).
        a: 1 <= a < h, the block size is 2^a.

    >>> D = denniston_design(3, 2)          # S(2, 4, 28) in PG(2, 8)
    >>> D.points, len(D.blocks), {len(b) for b in D.blocks}
    (28, 63, {4})
    """
    if not 1 <= a < h:
        raise ValueError(f"need 1 <= a < h, got a={a}, h={h}")
    q, deg = 2**h, 2**a
    F = galois_field(q)
    beta = next(b for b in range(1, q) if all(F.add[F.add[F.mul[x, x], F.mul[b, x]], 1] != 0 for x in range(q)))
    xs, ys = np.divmod(np.arange(q * q), q)
    form = F.add[F.add[F.mul[xs, xs], F.mul[beta, F.mul[xs, ys]]], F.mul[ys, ys]]
    arc = np.flatnonzero(form < deg)  # codes 0..deg-1 are the GF(2)-span of 1, x, ..., x^{a-1}
    ax, ay = xs[arc], ys[arc]
    blocks: list[tuple[int, ...]] = []
    # lines x = c, and y = s x + c for each slope s (characteristic 2: c = y + s x)
    for intercept in [ax] + [F.add[ay, F.mul[s, ax]] for s in range(q)]:
        order = np.argsort(intercept, kind="stable")
        cuts = np.flatnonzero(np.diff(intercept[order])) + 1
        blocks.extend(tuple(sorted(int(p) for p in g)) for g in np.split(order, cuts) if len(g) >= 2)
    return Design(len(arc), tuple(blocks))


# Difference families: base blocks in an abelian group G whose differences hit every nonzero
# element of G exactly once; their translates form a 2-(|G|, k, 1) design. Found by exhaustive
# search and re-checked by the tests. Group: a tuple of cyclic orders, (5, 5) = Z_5 x Z_5.
DIFFERENCE_FAMILIES: dict[int, tuple[tuple[int, ...], tuple[tuple[tuple[int, ...], ...], ...]]] = {
    25: ((5, 5), (((0, 0), (0, 1), (1, 0), (2, 2)), ((0, 0), (0, 2), (1, 3), (3, 2)))),
    37: ((37,), (((0,), (1,), (3,), (24,)), ((0,), (4,), (9,), (15,)), ((0,), (7,), (17,), (25,)))),
}


@lru_cache(maxsize=16)
def difference_family_design(v: int) -> Design:
    """The 2-(v, 4, 1) design developed from a stored difference family (v = 25, 37).

    Point (g_0, g_1, ...) of G is coded g_0 + o_0 g_1 + o_0 o_1 g_2 + ...

    >>> D = difference_family_design(25)
    >>> D.points, len(D.blocks)
    (25, 50)
    """
    orders, base = DIFFERENCE_FAMILIES[v]
    elements = list(np.ndindex(*orders[::-1]))
    weights = np.cumprod((1, *orders[:-1]))
    blocks = set()
    for g in elements:
        g = g[::-1]
        for b in base:
            pts = [int(sum(((x + y) % o) * w for x, y, o, w in zip(p, g, orders, weights))) for p in b]
            blocks.add(tuple(sorted(pts)))
    return Design(v, tuple(sorted(blocks)))


def max_td_groups(m: int) -> int:
    """The most groups k for which :func:`transversal_design` builds a TD(k, m).

    That is one more than the smallest prime-power factor of m (MacNeish's bound).

    >>> max_td_groups(7), max_td_groups(12), max_td_groups(10)
    (8, 4, 3)
    """
    return 1 + len(macneish_ring(m).distinct)


@lru_cache(maxsize=4)
def td_coordinates(k: int, m: int) -> np.ndarray:
    """The blocks of :func:`transversal_design` ``(k, m)`` as an (m^2, k) int array of in-group coordinates.

    Row ``b * m + a`` is block (a, b); column i is its point's coordinate 0..m-1 in group i
    (the point itself is ``i * m`` + coordinate). Read-only, int16 for m < 2^15 (memoised:
    the recursion asks for one TD with many group sizes).

    Raises:
        ValueError: if ``k > max_td_groups(m)`` or ``k < 2``.

    >>> td_coordinates(4, 5)[6].tolist()   # block (a, b) = (1, 1): a + c_i b for c = 0, 1, 2, 3
    [1, 2, 3, 4]
    """
    R = macneish_ring(m)
    c = R.distinct
    if not 2 <= k <= len(c) + 1:
        raise ValueError(f"TD({k}, {m}) needs 2 <= k <= {len(c) + 1}")
    resolvable = k <= len(c)
    cols = [R.add[:, R.mul[c[i]]].T.ravel() for i in range(k if resolvable else k - 1)]  # [b, a] -> a + c_i b
    if not resolvable:
        cols.append(np.repeat(np.arange(m), m))  # the last group takes coordinate b
    out = np.stack(cols, axis=1).astype(np.int16 if m < 2**15 else np.int32)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=256)
def transversal_design(k: int, m: int) -> Design:
    """A TD(k, m): groups {i*m, ..., i*m + m - 1} for i < k, m^2 blocks of size k.

    Block (a, b) is {(i, a + c_i b)} over the ring R of order m, where c_0, c_1, ... have unit
    differences; two points of different groups determine (a, b) uniquely. For fixed b the
    blocks are disjoint (a parallel class). If k exceeds the number of such c_i by one, the
    last group takes coordinate b and the design is not resolvable.

    Raises:
        ValueError: if ``k > max_td_groups(m)`` or ``k < 2``.

    >>> D = transversal_design(4, 5)
    >>> len(D.blocks), len(D.classes), D.blocks[0]
    (25, 5, (0, 5, 10, 15))
    """
    coords = td_coordinates(k, m)
    resolvable = k <= len(macneish_ring(m).distinct)
    blocks = tuple(map(tuple, (coords + m * np.arange(k)).tolist()))
    classes = tuple(tuple(range(b * m, (b + 1) * m)) for b in range(m)) if resolvable else ()
    return Design(k * m, blocks, classes)


MAX_DESIGN_POINTS = 390  # designs are built up to this many points


def design_sources(k: int, limit: int = MAX_DESIGN_POINTS) -> list[tuple[str, int]]:
    """Known Steiner systems S(2, k, v) built here, as (name, v) with v <= ``limit``.

    Also AG(2, k-1) plus one point (:func:`affine_plus_one`), resolvable but not Steiner.

    >>> design_sources(8)
    [('AG(2,7)+1', 50), ('PG(2,7)', 57), ('AG(2,8)', 64), ('Denniston(4,3)', 120), ('Denniston(5,3)', 232)]
    """
    out: list[tuple[str, int]] = []
    q = k - 1
    if q >= 2 and prime_power(q) and q * q + 1 <= limit:
        out.append((f"AG(2,{q})+1", q * q + 1))
    if q >= 2 and prime_power(q):
        for d in range(2, 8):
            v = (q ** (d + 1) - 1) // (q - 1)
            if v > limit:
                break
            out.append((f"PG({d},{q})", v))
    if prime_power(k):
        for d in range(2, 8):
            if k**d > limit:
                break
            out.append((f"AG({d},{k})", k**d))
    a = k.bit_length() - 1
    if k == 2**a and a >= 1:
        for h in range(a + 1, 12):
            v = (k - 1) * 2**h + k
            if v > limit:
                break
            out.append((f"Denniston({h},{a})", v))
    if k == 4:
        out += [(f"DF({v})", v) for v in DIFFERENCE_FAMILIES if v <= limit]
    return sorted(out, key=lambda s: s[1])


def build_design(name: str) -> Design:
    """The design named by :func:`design_sources`, e.g. ``build_design("AG(2,8)")``."""
    if name.startswith("DF("):
        return difference_family_design(int(name[3:-1]))
    if name.endswith(")+1"):
        return affine_plus_one(int(name[len("AG(2,") : -len(")+1")]))
    kind, args = name.split("(")
    x, y = (int(t) for t in args.rstrip(")").split(","))
    return {"PG": projective_geometry, "AG": affine_geometry, "Denniston": denniston_design}[kind](x, y)


def blocks_by_class(D: Design) -> list[tuple[int, ...]]:
    """Blocks of D, a parallel class at a time where known."""
    if not D.classes:
        return list(D.blocks)
    return [D.blocks[i] for cls in D.classes for i in cls]
