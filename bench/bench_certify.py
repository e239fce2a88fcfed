"""Timing goal of the local run (issue: local certify): a 16-node certify takes ≤ 3 s of real time.

Runs `nvcre certify` as a user does (fresh process) on the embedded healthy 16-node cluster with the intra-node
certification (2 categories × 16 groups) and the announcement example; best of three. Exit 1 on a miss.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NVCRE = str(Path(sys.executable).parent / "nvcre")
CLUSTER = str(ROOT / "examples" / "clusters" / "healthy-h100-16.yaml")
CASES = [("announcement example, 16 nodes", ROOT / "examples" / "certification.yaml"),
         ("intra-node, 2 categories x 16 nodes", ROOT / "examples" / "certifications" / "intra-node.yaml")]
GOAL_S = 3.0


def main() -> int:
    failed = 0
    with tempfile.TemporaryDirectory() as out:
        for label, cert in CASES:
            times = []
            for _ in range(3):
                start = time.perf_counter()
                subprocess.run([NVCRE, "certify", str(cert), "--cluster", CLUSTER, "--out", out, "--quiet"],
                               check=True, stdout=subprocess.DEVNULL)
                times.append(time.perf_counter() - start)
            took = min(times)
            failed += took > GOAL_S
            print(f"certify {label:<38} {took:5.2f} s   goal ≤ {GOAL_S:.0f} s   "
                  f"{'ok' if took <= GOAL_S else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
