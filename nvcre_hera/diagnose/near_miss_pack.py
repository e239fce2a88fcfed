"""The screens' near-miss record (``st["sc"]["nm"]``, diagnose/screens.py), by columns for storage.

The record keeps, per node whose first screen of a kind neither cleared nor accused it, every screen of that kind
as a flat list ``[test index, ratio in thousandths, ...]``: ``{"<node>": [list per kind]}``. At 4096 nodes it
holds about half the nodes from the first round until V0 passes, and the carried state is stored five times a
round, so the record was most of a 4096-node diagnose's stored parameters (docs/diagnose-screens.md). By columns,
small numbers in long runs, gzip keeps it to about half:

``{"x": gaps between the sorted node indices, "n": per kind, each node's screen count, "t": per kind, the gaps
between successive test indices, "r": per kind, 1000 − each ratio}``.

Pure and exact: `unpack(pack(nm)) == nm`, keys in the order a JSON round trip with sorted keys gives them (the
order the planner read them in before), so the planner decides as it did.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any


def pack(nm: dict[str, list[list[int]]]) -> dict[str, Any]:
    nodes = sorted(int(key) for key in nm)
    kinds = len(next(iter(nm.values()))) if nm else 0
    entries = [nm[str(x)] for x in nodes]
    tests = [[v for e in entries for v in e[k][0::2]] for k in range(kinds)]
    return {"x": [b - a for a, b in zip([0] + nodes, nodes)],
            "n": [[len(e[k]) // 2 for e in entries] for k in range(kinds)],
            "t": [[b - a for a, b in zip([0] + col, col)] for col in tests],
            "r": [[1000 - v for e in entries for v in e[k][1::2]] for k in range(kinds)]}


def unpack(packed: Any) -> dict[str, list[list[int]]]:
    """The record `pack` wrote; ValueError when it is not one (the plan step then stops, never starts afresh)."""
    try:
        if any(gap < (1 if i else 0) for i, gap in enumerate(packed["x"])):
            raise ValueError("its node indices are not increasing")
        nodes = list(accumulate(packed["x"]))
        counts, tests, ratios = packed["n"], [list(accumulate(c)) for c in packed["t"]], packed["r"]
        if not len(counts) == len(tests) == len(ratios) or any(len(c) != len(nodes) for c in counts) or \
                any(sum(c) != len(t) or len(t) != len(r) for c, t, r in zip(counts, tests, ratios)):
            raise ValueError("its columns do not line up")
        rows: dict[int, list[list[int]]] = {x: [] for x in nodes}
        for c, t, r in zip(counts, tests, ratios):
            at = 0
            for x, count in zip(nodes, c):
                rows[x].append([v for i in range(at, at + count) for v in (t[i], 1000 - r[i])])
                at += count
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"the near-miss record does not decode: {exc}") from None
    return {key: rows[int(key)] for key in sorted(str(x) for x in rows)}


__all__ = ["pack", "unpack"]
