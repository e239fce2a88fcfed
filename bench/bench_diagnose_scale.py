"""Scale goal of diagnose (issue: diagnose mode): a 4096-node diagnose through the local executor finishes in
≤ 60 s of real time and keeps the Workflow's stored parameters ≤ 256 KiB.

Builds a 4096-node simulated H100 cluster with two slow NICs and runs `examples/certifications/diagnose.yaml`
through the same path as `nvcre certify` (compile → local executor → steps), twice:

* with the example's floor, `value >= 300`, which the healthy rest cannot meet at this size (the simulated AWS H100
  all-reduce is 370 × 0.98 × η, η = 1 − 0.02·log2(n/2): 297 GB/s at 1022 nodes, 283 at 4094, `nvcre_hera/sim/model.py`
  `scale_efficiency`, `PLATFORM_NET`): the two are named and the rest is unresolved, never released (a floor the
  hardware cannot meet is a failed certification either way);
* with a floor the healthy rest meets (`value >= 260`): the two are named and every other node is released.

Each run must name exactly the two faulty nodes, leave no job object behind and stay within the time and storage
goals. Exit 1 on a miss.
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


#: (label, busBandwidthGBps floor or None for the example's own, nodes the verdict must leave unreleased: None = all
#: of them, at the sizes where the healthy rest is below the example's 300 GB/s: 1024 nodes and up)
SCENARIOS = (("example floor 300 GB/s (above the healthy rest from 1024 nodes)", None, None),
             ("floor 260 GB/s (the healthy rest meets it)", 260, 2))


def certification_file(directory: str, floor: int | None) -> str:
    """The example certification, with its busBandwidthGBps floor replaced when `floor` is given."""
    if floor is None:
        return str(CERT)
    doc = yaml.safe_load(CERT.read_text())
    doc["spec"]["categories"][0]["options"]["thresholds"] = {"busBandwidthGBps": f"value >= {floor}"}
    path = Path(directory) / f"diagnose-{floor}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def run_scenario(nodes: int, label: str, floor: int | None, held: int | None) -> bool:
    from nvcre_hera.local_run import run_local

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        local = run_local(certification_file(tmp, floor), cluster_file(tmp, nodes))
        took = time.perf_counter() - start
    ex = local.report["execution"]
    diagnose = local.report["categories"][0].get("diagnose") or {}
    suspects = sorted(s["node"] for s in diagnose.get("suspects") or [])
    not_released = diagnose.get("nodesNotReleased")
    unresolved = sum(int(u.get("nodeCount") or 0) for u in diagnose.get("unresolved") or [])
    want_held = (nodes if nodes >= 1024 else 2) if held is None else held
    checks = [
        (f"real time {took:.1f} s", took <= TIME_GOAL_S, f"≤ {TIME_GOAL_S:.0f} s"),
        (f"stored parameters {ex['storedParameterBytes'] / 1024:.0f} KiB", ex["storedParameterBytes"] <= BYTES_GOAL,
         "≤ 256 KiB"),
        (f"suspects {suspects}", suspects == faulty(nodes), f"== {faulty(nodes)}"),
        (f"nodes not released {not_released} ({unresolved} unresolved)", not_released == want_held,
         f"== {want_held}"),
        (f"job objects left behind {ex['jobObjectsLeftBehind']}", ex["jobObjectsLeftBehind"] == 0, "== 0"),
    ]
    print(f"diagnose {nodes} nodes, {label}: {diagnose.get('jobs')} jobs in {diagnose.get('rounds')} rounds, "
          f"{ex['podsStarted']} pods, {ex['simulatedWallTimeSec'] / 60:.0f} simulated minutes, "
          f"{diagnose.get('nodeMinutes')} node-minutes")
    for text, ok, goal in checks:
        print(f"  {text:<48} goal {goal:<28} {'ok' if ok else 'MISSED'}")
    return all(ok for _, ok, _ in checks)


def main(argv: list[str] | None = None) -> int:
    nodes = int((argv or sys.argv[1:] or [NODES])[0])  # 1024: the largest group the screens run on
    results = [run_scenario(nodes, *scenario) for scenario in SCENARIOS]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
