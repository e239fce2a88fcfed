"""`nvcre-step run`: one test of one group — create the job object (owned by the Workflow), watch it and the
group's nodes, stream the launcher log to stdout (the Argo UI shows it), parse it, write a small metrics JSON,
delete the job. `repeatCount` repeats it. A failed test is data: the step still exits 0 and the judge decides.

Blame (NVCRE's reasons): a node that turns unschedulable or NotReady during the run → HardwareFailureDetected for
that node only; a non-zero exit, a stall or a timeout → WorkloadFailed for the whole group, unless the log names the
host (`gpu-node-03: Test CUDA failure …`, a host's own NET/Socket fallback): then that node, with the line.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Callable

from nvcre_hera.catalog import CatalogEntry, plan_entry, platform_settings
from nvcre_hera.cluster.base import DEFAULT_SCHEDULING_TIMEOUT, Cluster, ConfigMapMissing, JobOutcome
from nvcre_hera.jobs import JobContext, JobPlan, backend_for, job_objects, plan_job
from nvcre_hera.diagnose.nodesets import to_nodes
from nvcre_hera.nodeindex import resolve
from nvcre_hera.parsers import reasons as reason_rules
from nvcre_hera.report.bundle import encode_gpu_results
from nvcre_hera.steps.io import Outputs
from nvcre_hera.steps.metric_outputs import run_outputs
from nvcre_hera.steps.screen import UnknownScreen, screen_category
from nvcre_hera.steps import diagnose_store, screen_values
from nvcre_hera.threshold_select import threshold_metrics
from nvcre_hera.units import parse_duration

LOG_TAIL_LINES = 20
# The pod's stdout is what the Argo UI shows (Argo keeps it as `outputs.result` in the Workflow object only where the
# caller refers to it, and no template of ours does: executor/engine.py result_referenced): print the end of the
# launcher log (nccl-tests' table and footer, or the failure), not megabytes of NCCL INFO.
STREAM_LINES = 12
STREAM_BYTES = 2048
DIAGNOSE_STREAM_LINES = 3  # diagnose runs many small tests: keep each pod's stored output tiny
MEASUREMENT_POLL_S = 10.0
WARNINGS_KEPT = 3


def _parse(entry: CatalogEntry, text: str) -> dict[str, Any]:
    if entry.parser == "exit":
        return {}
    if entry.parser == "nccl":
        from nvcre_hera.parsers.nccl import parse_nccl

        return parse_nccl(text)
    if entry.parser == "dcgm":
        from nvcre_hera.parsers.dcgm import parse_dcgm

        return parse_dcgm(text)
    from nvcre_hera.parsers.training import parse_training

    return parse_training(text)


def _log_reasons(entry: CatalogEntry, parsed: dict, platform: str, options: dict, nodes: list[str]) -> list[dict]:
    if entry.parser == "nccl":
        # A job that never leaves the node (intra-node, NVSwitch loopback) uses no network: nothing to check.
        fabric = platform_settings(platform).get("fabric") if entry.test != "loopback_nvswitch" else None
        reasons = reason_rules.nccl_reasons(parsed, fabric, bool(options.get("transportCheck", True)))
        return reason_rules.attribute_to_nodes(reasons, parsed, nodes)
    if entry.parser == "dcgm":
        return reason_rules.dcgm_reasons(parsed)
    if entry.parser == "exit":  # the job's own outcome is the whole verdict (see _outcome_reasons)
        return []
    return reason_rules.training_reasons(parsed)


def _outcome_reasons(outcome: JobOutcome, timeout_s: float, log_reasons: list[dict],
                     scheduling_timeout_s: float | None = None) -> list[dict]:
    """Why the test failed: a node going bad explains everything; then pods that could not be placed, timeouts and
    stalls; then what the log says, with the bare exit code only when the log names no failure of its own (e.g.
    #wrong > 0 makes mpirun exit 1)."""
    hardware = [{"node": node, "reason": "HardwareFailureDetected",
                 "message": f"node became {state} after {outcome.elapsed_s:.0f}s of the test"}
                for node, state in sorted(outcome.unhealthy_nodes.items())]
    if hardware:
        return hardware
    if outcome.phase == "SchedulingBlocked":  # no node is at fault: the judge blames none (NVCRE ADR-083)
        return [{"node": None, "reason": "WorkloadSchedulingBlocked",
                 "message": f"pods unschedulable for {outcome.blocked_s:.0f}s, past schedulingTimeout "
                            f"{scheduling_timeout_s or 0:.0f}s: {outcome.blocked_message}"}]
    if outcome.phase == "TimedOut":
        return [{"node": None, "reason": "WorkloadFailed",
                 "message": f"timed out after {timeout_s:.0f}s (timeoutPerJob)"}]
    if outcome.phase == "Stalled":
        return [{"node": None, "reason": "WorkloadFailed",
                 "message": f"stalled: no new training step after {outcome.elapsed_s:.0f}s"}]
    if outcome.phase == "Failed" and not any(r["reason"] in ("WorkloadFailed", "DataCorruption") for r in log_reasons):
        code = "" if outcome.exit_code is None else f" with exit code {outcome.exit_code}"
        kept = [r for r in log_reasons if r["reason"] != "MeasurementNotFound"]
        return [{"node": None, "reason": "WorkloadFailed", "message": f"launcher failed{code}"}, *kept]
    return log_reasons


def _stall_check(entry: CatalogEntry, options: dict) -> Callable[[str, float], bool] | None:
    if entry.parser != "training":
        return None
    from nvcre_hera.parsers.training import detect_stall, last_step_progress

    startup = float(options.get("startupStallTimeoutSeconds") or 1200)
    seen = {"steps": 0, "at": 0.0}  # the watcher calls us with the log so far and seconds since the job started

    def check(log: str, elapsed: float) -> bool:
        steps, _ = last_step_progress(log)
        if steps != seen["steps"]:
            seen.update(steps=steps, at=elapsed)
        if steps == 0:
            return elapsed > startup
        return detect_stall(log, elapsed - seen["at"], 3.0)

    return check


def _read_measurement(cluster: Cluster, entry: CatalogEntry, name: str, wait_s: float,
                      succeeded: bool = True) -> tuple[str, dict]:
    """The launcher log and its parse; after success, keep reading until the measurement is complete or `wait_s`
    (measurementTimeout) passes on the cluster's clock. What is still incomplete then is MeasurementNotFound."""
    text = cluster.job_log(name)
    parsed = _parse(entry, text)
    deadline = cluster.now() + wait_s
    while succeeded and entry.parser != "exit" and not reason_rules.measurement_complete(entry.parser, parsed) \
            and cluster.now() < deadline:
        cluster.sleep(min(MEASUREMENT_POLL_S, deadline - cluster.now()))
        text = cluster.job_log(name)
        parsed = _parse(entry, text)
    return text, parsed


def _nic_record(job: JobPlan) -> dict:
    """Which NIC resource this run's workers were given, and from where (the report's per-run record)."""
    if job.rdma_device_access == "hostPath":
        return {"nicResource": None, "nicSource": "hostPath"}
    return {"nicResource": job.nic_resource if job.nic_source != "none" else None, "nicSource": job.nic_source}


def group_context(ctx: JobContext, group: dict) -> JobContext:
    """A group discovery tagged with its architecture (a run over several) runs with that architecture's defaults
    (gpusPerNode, NICs, MNNVL), not those of the run's first."""
    if not group.get("gpu"):
        return ctx
    return replace(ctx, gpu=None if group["gpu"] == "unknown" else str(group["gpu"]))


def objects_for_test(plan: dict[str, Any], category_index: int, group: dict, repeat: int,
                 ctx: JobContext) -> tuple[JobPlan, list[dict]]:
    """One test's resolved job and every object it creates, in creation order (what `run_test` creates and
    `nvcre jobs` prints: one code path, so the preview is what a run would submit)."""
    cat = next(c for c in plan["categories"] if c["index"] == category_index)
    entry = plan_entry(cat)
    job = plan_job(entry, category_index, cat["options"], group, repeat, group_context(ctx, group))
    return job, job_objects(backend_for(entry, plan.get("backend")), job)


def _from_store(store: diagnose_store.Store, group: dict, cluster: Cluster) -> tuple[dict, dict]:
    """(setup, the test's item) from the diagnose store: the Workflow hands a diagnose test only its id."""
    key = diagnose_store.test_key(str(group.get("id")))
    data = diagnose_store.read(cluster, store, (diagnose_store.SETUP_KEY, key))
    try:
        return json.loads(data[diagnose_store.SETUP_KEY]), json.loads(data[key])
    except json.JSONDecodeError as exc:
        raise ValueError(f"the diagnose store ConfigMap {store.name}: not JSON ({exc.msg})") from None


def _diagnose_out(test_id: str, result: list[dict], cluster: Cluster, out: Outputs, log: Callable[[str], None],
                  store: diagnose_store.Store) -> int:
    """A diagnose test's result goes into the diagnose store (the plan step reads it there; the `metrics` output
    stays `[]`). A result the store does not take is one the planner never sees: the test counts as failed
    (plan_step.with_missing)."""
    out.write("metrics", [])
    try:
        cluster.patch_configmap(store.name, {diagnose_store.result_key(test_id): diagnose_store.encode(result)})
    except ConfigMapMissing as exc:
        log(f"run: test {test_id}: its result was not stored: {exc}")
        return 1
    return 0


def run_test(plan: dict[str, Any], category_index: int, group: dict, ctx: JobContext, cluster: Cluster,
             out: Outputs, log: Callable[[str], None], store: diagnose_store.Store | None = None) -> int:
    """One test: its job objects created, watched, read and deleted, `repeatCount` times. A diagnose test (with
    `store`) gets only its id: it reads its item and the node index in the store, names nodes by index, and writes
    one folded result (`diagnose_result`) there."""
    cat = next(c for c in plan["categories"] if c["index"] == category_index)
    diagnose = store is not None
    if diagnose:
        try:
            setup, group = _from_store(store, group, cluster)
        except ValueError as exc:  # diagnose_store.StoreUnreadable, or an entry that is not JSON
            log(f"run: test {group.get('id')}: {exc}; no job created")
            return 1
    if diagnose and "kind" in group:  # single-node screens, one job per node of the item
        return run_screen_batch(plan, category_index, group, ctx, cluster, out, log, setup, store)
    if diagnose:  # a diagnose test names nodes by index (see nvcre_hera.nodeindex)
        indices = to_nodes(group["ranges"]) if "ranges" in group else list(group["nodes"])
        names = resolve(indices, setup, cluster.list_nodes())
        group = {"id": str(group["id"]), "nodes": names}
    ctx = group_context(ctx, group)
    entry = plan_entry(cat)
    options = cat["options"]
    backend = backend_for(entry, plan.get("backend"))
    results = []
    repeats = int(options.get("repeatCount") or 1)
    alive: list[str] = []  # job objects created and not yet deleted, newest last
    try:
        for repeat in range(repeats):
            job, objects = objects_for_test(plan, category_index, group, repeat, ctx)
            unpinned = job.unpinned
            started = cluster.now()
            dependencies = []
            for obj in objects[:-1]:  # e.g. a TrainJob's TrainingRuntime
                dependencies.append(cluster.create_job(obj))
                alive.append(dependencies[-1])
            name = cluster.create_job(objects[-1])
            alive.append(name)
            log(f"run: {entry.key} group {group['id']} ({len(job.nodes)} node(s)) repeat {repeat}: created "
                f"{backend.kind} {name}")
            # Unpinned: the scheduler picks the nodes, so the group's names are candidates, not where the pods run
            watched = [] if unpinned else job.nodes
            sched_s = parse_duration(str(options.get("schedulingTimeout") or DEFAULT_SCHEDULING_TIMEOUT))
            outcome = cluster.wait_for_job(name, watched, job.timeout_s, _stall_check(entry, options),
                                           scheduling_timeout_s=sched_s)
            if outcome.blocked_s:
                log(f"run: {name} WorkloadSchedulingBlocked for {outcome.blocked_s:.0f}s (not counted against "
                    f"timeoutPerJob; schedulingTimeout {sched_s:.0f}s): {outcome.blocked_message}")
            text, parsed = _read_measurement(cluster, entry, name, parse_duration(options["measurementTimeout"]),
                                             outcome.phase == "Succeeded")
            if entry.parser == "training":  # goodput needs the job's wall time, which only the watcher knows
                from nvcre_hera.parsers.training import goodput_ratio

                parsed["goodputRatio"] = goodput_ratio(parsed, outcome.elapsed_s - outcome.blocked_s)
            if not diagnose or repeat == repeats - 1:  # diagnose: one log excerpt per test keeps the Workflow small
                _stream_log(text, log, lines=DIAGNOSE_STREAM_LINES if diagnose else STREAM_LINES)
            reasons = _outcome_reasons(outcome, job.timeout_s,
                                       _log_reasons(entry, parsed, ctx.platform, options, job.nodes), sched_s)
            if entry.parser == "training":  # torchrun names the root cause's host: the launcher failure is its own
                reasons = reason_rules.attribute_to_nodes(reasons, parsed, job.nodes, "training")
            if unpinned:  # no node can be blamed for a run it was not known to host: the group is (README)
                reasons = [{**r, "node": None} for r in reasons]
            deleted = cluster.delete_job(name)
            alive.remove(name)
            for dep in reversed(dependencies):
                deleted = cluster.delete_job(dep) and deleted
                alive.remove(dep)
            metrics = reason_rules.metrics_from(entry.parser, parsed)
            status = "failed" if reasons else "ok"
            results.append({
                "category": entry.key, "group": group["id"], "nodes": [] if unpinned else job.nodes, "status": status,
                **({"placement": "Unpinned", "nodeCount": len(job.nodes)} if unpinned else {}),
                **_nic_record(job),
                "metrics": metrics, "samples": _samples(parsed) if entry.parser == "nccl" else [],
                # per GPU and test, one letter each (nvcre_hera/report/bundle.py): the bundle's DCGM rows
                **({"gpuResults": encode_gpu_results(parsed)} if entry.parser == "dcgm" else {}),
                "reasons": reasons, "runtimeSec": round(cluster.now() - started, 1), "jobName": name,
                "jobDeleted": deleted,
                # the report's failure log: only failures need one, and it is stored with the Workflow
                "logTail": "\n".join(text.splitlines()[-LOG_TAIL_LINES:]) if reasons else "",
                "repeat": repeat, "transport": parsed.get("transport"),
                # NCCL WARN lines are no failure evidence, but the report keeps the first few
                "warnings": [str(w)[:200] for w in (parsed.get("warnings") or [])[:WARNINGS_KEPT]],
                # WorkloadSchedulingBlocked time (off timeoutPerJob) and the scheduler's message, for the report
                **({"schedulingBlocked": {"seconds": round(outcome.blocked_s, 1),
                                          "message": outcome.blocked_message[:300]}} if outcome.blocked_s else {}),
            })
            summary = ", ".join(f"{k}={v:.4g}" for k, v in metrics.items()) or "no measurement"
            log(f"run: {name} {outcome.phase} after {outcome.elapsed_s:.0f}s: {summary}; "
                f"{'; '.join(r['reason'] for r in reasons) or 'no problems'}; job deleted: {deleted}")
    except BaseException:
        _delete_on_stop(cluster, alive, log)
        raise
    # the GPU is not known to this step: keep every metric a threshold may judge on any GPU (a few bytes)
    if diagnose:
        return _diagnose_out(group["id"], diagnose_result(group["id"], results,
                                                          dict.fromkeys(threshold_metrics(options), "")),
                             cluster, out, log, store)
    out.write("metrics", results)
    for name, value in run_outputs(group["id"], results[0]["nodes"] if results else [], results).items():
        out.write(name, value)  # what the compiled workflow's nvcre_nccl_busbw_gbs gauge reads
    return 0


def _delete_on_stop(cluster: Cluster, alive: list[str], log: Callable[[str], None]) -> None:
    """Nothing lost: a step that crashes, or is stopped (SIGTERM from `argo stop|terminate`, the pod's deadline or an
    eviction arrives as SystemExit, see steps/main.py), still deletes the job objects it created, newest first.
    Argo's exit handler does not run on terminate, so this is the only cleanup such a run gets."""
    for name in reversed(alive):
        try:
            deleted = cluster.delete_job(name)
        except Exception as err:  # noqa: BLE001 - report it and try the others
            deleted = False
            log(f"run: could not delete {name} while stopping: {err}")
        log(f"run: stopping: deleted {name}: {deleted}")


def run_screen_batch(plan: dict[str, Any], category_index: int, group: dict, ctx: JobContext, cluster: Cluster,
                     out: Outputs, log: Callable[[str], None], setup: dict, store: diagnose_store.Store) -> int:
    """A batch of single-node diagnose screens: one job of the screen's kind per node, every one created before any
    is awaited (they share no node and use no switch port, so they run at once), `repeatCount` times. One value
    per node comes back (`values`, in the order of the batch's nodes; None where that node's job failed, with its
    reasons under `why`), the worst of its repeats: one test item and one small result for the batch keep a
    round of screens on a large cluster within the Workflow's size. The result keeps its `kind`: the verdict
    holds no category threshold against a screen (plan_step.measured)."""
    kind = group.get("kind")
    indices = to_nodes(group["ranges"]) if "ranges" in group else list(group["nodes"])
    base: dict[str, Any] = {"id": str(group.get("id")), "kind": kind, "jobs": 0, "deleted": 0}
    try:
        cat = screen_category(kind, next(c for c in plan["categories"] if c["index"] == category_index))
    except UnknownScreen as err:  # a failed test, as the planner reads it; no job was created
        log(f"run: test {group.get('id')}: {err}; no job created")
        return _diagnose_out(base["id"], [{**base, "status": "failed", "busBandwidthGBps": None,
                                           "reasons": [str(err)]}], cluster, out, log, store)
    plan = {**plan, "categories": [cat if c["index"] == category_index else c for c in plan["categories"]]}
    names = resolve(indices, setup, cluster.list_nodes())
    entry, options = plan_entry(cat), cat["options"]
    sched_s = parse_duration(str(options.get("schedulingTimeout") or DEFAULT_SCHEDULING_TIMEOUT))
    measure_s = parse_duration(options["measurementTimeout"])
    worst: list[float | None] = [float("inf")] * len(names)
    node_sec = 0.0  # each node's job from the batch's creation until the step read its measurement
    why: dict[str, list[str]] = {}
    leftover: list[str] = []
    alive: list[str] = []  # job objects created and not yet deleted, newest last
    try:
        for repeat in range(int(options.get("repeatCount") or 1)):
            started = []
            created_at = cluster.now()
            for i, node in enumerate(names):
                one = {"id": f"{base['id']}-n{i}", "nodes": [node]}
                job, objects = objects_for_test(plan, category_index, one, repeat, group_context(ctx, one))
                for obj in objects:  # e.g. a TrainJob's TrainingRuntime first
                    alive.append(cluster.create_job(obj))
                base["jobs"] += 1
                started.append((i, job, alive[-len(objects):]))
            log(f"run: {kind} screens {base['id']} repeat {repeat}: {len(started)} single-node job(s) created")
            for i, job, created in started:
                name = created[-1]
                outcome = cluster.wait_for_job(name, job.nodes, job.timeout_s, None, scheduling_timeout_s=sched_s)
                _text, parsed = _read_measurement(cluster, entry, name, measure_s, outcome.phase == "Succeeded")
                node_sec += cluster.now() - created_at
                reasons = _outcome_reasons(outcome, job.timeout_s,
                                           _log_reasons(entry, parsed, ctx.platform, options, job.nodes), sched_s)
                deleted = True
                for obj in reversed(created):
                    deleted = cluster.delete_job(obj) and deleted
                    alive.remove(obj)
                base["deleted"] += int(deleted)
                if not deleted:
                    leftover.append(name)
                value = reason_rules.metrics_from(entry.parser, parsed).get("busBandwidthGBps")
                if reasons or value is None:
                    worst[i] = None
                    why[str(i)] = sorted({str(r["reason"]) for r in reasons}) or ["MeasurementNotFound"]
                    log(f"run: {name} on {job.nodes[0]}: {'; '.join(why[str(i)])}")
                elif worst[i] is not None:
                    worst[i] = min(worst[i], float(value))
    except BaseException:
        _delete_on_stop(cluster, alive, log)
        raise
    values = [None if w is None else round(w, 1) for w in worst]
    log(f"run: {kind} screens {base['id']}: {sum(v is not None for v in values)} of {len(values)} node(s) measured")
    return _diagnose_out(base["id"], [{**base, "status": "ok", "values": screen_values.pack(values),
                                       "nodeSec": round(node_sec, 1),
                                       **({"why": why} if why else {}),
                                       **({"leftover": leftover} if leftover else {})}], cluster, out, log, store)


def diagnose_result(test_id: str, runs: list[dict], thresholds: dict) -> list[dict]:
    """The planner's input for one diagnose test, its repeats folded: the worst bandwidth (a failed repeat fails
    the test), how many jobs ran and were deleted (names only of those left behind: this travels up the
    recursion), and each threshold metric's lowest and highest value over the repeats that ran their workload."""
    values = [r["metrics"].get("busBandwidthGBps") for r in runs]
    failed = any(r["status"] != "ok" for r in runs) or any(v is None for v in values)
    out: dict[str, Any] = {"id": test_id, "busBandwidthGBps": None if failed else min(values),
                           "status": "failed" if failed else "ok", "jobs": len(runs),
                           "deleted": sum(1 for r in runs if r["jobDeleted"])}
    said = sorted({str(x["reason"]) for r in runs if r["status"] != "ok" for x in r.get("reasons") or []})
    if failed and said:
        out["reasons"] = said  # names only: the planner keeps the most specific for the suspects it accuses
    leftover = [r["jobName"] for r in runs if not r["jobDeleted"]]
    if leftover:
        out["leftover"] = leftover
    # GPU node-seconds the jobs held, each from its creation until its measurement was read (the report's
    # measured node-minutes); a run not timed leaves the sum out: a partial sum is never reported as the whole
    if runs and all(r.get("runtimeSec") is not None for r in runs):
        out["nodeSec"] = round(sum(float(r["runtimeSec"]) * max(len(r["nodes"]), int(r.get("nodeCount") or 0))
                                   for r in runs), 1)
    if len(runs) > 1:
        out["repeats"] = len(runs)
    ok = [r["metrics"] for r in runs if r["status"] == "ok"]
    ranges = {m: [min(v), max(v)] for m in thresholds
              if ok and len(v := [x[m] for x in ok if x.get(m) is not None]) == len(ok)}
    if ranges:
        out["ext"] = ranges
    if ok and len(ranges) < len(thresholds):
        out["missing"] = sorted(set(thresholds) - set(ranges))
    return [out]


def _stream_log(text: str, log: Callable[[str], None], lines: int) -> None:
    all_lines = text.splitlines()
    shown = all_lines[-lines:] if lines else []
    while len(shown) > 1 and sum(len(line) + 1 for line in shown) > STREAM_BYTES:
        shown = shown[1:]
    log(f"--- launcher log ({len(shown)} of {len(all_lines)} lines) ---")
    for line in shown:
        log(line)
    log("--- end of launcher log ---")


def _samples(parsed: dict) -> dict[str, list]:
    """Out-of-place bandwidth by message size, the largest 8 sizes (the card's bandwidth table), as columns: each
    test's output travels three times through the Workflow (its node, the fan-out's aggregate, the judge's
    arguments), and row objects repeating every key made a 256-node run's judge arguments overflow the 1 MiB
    ConfigMap Argo offloads them to."""
    rows = [(r.get("sizeBytes"), (r.get("outOfPlace") or {})) for r in parsed.get("rows") or []]
    rows = [(size, oop) for size, oop in rows if oop.get("busBandwidthGBps") is not None][-8:]
    return {"sizeBytes": [size for size, _ in rows],
            "algBandwidthGBps": [oop.get("algBandwidthGBps") for _, oop in rows],
            "busBandwidthGBps": [oop.get("busBandwidthGBps") for _, oop in rows]}


__all__ = ["diagnose_result", "group_context", "objects_for_test", "run_screen_batch", "run_test"]
