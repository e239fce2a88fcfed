"""Diagnose through the local executor, screens on and off: the 64-node rows of docs/diagnose-screens.md.

    python bench/bench_diagnose_local.py [on|off]

Runs `examples/certifications/diagnose.yaml` (with `diagnoseScreens: []` for `off`) on example clusters scaled to
64 nodes, 8 per rack (slow-nic with σ 2 % and 1 % dips), through the same path as `nvcre certify`; prints the
simulated wall seconds, the suspects, the infrastructure faults and the job objects left behind. A measurement:
it checks no target.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CERT = ROOT / "examples" / "certifications" / "diagnose.yaml"
NODES = 64
ROWS = (("two-faulty-64", None), ("slow-nic", {"sigma": 0.02, "dipProbability": 0.01}), ("slow-gpu", None),
        ("mixed-faults", None), ("corrupt-and-socket", None), ("crash", None), ("flapping", None),
        ("link-fault", None), ("healthy-h100-16", None))


def main(argv: list[str] | None = None) -> int:
    from nvcre_hera.local_run import run_local

    screens = (argv or sys.argv[1:] or ["on"])[0]
    if screens not in ("on", "off"):
        print("usage: bench_diagnose_local.py [on|off]", file=sys.stderr)
        return 2
    cert = yaml.safe_load(CERT.read_text())
    if screens == "off":
        cert["spec"]["diagnoseScreens"] = []
    with tempfile.TemporaryDirectory() as tmp:
        cert_path = Path(tmp) / "diagnose.yaml"
        cert_path.write_text(yaml.safe_dump(cert))
        for name, noise in ROWS:
            spec = yaml.safe_load((ROOT / "examples" / "clusters" / f"{name}.yaml").read_text())
            spec["spec"]["nodes"].update(count=NODES, perRack=8)
            if noise:
                spec["spec"]["noise"] = noise
            cluster = Path(tmp) / f"{name}.yaml"
            cluster.write_text(yaml.safe_dump(spec))
            local = run_local(str(cert_path), str(cluster))
            ex = local.report["execution"]
            d = local.report["categories"][0].get("diagnose") or {}
            print(f"{name:<20} screens {screens:<3} {ex['simulatedWallTimeSec']:>7} s  suspects "
                  f"{sorted(s['node'] for s in d.get('suspects') or [])}  infrastructure "
                  f"{[f.get('between') for f in d.get('infrastructureFaults') or []]}  "
                  f"left behind {ex['jobObjectsLeftBehind']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
