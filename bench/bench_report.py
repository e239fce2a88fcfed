"""Goals of the results people read (issue 12): at 1,024 nodes the HTML report weighs ≤ 300 KB and headless
chromium renders it in ≤ 2 s; a 1,024-node `certify` prints ≤ 1 progress line per finished test plus one per
category and a final summary, and the failing test's ✗ line comes before its category's summary.

One run of `nvcre certify` (fresh process, as a user runs it) of the intra-node certification (2 categories, one
test per node) on a simulated 1,024-node H100 cluster with one slow NIC; then `nvcre report --format html` of its
report.json, rendered by `chromium --headless --screenshot` (best of three, against an empty page's time, the
browser's own start). Exit 1 on a miss; chromium missing is reported, not counted as a pass.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NVCRE = str(Path(sys.executable).parent / "nvcre")
NODES = 1024
PAGE_KB_GOAL = 300
RENDER_S_GOAL = 2.0
CLUSTER = f"""apiVersion: nvcre-hera.dev/v1alpha1
kind: SimulatedCluster
metadata: {{name: h100-{NODES}}}
spec:
  platform: aws
  gpu: h100
  nodes: {{count: {NODES}, perRack: 8}}
  seed: 7
  noise: {{sigma: 0.015}}
  faults:
    - {{node: gpu-node-07, kind: slow-nic, factor: 0.6}}
"""


def _chromium_seconds(chromium: str, page: Path, out: Path) -> float:
    times = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as profile:
            argv = [chromium, "--headless", "--disable-gpu", f"--user-data-dir={profile}", "--hide-scrollbars",
                    "--window-size=1280,4000", f"--screenshot={out}", page.as_uri()]
            if os.geteuid() == 0:
                argv.insert(1, "--no-sandbox")
            start = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True, timeout=120)
            times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "cluster.yaml").write_text(CLUSTER)
        cert = ROOT / "examples" / "certifications" / "intra-node.yaml"
        start = time.perf_counter()
        run = subprocess.run([NVCRE, "certify", str(cert), "--cluster", str(d / "cluster.yaml"), "--out",
                              str(d / "out")], capture_output=True, text=True, timeout=1800)
        took = time.perf_counter() - start
        if run.returncode not in (0, 1):
            print(f"certify failed (exit {run.returncode}): {run.stderr[-500:]}")
            return 1
        lines = [ln for ln in run.stdout.split("\n\nCertification Report")[0].splitlines() if ln.startswith("[")]
        tests = [ln for ln in lines if re.search(rf" \d+/{NODES}  ", ln)]
        cats = [ln for ln in lines if f"/{NODES} done" in ln]
        budget = len(tests) + len(cats) + 1
        fail_at = next((i for i, ln in enumerate(lines) if "✗" in ln and "gpu-node-07" in ln), None)
        cat_at = next((i for i, ln in enumerate(lines) if "nccl-loopback: " in ln and "done" in ln), None)
        ok = len(lines) <= budget and fail_at is not None and cat_at is not None and fail_at < cat_at
        failed += not ok
        print(f"certify {NODES} nodes: {len(lines)} progress lines for {len(tests)} tests in {len(cats)} categories "
              f"(budget {budget}); the failing test's line is #{'-' if fail_at is None else fail_at + 1}, its "
              f"category's summary #{'-' if cat_at is None else cat_at + 1}   ({took:.1f} s)   {'ok' if ok else 'MISSED'}")
        page = d / "report.html"
        html = subprocess.run([NVCRE, "report", str(d / "out" / "report.json"), "--format", "html"],
                              capture_output=True, text=True, check=True).stdout
        page.write_text(html)
        kb = len(html.encode()) / 1024
        failed += kb > PAGE_KB_GOAL
        print(f"report.html {NODES} nodes: {kb:.0f} KB, {html.count('<svg')} charts (report.json "
              f"{(d / 'out' / 'report.json').stat().st_size / 1024:.0f} KB)   goal ≤ {PAGE_KB_GOAL} KB   "
              f"{'ok' if kb <= PAGE_KB_GOAL else 'MISSED'}")
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if chromium is None:
            print("render: chromium is not installed (make browser-deps as root): not measured")
            return 1
        empty = d / "empty.html"
        empty.write_text("<!DOCTYPE html><html><body></body></html>")
        base = _chromium_seconds(chromium, empty, d / "empty.png")
        full = _chromium_seconds(chromium, page, d / "page.png")
        render = max(0.0, full - base)
        failed += render > RENDER_S_GOAL
        print(f"render {NODES} nodes: {render:.2f} s beyond the browser's start ({full:.2f} s in all, empty page "
              f"{base:.2f} s)   goal ≤ {RENDER_S_GOAL:.0f} s   {'ok' if render <= RENDER_S_GOAL else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
