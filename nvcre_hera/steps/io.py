"""Where a step writes its output parameters: files in a pod (read by Argo's `valueFrom.path`), a dict in process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Outputs:
    """Output parameters of one step, written as files under `out_dir` (or only kept in memory)."""

    def __init__(self, out_dir: str, *, in_memory: bool = False) -> None:
        self.out_dir = out_dir
        self.in_memory = in_memory
        self.files: dict[str, str] = {}

    def write(self, name: str, value: Any) -> None:
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True)
        path = f"{self.out_dir.rstrip('/')}/{name}"
        self.files[path] = text
        if not self.in_memory:
            Path(path).parent.mkdir(parents=True, exist_ok=True)  # `bundle/results.json` has its own folder
            Path(path).write_text(text)


def flatten_runs(aggregated: Any) -> list[dict]:
    """A test fan-out's aggregated output: one item per group, each the list of that group's runs (repeats)."""
    return [run for item in aggregated or [] for run in (item if isinstance(item, list) else [item])
            if isinstance(run, dict)]


__all__ = ["Outputs", "flatten_runs"]
