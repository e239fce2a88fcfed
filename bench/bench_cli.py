"""Timing goals of the CLI (issue: foundation): `nvcre --help` ≤ 0.3 s, `nvcre compile` of 64 categories ≤ 1.5 s.

Each command runs as a fresh process (as a user runs it); the best of five runs is reported. Exit 1 on a miss.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NVCRE = str(Path(sys.executable).parent / "nvcre")
GOALS = [
    ("nvcre --help", [NVCRE, "--help"], 0.3),
    ("nvcre compile (64 categories)", [NVCRE, "compile", str(ROOT / "bench" / "certification-64.yaml"),
                                       "-o", "/dev/null"], 1.5),
]


def best_of(argv: list[str], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    failed = 0
    for label, argv, goal in GOALS:
        took = best_of(argv)
        ok = took <= goal
        failed += not ok
        print(f"{label:<34} {took:6.2f} s   goal ≤ {goal:.1f} s   {'ok' if ok else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
