"""Scale goal of diagnose (issue: diagnose mode): a 4096-node diagnose through the local executor finishes in
≤ 60 s of real time and keeps the Workflow's stored parameters ≤ 256 KiB.

Builds a 4096-node simulated H100 cluster with two slow NICs and runs `examples/certifications/diagnose.yaml`
through the same path as `nvcre certify` (compile → local executor → steps), twice:

* with the example's floor, `value >= 300`, which the healthy rest cannot meet at this size (the simulated AWS H100
  all-reduce is 370 × 0.98 × η, η = 1 − 0.02·log2(n/2): 297 GB/s at 1022 nodes, 283 at 4094, `nvcre_hera/sim/model.py`
  `scale_efficiency`, `PLATFORM_NET`): the two are named and the rest is unresolved, never released (a floor the
  hardware cannot meet is a failed certification either way);
* with a floor the healthy rest meets (`value >= 260`): the two are named and every other node is released.

Each scenario runs under --draws workflow identities (8 by default: the compiled default, then seeded random names
and uids), and the simulated noise follows the uid, so the rounds and the bytes stored vary from draw to draw; every
draw must name exactly the two faulty nodes and leave no job object behind, and the slowest and the largest must stay
within the time and storage goals. Exit 1 on a miss.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CERT = ROOT / "examples" / "certifications" / "diagnose.yaml"
NODES = 4096


def faulty(nodes: int) -> list[str]:
    """The two slow-NIC nodes: gpu-node-0777 and gpu-node-3001 at 4096 nodes, the same places in a smaller run."""
    return [f"gpu-node-{round(nodes * share):04d}" for share in (777 / 4096, 3001 / 4096)]



TIME_GOAL_S, BYTES_GOAL = 60.0, 256 * 1024
DRAWS, DRAW_SEED = 8, 1  # noise draws per scenario (workflow identities, `identities`), and their seed


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


def identities(draws: int) -> list[tuple[str, str] | None]:
    """The workflow identities a scenario runs under: the compiled default first, then seeded random names and uids.
    The simulated cluster draws each job's noise from the workflow's uid, so each identity is another run of the
    same cluster: the rounds a diagnose takes, and the bytes it stores, vary with the draw."""
    rng = random.Random(DRAW_SEED)
    return [None] + [(f"diagnose-cert-{rng.randrange(36 ** 5):05x}", str(uuid.UUID(int=rng.getrandbits(128))))
                     for _ in range(draws - 1)]


def run_once(nodes: int, floor: int | None, identity: tuple[str, str] | None) -> tuple[float, dict, int, list[str]]:
    """(real seconds, report, the diagnose store's peak bytes, the ConfigMaps left on the cluster at the end)."""
    from nvcre_hera.local_run import run_local

    def named(wf: dict) -> dict:
        wf["metadata"].update(name=identity[0], uid=identity[1])
        return wf

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        local = run_local(certification_file(tmp, floor), cluster_file(tmp, nodes),
                          **({"mutate": named} if identity else {}))
        peak = max(local.cluster.configmap_peak_bytes.values(), default=0)
        return time.perf_counter() - start, local.report, peak, sorted(local.cluster.configmaps)


def run_scenario(nodes: int, label: str, floor: int | None, held: int | None, draws: int = 1) -> bool:
    want_held = (nodes if nodes >= 1024 else 2) if held is None else held
    took, stored, rounds, minutes, bad, peaks = [], [], [], [], [], []
    for identity in identities(draws):
        seconds, report, peak, configmaps = run_once(nodes, floor, identity)
        peaks.append(peak)
        ex = report["execution"]
        diagnose = report["categories"][0].get("diagnose") or {}
        suspects = sorted(s["node"] for s in diagnose.get("suspects") or [])
        not_released = diagnose.get("nodesNotReleased")
        took.append(seconds)
        stored.append(ex["storedParameterBytes"])
        rounds.append(diagnose.get("rounds"))
        minutes.append(ex["simulatedWallTimeSec"] / 60)
        who = identity[0] if identity else "the compiled default"
        if suspects != faulty(nodes):
            bad.append(f"{who}: suspects {suspects}")
        if not_released != want_held:
            bad.append(f"{who}: nodes not released {not_released}")
        if ex["jobObjectsLeftBehind"]:
            bad.append(f"{who}: {ex['jobObjectsLeftBehind']} job objects left behind")
        if configmaps:
            bad.append(f"{who}: ConfigMaps left behind {configmaps}")
        if identity is None:
            print(f"diagnose {nodes} nodes, {label}: {diagnose.get('jobs')} jobs in {diagnose.get('rounds')} rounds, "
                  f"{ex['podsStarted']} pods, {ex['simulatedWallTimeSec'] / 60:.0f} simulated minutes, "
                  f"{diagnose.get('nodeMinutesMeasured', 'untimed')} GPU node-minutes measured "
                  f"({diagnose.get('nodeMinutes')} estimated; the compiled default's draw)")
    kib = sorted(b / 1024 for b in stored)
    checks = [
        (f"real time, slowest draw {max(took):.1f} s", max(took) <= TIME_GOAL_S, f"≤ {TIME_GOAL_S:.0f} s"),
        (f"stored parameters {kib[0]:.0f} / {statistics.median(kib):.0f} / {kib[-1]:.0f} KiB (min / median / max)",
         kib[-1] * 1024 <= BYTES_GOAL, "≤ 256 KiB in every draw"),
        (f"suspects, nodes held, objects left ({len(bad)} draws wrong)", not bad,
         f"{faulty(nodes)}, {want_held}, 0"),
    ]
    print(f"  {draws} draw(s): rounds {min(rounds)}-{max(rounds)}; simulated minutes {min(minutes):.0f} / "
          f"{statistics.median(minutes):.0f} / {max(minutes):.0f} (min / median / max); stored KiB by draw "
          f"{[round(b / 1024) for b in stored]}; the diagnose store's peak (a ConfigMap, outside the Workflow) "
          f"{min(peaks) / 1024:.0f} / {statistics.median(peaks) / 1024:.0f} / {max(peaks) / 1024:.0f} KiB")
    for text, ok, goal in checks:
        print(f"  {text:<62} goal {goal:<28} {'ok' if ok else 'MISSED'}")
    for line in bad:
        print(f"    {line}")
    return all(ok for _, ok, _ in checks)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_diagnose_scale.py", description=__doc__.splitlines()[0])
    ap.add_argument("nodes", nargs="?", type=int, default=NODES, help="1024: the scale the e2e runs beside 4096")
    ap.add_argument("--draws", type=int, default=DRAWS, help="workflow identities per scenario (noise draws)")
    ap.add_argument("--screens-max-nodes", type=int, default=None,
                    help="set the planner's screens.MAX_NODES (4096) in this process, as a measurement: 1024 "
                    "runs the 4096-node diagnoses without screens")
    a = ap.parse_args(argv)
    with screens_cap(a.screens_max_nodes):
        results = [run_scenario(a.nodes, *scenario, draws=a.draws) for scenario in SCENARIOS]
    return 0 if all(results) else 1


@contextlib.contextmanager
def screens_cap(nodes: int | None) -> Iterator[None]:
    """The planner's screens cap (`screens.MAX_NODES`) set to `nodes` for the block, then restored; None leaves it.
    What the screens cost and buy at 4096 nodes is measured so (1024: the runs without them): no Certification sets
    the cap, and the local executor runs the plan step in this process."""
    from nvcre_hera.diagnose import screens

    before = screens.MAX_NODES
    screens.MAX_NODES = before if nodes is None else nodes
    try:
        yield
    finally:
        screens.MAX_NODES = before


if __name__ == "__main__":
    sys.exit(main())
