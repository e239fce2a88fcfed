"""`nvcre-step plan`: one diagnose round. Calls the pure planner with the state and the last round's results, and
writes the next round's tests (empty when done, which makes Argo skip the fan-out and end the recursion), the new
state, `next` (`[0]` to recurse, `[]` to stop) and, when done, the final verdict.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from nvcre_hera.cluster.base import Cluster, ConfigMapMissing
from nvcre_hera.diagnose import near_miss_pack
from nvcre_hera.diagnose.nodesets import from_nodes, to_nodes
from nvcre_hera.diagnose.planner import plan
from nvcre_hera.nodeindex import resolve
from nvcre_hera.steps import diagnose_store, packed_json, screen_values
from nvcre_hera.steps.io import Outputs, flatten_runs


UNRESOLVED_NAMES = 64
NAMED_NODES = 16  # a node set of the round history up to this size is named node by node
NAMED_RANGES = 16  # ranges kept per node set (its count stays exact): the verdict travels up every level
NAMES_MAX = 64  # names the history sends in all: release groups first, then the small sets cleared per round


def compact_results(aggregated: Any) -> list[dict]:
    """The planner's results: one per test (the run step already folded its repeats into the worst of them).
    A screen batch's values arrive packed (steps/screen_values.py); values that do not decode are left out, so the
    planner takes the batch as one that sent nothing back."""
    out = []
    for run in flatten_runs(aggregated):
        if "id" not in run:
            continue
        values = screen_values.unpack(run["values"]) if "values" in run else None
        out.append({"id": run["id"], "busBandwidthGBps": run.get("busBandwidthGBps"),
                    "status": run.get("status", "failed"),
                    **({"reasons": run["reasons"]} if run.get("reasons") else {}),
                    # a screen batch: one value per node, and the reasons of the nodes whose job failed
                    **({"values": values} if values is not None else {}),
                    **({"why": run["why"]} if run.get("why") else {})})
    return out


def with_missing(results: list[dict], issued: list[str]) -> list[dict]:
    """A test the last round issued that sent no result (its pod crashed, hit its deadline or was evicted, so the
    fan-out left it out of its aggregated output) counts as a failed test: no evidence is never a pass."""
    seen = {r["id"] for r in results}
    return [*results, *({"id": t, "busBandwidthGBps": None, "status": "failed", "missing": True}
                        for t in issued if t not in seen)]


def measured(carried: dict | None, aggregated: Any, thresholds: dict) -> dict:
    """Lowest and highest value of each threshold metric over every test that ran its workload (the verdict judges
    the thresholds on them: exact for the interval thresholds diagnose accepts), the tests that measured nothing
    for a metric, and the most repeats one test ran. Carried beside the planner state: a few bytes at any size.
    A single-node screen (a result with `kind`, steps/screen.py) measures another path than the category's test
    (a node's own NICs, or its NVLink alone), so the category's thresholds are never held against it."""
    out = json.loads(json.dumps(carried or {"metrics": {}, "runs": 0, "repeats": 0}))
    for run in flatten_runs(aggregated):
        out["repeats"] = max(out["repeats"], int(run.get("repeats") or 1))
        if run.get("status") != "ok" or "kind" in run:
            continue
        out["runs"] += 1
        ranges = run.get("ext") or {}
        for metric in thresholds:
            entry = out["metrics"].setdefault(metric, {"min": None, "max": None, "n": 0, "missing": 0})
            if metric not in ranges:
                entry["missing"] += 1
                continue
            low, high = ranges[metric]
            entry["min"] = low if entry["min"] is None else min(entry["min"], low)
            entry["max"] = high if entry["max"] is None else max(entry["max"], high)
            entry["n"] += 1
    return out


def job_ledger(ledger: dict | None, aggregated: Any, missing: int = 0) -> dict:
    """Job objects created and deleted so far, carried beside the planner's state so the report can say that
    every one of them is gone (names only of those not deleted: the ledger travels down the recursion), and the
    GPU node-seconds the jobs were measured to hold (`nodeSec`; `untimed`: results with jobs and no time, and the
    `missing` tests that sent no result, whose jobs nobody timed)."""
    out = {"created": 0, "deleted": 0, "leftover": [], "nodeSec": 0.0, "untimed": 0, **(ledger or {})}
    for run in flatten_runs(aggregated):
        out["created"] += int(run.get("jobs") or 0)
        out["deleted"] += int(run.get("deleted") or 0)
        if run.get("leftover"):
            out["leftover"] = [*out["leftover"], *run["leftover"]]
        if isinstance(run.get("nodeSec"), (int, float)):
            out["nodeSec"] = round(out["nodeSec"] + float(run["nodeSec"]), 1)
        elif int(run.get("jobs") or 0):
            out["untimed"] += 1
    out["untimed"] += missing
    return out


def _flat(value: Any) -> list[int]:
    if isinstance(value, list):
        return [i for v in value for i in _flat(v)]
    return [value] if isinstance(value, int) else []


def _release_indices(ranges: list) -> list[int]:
    """The indices a release group is named by: every node of a small group, else each kept range's ends."""
    if sum(hi - lo for lo, hi in ranges) <= NAMED_NODES:
        return to_nodes(ranges)
    return [i for lo, hi in ranges[:NAMED_RANGES] for i in (lo, hi - 1)]


def _history_indices(answer: dict) -> list[int]:
    """The indices the history names, at most NAMES_MAX: the release groups' (the nodes to hand back), then every
    node of each small set cleared per round, round by round, while they fit (a larger set keeps index ranges)."""
    shown: set[int] = set()
    for g in answer.get("releases") or []:
        shown |= set(_release_indices(g["nodes"]))
    for h in answer.get("history") or []:
        cleared = h.get("cleared") or []
        if 0 < _size(cleared) <= NAMED_NODES and len(shown | set(to_nodes(cleared))) <= NAMES_MAX:
            shown |= set(to_nodes(cleared))
    return sorted(shown)


def _size(ranges: list) -> int:
    return sum(hi - lo for lo, hi in ranges)


def compact_history(answer: dict, names: dict[int, str]) -> dict:
    """The round history and release groups for the verdict, compact (it is stored at every level of the
    recursion), by position: `rounds` ``[round, tests, failed, [[nodes per test, tests]...], cleared ranges (only
    when small enough to be named, else []), cleared count, reused count, doubted count, ended]``, `released`
    ``[round, ended, ranges (at most NAMED_RANGES), count]`` (counts exact), and the names of just the indices the
    report shows (`_history_indices`), their common prefix once. The judge expands it (judge.py `_round_history`;
    fields in docs/internals.md)."""
    named = set(_history_indices(answer))
    # a set cleared in a round travels as ranges only when it is named; else its count says it (the state has it)
    rounds = [[h["round"], h["tests"], h.get("failed"), [[x["nodes"], x["tests"]] for x in h["testSizes"]],
               h.get("cleared") if set(to_nodes(h.get("cleared") or [])) <= named else [],
               _size(h.get("cleared") or []), _size(h.get("reused") or []), _size(h.get("doubted") or []),
               h.get("endedAfterSec")] for h in answer.get("history") or []]
    released = [[g["round"], g.get("releasedAfterSec"), g["nodes"][:NAMED_RANGES], _size(g["nodes"])]
                for g in answer.get("releases") or []]
    shown = [i for i in sorted(named) if i in names]
    # names share a prefix (gpu-node-0001 …): sent once, then each name's rest
    prefix = os.path.commonprefix([names[i] for i in shown]) if shown else ""
    return {"rounds": rounds, "released": released,
            "names": {"p": prefix, "i": shown, "s": [names[i][len(prefix):] for i in shown]}}


def named_verdict(answer: dict, setup: dict, cluster: Cluster) -> dict:
    """The planner's final answer with node indices turned into names (the report names nodes)."""
    suspects = list(answer.get("suspects") or [])
    faults = list(answer.get("infrastructureFaults") or [])
    unresolved = list(answer.get("unresolved") or [])
    indices = sorted({s["node"] for s in suspects} | {i for f in faults for i in _flat(f.get("between"))}
                     | {i for group in unresolved for i in group[:UNRESOLVED_NAMES]}
                     | set(_history_indices(answer)))
    names = dict(zip(indices, resolve(indices, setup, cluster.list_nodes()))) if indices else {}

    def named(value: Any) -> Any:  # `between` is [a, b] or [[side a], [side b]]
        return [named(v) for v in value] if isinstance(value, list) else names[value]

    return {
        "suspects": [{**s, "node": names[s["node"]]} for s in suspects],
        "infrastructureFaults": [{**f, "between": named(f.get("between") or [])} for f in faults],
        # groups that failed with nothing found to blame: reported, so they can never read as a pass (names of
        # the first nodes only: the verdict travels up every level of the recursion)
        "unresolved": [{"nodeCount": len(group), "nodes": named(group[:UNRESOLVED_NAMES]),
                        **({"why": why} if why else {})}  # a group of near misses the screens could not decide
                       for group, why in zip(unresolved, answer.get("unresolvedWhy") or [None] * len(unresolved))],
        "stats": answer.get("stats") or {},
        "nodeCount": setup["config"].get("nodeCount"),
        "history": compact_history(answer, names),
    }


def _reading(clock: Callable[[], Any] | None) -> float | None:
    """The clock's reading, None when there is none (the history then records round numbers only)."""
    value = clock() if clock is not None else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


STATE_PREFIX = packed_json.PREFIX


def _screens(state: dict) -> dict | None:
    planner = state.get("planner")
    sc = planner.get("sc") if isinstance(planner, dict) else None
    return sc if isinstance(sc, dict) else None


def _with_screens(state: dict, sc: dict) -> dict:
    return {**state, "planner": {**state["planner"], "sc": sc}}


def pack_state(state: dict) -> str:
    """The carried state as the JSON string `"nvcre-gz1:<base64 of gzip of its JSON>"`. Argo stores it five times a
    round (the plan pod's output and its Retry parent's, the next level's input, the next plan pod's and its Retry
    parent's): at 4096 nodes in 10 rounds that was 150 KiB of the 256 KiB budget as plain JSON, and the range lists
    it holds compress about 2x. The screens' near-miss record goes by columns (`near_miss_pack`: about half)."""
    sc = _screens(state)
    if sc and sc.get("nm"):
        by_columns = {**{k: v for k, v in sc.items() if k != "nm"}, "nmc": near_miss_pack.pack(sc["nm"])}
        state = _with_screens(state, by_columns)
    return json.dumps(packed_json.pack(state))


def unpack_state(state: Any) -> dict:
    """The state a plan step was given: packed (pack_state), a plain dict (older workflows), or none yet (the first
    round: `null`). Anything else is an error, never a fresh start: that would forget what was measured."""
    if state is None:
        return {}
    if isinstance(state, dict):
        return state
    if packed_json.is_packed(state):
        try:
            value = packed_json.unpack(state)
        except ValueError as exc:
            raise ValueError(f"the diagnose state {exc}") from None
        if isinstance(value, dict):
            sc = _screens(value)
            if sc and "nmc" in sc:
                try:
                    nm = near_miss_pack.unpack(sc["nmc"])
                except ValueError as exc:
                    raise ValueError(f"the diagnose state does not decode: {exc}") from None
                value = _with_screens(value, {**{k: v for k, v in sc.items() if k != "nmc"}, "nm": nm})
            return value
    raise ValueError(f"the diagnose state is not one this plan step wrote: {str(state)[:60]!r}")


def _from_store(setup: dict | None, state: Any, cluster: Cluster,
                store: diagnose_store.Store) -> tuple[int, dict, dict, list]:
    """(level, setup, carried state, the runs the last round's tests stored) from the store; level 0 creates it
    and takes the setup it was given (the levels below get none: the store has it)."""
    if state is None:
        if not isinstance(setup, dict):
            raise ValueError("the first plan step got no setup")
        cluster.create_configmap(diagnose_store.manifest(store))  # False for a retried first plan step: reuse it
        return 0, setup, {}, []
    try:
        level = diagnose_store.level_of(state)
    except ValueError as exc:
        raise ValueError(f"the diagnose state: {exc}") from None
    data = diagnose_store.read(cluster, store, (diagnose_store.SETUP_KEY, diagnose_store.state_key(level)))
    carried = unpack_state(data[diagnose_store.state_key(level)])
    runs = []
    for test_id in carried.get("issued") or []:
        stored = data.get(diagnose_store.result_key(test_id))
        try:
            runs.append(json.loads(stored) if stored is not None else [])
        except json.JSONDecodeError:
            runs.append([])  # not a result: the test counts as one that sent none (with_missing)
    return level, json.loads(data[diagnose_store.SETUP_KEY]), carried, runs


def _items(tests: list[dict]) -> list[dict]:
    """The tests as the run step takes them: ranges, not index lists; `kind` (a single-node screen, steps/screen.py)
    only when the planner gave one."""
    return [{"id": t["id"], "ranges": from_nodes(t["nodes"]), "network": t.get("network", True),
             **({"kind": t["kind"]} if "kind" in t else {}), **({"each": True} if t.get("each") else {})}
            for t in tests]


def _store_round(store: diagnose_store.Store, cluster: Cluster, level: int, setup: dict, carried: dict,
                 new_state: dict, items: list[dict]) -> None:
    """One patch: the new state and the new tests' items in; out, what the plan step before this one read (its
    state, its tests' items and results), which no step reads again. What this one read stays: a retry reads it."""
    gone = [key(t) for t in carried.get("consumed") or [] for key in (diagnose_store.test_key,
                                                                      diagnose_store.result_key)]
    cluster.patch_configmap(store.name, {
        **({diagnose_store.SETUP_KEY: diagnose_store.encode(setup)} if level == 0 else {}),
        diagnose_store.state_key(level + 1): json.loads(pack_state({**new_state,
                                                                   "consumed": carried.get("issued") or []})),
        **{diagnose_store.test_key(item["id"]): diagnose_store.encode(item) for item in items},
        **({diagnose_store.state_key(level - 1): None} if level else {}), **dict.fromkeys(gone)})


def plan_step(setup: dict | None, state: Any, cluster: Cluster, out: Outputs, log: Callable[[str], None],
              store: diagnose_store.Store, clock: Callable[[], float] | None = None) -> int:
    """One round. The setup (after the first level), the state and the last round's results come from the diagnose
    store, and the new state and test items go there (steps/diagnose_store.py); the Workflow gets the state's key
    and the tests' ids. `clock` dates the round history: the wall clock in a pod (pods run on different machines,
    so a monotonic clock would not compare), the simulated cluster's clock locally; the plan step starts once the
    previous round has ended, so its reading is when that round ended."""
    try:
        level, setup, carried, aggregated = _from_store(setup, state, cluster, store)
    except ValueError as exc:  # the store, the setup or the state missing or unreadable: no verdict, never a restart
        log(f"plan: {exc}: no verdict")
        return 1
    seen = measured(carried.get("measured"), aggregated, setup["config"].get("thresholds") or {})
    results = with_missing(compact_results(aggregated), list(carried.get("issued") or []))
    missing = sum(1 for r in results if r.get("missing"))
    ledger = job_ledger(carried.get("jobs"), aggregated, missing)
    if missing:
        log(f"plan: {missing} test(s) of the last round sent no result: counted as failed")
    now = _reading(clock or getattr(cluster, "now", None))
    answer = plan(carried.get("planner"), results, setup["config"], now=now)
    tests = answer["tests"]
    new_state = {"planner": answer["state"], "jobs": ledger, "measured": seen, "issued": [t["id"] for t in tests]}
    items = _items(tests)
    try:
        _store_round(store, cluster, level, setup, carried, new_state, items)
    except ConfigMapMissing as exc:
        log(f"plan: {exc}: no verdict")
        return 1
    out.write("state", json.dumps(diagnose_store.ref(level + 1)))
    out.write("tests", [{"id": item["id"]} for item in items])  # the run step reads the item in the store
    out.write("next", [0] if tests else [])
    # the verdict is handed up every level of the recursion (compile/diagnose.py FINAL_EXPRESSION): packed
    out.write("final", packed_json.wrap({**named_verdict(answer, setup, cluster), "cleanup": ledger, "measured": seen,
                                         "floor": setup["config"].get("threshold")}) if not tests else {})
    stats = answer.get("stats") or {}
    if tests:
        log(f"plan: round {stats.get('rounds', '?')}: {len(tests)} test(s), "
            f"{sum(1 for t in tests if t.get('network'))} on the scale-out network")
    else:
        log(f"plan: done after {stats.get('rounds', '?')} round(s) and {stats.get('jobs', '?')} job(s): "
            f"{len(answer.get('suspects') or [])} suspect(s), "
            f"{len(answer.get('infrastructureFaults') or [])} infrastructure fault(s)")
    return 0


__all__ = ["compact_history", "compact_results", "job_ledger", "measured", "plan_step", "with_missing"]
