"""`make e2e`: every case runs on the real Argo controller (loopback control plane, pods by the pod runner) and on
the local executor; verdict, failed nodes and reasons, category statuses, the workflow phase and every pod node's
phase must agree. Failure paths that only a controller has (stop, terminate, cron) are checked against what Argo
documents. Writes out/e2e/summary.json and ends with the summary line.

Usage: python e2e/differential.py [--state-dir .e2e/run] [--only SUBSTRING] [--jobs 6]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

ROOT = Path(__file__).resolve().parent.parent
CERTS = ROOT / "examples" / "certifications"
CLUSTERS = ROOT / "examples" / "clusters"
OUT = ROOT / "out" / "e2e"


@dataclass
class Case:
    name: str
    cert: str
    cluster: str
    mutate: Callable[[dict], dict] | None = None
    compare: bool = True  # False: Argo-only path, checked against `expect`
    action: str | None = None  # stop | terminate (through the API, as the CLI does)
    expect: dict | None = None


def _judge_breaks(wf: dict) -> dict:
    """The judge pod fails before judging (argparse rejects its summary): a failed judge must still end the run."""
    for t in wf["spec"]["templates"]:
        if t["name"] == "judge":
            args = t["container"]["args"]
            args[args.index("--summary") + 1] = "not-json"
    return wf


def _cluster_file(name: str, body_from: str, edit: Callable[[dict], None]) -> str:
    body = yaml.safe_load((CLUSTERS / body_from).read_text())
    edit(body)
    path = OUT / "clusters" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return str(path)


def cases() -> list[Case]:
    c = lambda n: str(CLUSTERS / f"{n}.yaml")  # noqa: E731
    big = _cluster_file("healthy-256", "healthy-h100-16.yaml",
                        lambda b: b["spec"]["nodes"].update(count=256, perRack=32))
    all_crash = _cluster_file("diagnose-all-crash", "step-crash.yaml", lambda b: b["spec"].update(
        faults=[{"node": f"gpu-node-{i:02d}", "kind": "step-crash"} for i in range(1, 9)]))
    out: list[Case] = []
    for cert in ("examples/certification.yaml", "examples/certifications/intra-node.yaml",
                 "examples/certifications/full-scale.yaml", "examples/certifications/no-thresholds.yaml"):
        for cluster in ("healthy-h100-16", "slow-gpu", "slow-nic", "crash", "unschedulable-midrun"):
            out.append(Case(f"{Path(cert).stem}@{cluster}", cert, c(cluster)))
    diag = "examples/certifications/diagnose.yaml"
    for cluster in ("healthy-h100-16", "two-faulty-64", "link-fault", "flapping", "mixed-faults"):
        out.append(Case(f"diagnose@{cluster}", diag, c(cluster)))
    out += [
        Case("intra-node@256-nodes", "examples/certifications/intra-node.yaml", big),
        Case("intra-node@step-crash", "examples/certifications/intra-node.yaml", c("step-crash")),
        Case("intra-node@step-stall", "examples/certifications/intra-node.yaml", c("step-stall")),
        Case("diagnose@every-test-crashes", diag, all_crash),
        Case("intra-node@judge-fails", "examples/certifications/intra-node.yaml", c("slow-nic"), _judge_breaks),
        Case("full-scale@stop", "examples/certifications/full-scale.yaml", c("healthy-h100-16"), compare=False,
             action="Stop", expect={"phase": "Failed", "exitHandler": "Succeeded"}),
        Case("full-scale@terminate", "examples/certifications/full-scale.yaml", c("healthy-h100-16"), compare=False,
             action="Terminate", expect={"phase": "Failed", "exitHandler": None}),
    ]
    return out


def summary_of(run: Any, report: dict | None) -> dict:
    """What must agree between the engines."""
    prefix = run.name + "."
    pods = {n.name[len(prefix):] if n.name.startswith(prefix) else n.name: n.phase
            for n in run.nodes.values() if n.type == "Pod"}
    if report is None:
        return {"phase": run.phase, "report": None, "pods": pods, "exitHandler": run.exit_handler_phase}
    return {
        "phase": run.phase, "exitHandler": run.exit_handler_phase, "result": report.get("result"),
        "failedNodes": {n["name"]: sorted(n.get("reasons") or []) for n in report.get("failedNodes") or []},
        "categories": [(c["domain"], c["variant"], c["status"]) for c in report.get("categories") or []],
        "pods": pods,
    }


def diff(a: dict, b: dict, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str) for d in diff(a.get(k), b.get(k), f"{path}.{k}")]
    return [] if a == b else [f"{path.lstrip('.')}: local {a!r} != argo {b!r}"]


def run_case(case: Case, state_dir: str, say: Callable[[str], None]) -> dict:
    from nvcre_hera.argo_run import run_argo
    from nvcre_hera.local_run import run_local

    t0 = time.monotonic()
    action_done: list[str] = []

    def on_node(node: dict) -> None:
        if case.action and not action_done and node.get("type") == "Pod" and node.get("phase") == "Running" \
                and ".test(" in node.get("name", "") + "." and "test" in node.get("templateName", ""):
            action_done.append(node["name"].split(".")[0])
            threading.Thread(target=shutdown, args=(node["name"].split(".")[0], case.action)).start()

    def shutdown(workflow: str, how: str) -> None:
        from kubernetes import config

        from nvcre_hera.controlplane import load_state
        from kubernetes import client

        state = load_state(state_dir)
        api = client.CustomObjectsApi(config.new_client_from_config(str(state.admin_kubeconfig)))
        # `argo stop|terminate` merge-patch spec.shutdown (workflow/util/util.go StopWorkflow/TerminateWorkflow)
        api.patch_namespaced_custom_object("argoproj.io", "v1alpha1", state.namespace, "workflows", workflow,
                                           {"spec": {"shutdown": how}})

    argo = run_argo(str(ROOT / case.cert), case.cluster, state_dir=state_dir, mutate=case.mutate, timeout_s=900,
                    on_node=on_node)
    got = summary_of(argo.run, argo.report)
    sim = argo.cluster if isinstance(argo.cluster, dict) else {}
    row = {"case": case.name, "workflow": argo.run.name, "argoPhase": argo.run.phase,
           "realSeconds": round(time.monotonic() - t0, 1), "hung": argo.run.phase == "Running",
           "jobObjectsLeftBehind": sim.get("jobObjectsLeftBehind"), "result": got.get("result"),
           "disagreements": []}
    if case.compare:
        local = run_local(str(ROOT / case.cert), case.cluster, mutate=case.mutate)
        want = summary_of(local.run, local.report)
        row["disagreements"] = diff(want, got)
        row["localPhase"] = local.run.phase
    else:
        row["disagreements"] = diff(case.expect or {}, {k: got.get(k) for k in (case.expect or {})})
        if case.action == "Terminate":
            row["jobObjectsLeftBehind"] = 0 if row["jobObjectsLeftBehind"] is None else row["jobObjectsLeftBehind"]
    mark = "ok " if not row["disagreements"] and not row["hung"] else "BAD"
    say(f"e2e: {mark} {case.name:<40} argo {argo.run.phase:<9} {got.get('result') or '-':<11} "
        f"{row['realSeconds']:6.1f}s left {row['jobObjectsLeftBehind']}"
        + "".join(f"\n      {d}" for d in row["disagreements"][:8]))
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--state-dir", default=str(ROOT / ".e2e" / "run"))
    p.add_argument("--only", default="")
    p.add_argument("--jobs", type=int, default=8)
    args = p.parse_args(argv)
    from nvcre_hera.argo_run import ensure_runner
    from nvcre_hera.controlplane import ensure_up

    t0 = time.monotonic()
    state = ensure_up(args.state_dir)
    ensure_runner(Path(args.state_dir), 100.0)
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            print(line, flush=True)

    todo = _interleaved([c for c in cases() if args.only in c.name])
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(lambda c: _safe(c, args.state_dir, say), todo))
    forbidden = _count_403(Path(args.state_dir))
    summary = {
        "argoVersion": state.versions.get("argo"), "kubernetesVersion": state.versions.get("kubernetes"),
        "workflows": len(rows), "disagreements": sum(len(r["disagreements"]) for r in rows),
        "casesDisagreeing": [r["case"] for r in rows if r["disagreements"]],
        "hung": sum(1 for r in rows if r["hung"]),
        "leftBehind": sum(int(r.get("jobObjectsLeftBehind") or 0) for r in rows),
        "forbidden403": forbidden, "seconds": round(time.monotonic() - t0, 1), "cases": rows,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2))
    ok = not summary["disagreements"] and not summary["hung"] and not summary["leftBehind"] and not forbidden
    print(f"e2e: {summary['workflows']} workflows on Argo {summary['argoVersion']}, {summary['disagreements']} "
          f"disagreements, {summary['hung']} hung, {summary['leftBehind']} left behind, {forbidden} 403s "
          f"({summary['seconds']:.0f} s)")
    return 0 if ok else 1


def _interleaved(todo: list[Case]) -> list[Case]:
    """Round-robin over certifications: runs of one certification queue on its mutex, so spread them out."""
    by_cert: dict[str, list[Case]] = {}
    for case in todo:
        by_cert.setdefault(case.cert, []).append(case)
    queues = sorted(by_cert.values(), key=len, reverse=True)
    out = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def _safe(case: Case, state_dir: str, say: Callable[[str], None]) -> dict:
    try:
        return run_case(case, state_dir, say)
    except Exception as err:  # noqa: BLE001 - one broken case is reported, the others still run
        say(f"e2e: BAD {case.name}: {type(err).__name__}: {err}")
        return {"case": case.name, "hung": False, "disagreements": [f"harness error: {err}"],
                "jobObjectsLeftBehind": None}


def _count_403(state_dir: Path) -> int:
    """Forbidden answers the workflow's service account got: they fail its step, and the runner logs the line."""
    log = state_dir / "logs" / "podrunner.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return sum(1 for line in text.splitlines() if "403" in line and "Forbidden" in line)


if __name__ == "__main__":
    sys.exit(main())
