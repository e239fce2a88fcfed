"""Fail closed through the workflow path: random mixes of strong faults, diagnosed by the compiled workflow.

Each case is a SimulatedCluster of 8–48 nodes (on-prem H100, σ 1 %) with 1–3 faults drawn from slow NICs and slow
GPUs (× 0.4–0.6), bad links between two nodes (× 0.5–0.7) and crashed nodes, diagnosed by
`examples/certifications/diagnose.yaml` through `nvcre certify`'s path (compile → local executor → plan step →
simulated cluster). It counts the cases whose report releases a faulty node or both ends of a bad link. Faults this
strong fail every job they are in, so a release is the planner's bookkeeping, not bad luck.

Only releases the report names are checked: a release group is named up to a size (larger ones carry a count), so
the larger clusters are checked less. Measured on 200 cases (seeds 0–199): 16 before the final check had to hold
the whole rest (`adaptive.rest_settled`; d24f7a0), 0 after. `tests/test_diagnose_release.py` keeps five of them.

Usage: bench/bench_diagnose_release.py [FIRST_SEED] [LAST_SEED_EXCLUSIVE]   (default 0 200; about 40 s)
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CERT = ROOT / "examples" / "certifications" / "diagnose.yaml"


def cluster_spec(seed: int) -> tuple[dict, set[str], list[tuple[str, str]]]:
    """The case of `seed`: (SimulatedCluster spec, faulty nodes, bad links)."""
    r = random.Random(seed)
    n = r.choice([8, 16, 24, 32, 48])
    free = [f"gpu-node-{i:02d}" for i in range(1, n + 1)]
    r.shuffle(free)
    faults: list[dict] = []
    bad: set[str] = set()
    links: list[tuple[str, str]] = []
    for _ in range(r.randint(1, 3)):
        kind = r.choice(["slow-nic", "slow-gpu", "link", "crash"])
        if kind == "link":
            a, b = free.pop(), free.pop()
            faults.append({"nodes": [a, b], "kind": "link", "factor": round(r.uniform(0.5, 0.7), 2)})
            links.append((a, b))
            continue
        x = free.pop()
        bad.add(x)
        faults.append({"node": x, "kind": kind, **({} if kind == "crash" else {"factor": round(r.uniform(0.4, 0.6), 2)})})
    spec = {"apiVersion": "nvcre-hera.dev/v1alpha1", "kind": "SimulatedCluster", "metadata": {"name": f"mix-{seed}"},
            "spec": {"platform": "onprem", "gpu": "h100", "nodes": {"count": n, "perRack": 8}, "seed": seed,
                     "noise": {"sigma": 0.01}, "faults": faults}}
    return spec, bad, links


def released_wrongly(seed: int) -> list[str]:
    """The faulty nodes and bad links (`a-b`) the report of case `seed` releases."""
    from nvcre_hera.local_run import run_local

    spec, bad, links = cluster_spec(seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.yaml"
        path.write_text(yaml.safe_dump(spec))
        report = run_local(str(CERT), str(path)).report
    diagnose = report["categories"][0].get("diagnose") or {}
    released = {x for group in diagnose.get("releases") or [] for x in group.get("nodes") or []}
    return sorted(bad & released) + [f"{a}-{b}" for a, b in links if a in released and b in released]


def main(argv: list[str] | None = None) -> int:
    args = [int(a) for a in (argv if argv is not None else sys.argv[1:])] or [0, 200]
    seeds = range(args[0], args[1] if len(args) > 1 else args[0] + 200)
    wrong = 0
    for seed in seeds:
        found = released_wrongly(seed)
        if found:
            wrong += 1
            print(f"seed {seed}: released {', '.join(found)}")
    print(f"{wrong} of {len(seeds)} cases released a faulty node or both ends of a bad link")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
