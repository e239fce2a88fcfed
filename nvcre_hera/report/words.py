"""Small wording helpers shared by the HTML page, the charts and live progress: plural forms and fixed decimals."""

from __future__ import annotations

from typing import Any


def plural(count: Any, noun: str, many: str | None = None) -> str:
    """`1 node`, `2 nodes`, `0 nodes` (`many` for irregular plurals)."""
    try:
        n = int(count)
    except (TypeError, ValueError):
        return f"{count} {many or noun + 's'}"
    return f"{n} {noun if n == 1 else many or noun + 's'}"


def fixed(value: Any, decimals: int = 2) -> str:
    """A measured value with a fixed number of decimals (`465.92`, `300.00`), '-' when absent: one format per
    column, so a table's numbers line up."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return "-"
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


__all__ = ["fixed", "plural"]
