"""Scale goal of diagnose (issue: diagnose mode): a 4096-node diagnose through the local executor finishes in
≤ 60 s of real time and keeps the Workflow's stored parameters ≤ 256 KiB.

Builds a 4096-node simulated H100 cluster with two slow NICs, runs `examples/certifications/diagnose.yaml` through
the same path as `nvcre certify` (compile → local executor → steps), and checks the verdict names exactly the two
faulty nodes. Exit 1 on a miss.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CERT = ROOT / "examples" / "certifications" / "diagnose.yaml"
NODES = 4096


def faulty(nodes: int) -> list[str]:
    """The two slow-NIC nodes: gpu-node-0777 and gpu-node-3001 at 4096 nodes, the same places in a smaller run."""
    return [f"gpu-node-{round(nodes * share):04d}" for share in (777 / 4096, 3001 / 4096)]



TIME_GOAL_S, BYTES_GOAL = 60.0, 256 * 1024


def cluster_file(directory: str, nodes: int = NODES) -> str:
    spec = {"apiVersion": "nvcre-hera.dev/v1alpha1", "kind": "SimulatedCluster", "metadata": {"name": f"h100-{nodes}"},
            "spec": {"platform": "aws", "gpu": "h100",
                     "nodes": {"count": nodes, "namePattern": "gpu-node-{index:04d}", "perRack": 32},
                     "seed": 4096, "noise": {"sigma": 0.02, "dipProbability": 0.01},
                     "faults": [{"node": n, "kind": "slow-nic", "factor": 0.8} for n in faulty(nodes)]}}
    path = Path(directory) / f"h100-{nodes}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def main(argv: list[str] | None = None) -> int:
    from nvcre_hera.local_run import run_local

    nodes = int((argv or sys.argv[1:] or [NODES])[0])  # 1024: the largest group the screens run on
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        local = run_local(str(CERT), cluster_file(tmp, nodes))
        took = time.perf_counter() - start
    ex = local.report["execution"]
    diagnose = local.report["categories"][0].get("diagnose") or {}
    suspects = sorted(s["node"] for s in diagnose.get("suspects") or [])
    checks = [
        (f"real time {took:.1f} s", took <= TIME_GOAL_S, f"≤ {TIME_GOAL_S:.0f} s"),
        (f"stored parameters {ex['storedParameterBytes'] / 1024:.0f} KiB", ex["storedParameterBytes"] <= BYTES_GOAL,
         "≤ 256 KiB"),
        (f"suspects {suspects}", suspects == faulty(nodes), f"== {faulty(nodes)}"),
        (f"job objects left behind {ex['jobObjectsLeftBehind']}", ex["jobObjectsLeftBehind"] == 0, "== 0"),
    ]
    print(f"diagnose {nodes} nodes: {diagnose.get('jobs')} jobs in {diagnose.get('rounds')} rounds, "
          f"{ex['podsStarted']} pods, {ex['simulatedWallTimeSec'] / 60:.0f} simulated minutes")
    for label, ok, goal in checks:
        print(f"  {label:<48} goal {goal:<28} {'ok' if ok else 'MISSED'}")
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
