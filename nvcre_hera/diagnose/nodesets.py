"""Compact node sets for the diagnose planner state: sorted half-open index ranges and base64 bitsets.

The planner state travels between Argo rounds as a workflow parameter (stored in etcd), so a node set is
kept as ``[[lo, hi], ...]`` over node indices rather than a list of names: a 4096-node group is ``[[0, 4096]]``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence

Ranges = list[list[int]]


def from_nodes(nodes: Iterable[int]) -> Ranges:
    """Ranges covering exactly `nodes` (any order, duplicates ignored)."""
    out: Ranges = []
    for x in sorted(set(nodes)):
        if out and out[-1][1] == x:
            out[-1][1] = x + 1
        else:
            out.append([x, x + 1])
    return out


def to_nodes(rs: Sequence[Sequence[int]]) -> list[int]:
    """The node indices of `rs`, ascending."""
    out: list[int] = []
    for lo, hi in rs:
        out.extend(range(lo, hi))
    return out


def size(rs: Sequence[Sequence[int]]) -> int:
    """Number of nodes in `rs`."""
    return sum(hi - lo for lo, hi in rs)


def minus(rs: Sequence[Sequence[int]], drop: Iterable[int]) -> Ranges:
    """`rs` without the nodes in `drop`."""
    gone = set(drop)
    return from_nodes(x for x in to_nodes(rs) if x not in gone)


def union(*sets: Sequence[Sequence[int]]) -> Ranges:
    """Union of several range sets."""
    nodes: list[int] = []
    for rs in sets:
        nodes.extend(to_nodes(rs))
    return from_nodes(nodes)


def split(rs: Sequence[Sequence[int]], parts: int, clique_of: Sequence[int] | None = None) -> list[Ranges]:
    """Split into `parts` near-equal pieces, along NVLink cliques when the set spans enough of them.

    Splitting by topology first keeps each piece's jobs inside as few domains as possible (reference §5.1.2).
    """
    nodes = to_nodes(rs)
    parts = max(1, min(parts, len(nodes)))
    if clique_of is not None:
        blocks: list[list[int]] = []
        for x in nodes:
            if blocks and clique_of[blocks[-1][-1]] == clique_of[x] and clique_of[x] >= 0:
                blocks[-1].append(x)
            else:
                blocks.append([x])
        if len(blocks) >= parts > 1 and len(blocks) < len(nodes):
            return [from_nodes(p) for p in _balance(blocks, parts, len(nodes))]
    out: list[Ranges] = []
    start = 0
    for i in range(parts):
        end = (len(nodes) * (i + 1)) // parts
        out.append(from_nodes(nodes[start:end]))
        start = end
    return out


def _balance(blocks: list[list[int]], parts: int, total: int) -> list[list[int]]:
    """Cut a sequence of blocks into `parts` contiguous runs of near-equal node count."""
    out: list[list[int]] = []
    cur: list[int] = []
    done = 0
    for i, blk in enumerate(blocks):
        cur.extend(blk)
        left_blocks = len(blocks) - i - 1
        left_parts = parts - len(out) - 1
        target = total * (len(out) + 1) / parts
        if left_parts > 0 and (done + len(cur) >= target or left_blocks == left_parts):
            out.append(cur)
            done += len(cur)
            cur = []
    out.append(cur)
    return [p for p in out if p]


def bits_encode(flags: bytearray | bytes) -> str:
    """Pack a 0/1 per-node array into base64 (N=4096 → 684 characters)."""
    packed = bytearray((len(flags) + 7) // 8)
    for i, f in enumerate(flags):
        if f:
            packed[i >> 3] |= 1 << (i & 7)
    return base64.b64encode(bytes(packed)).decode("ascii")


def bits_decode(text: str, n: int) -> bytearray:
    """Inverse of `bits_encode`."""
    packed = base64.b64decode(text.encode("ascii")) if text else b""
    flags = bytearray(n)
    for i in range(n):
        if (i >> 3) < len(packed) and packed[i >> 3] >> (i & 7) & 1:
            flags[i] = 1
    return flags


__all__ = [
    "Ranges",
    "bits_decode",
    "bits_encode",
    "from_nodes",
    "minus",
    "size",
    "split",
    "to_nodes",
    "union",
]
