"""The output parameters the compiled workflow's Prometheus metrics read (nvcre_hera/compile/metrics.py): small
strings the run step and the judge write beside their JSON outputs. Hera-free, so the steps need not import it."""

from __future__ import annotations

NO_MEASUREMENT = "-1"
NODES_LABELLED = 8  # a larger group's `nodes` label names its first and last node and the count: the group label
# identifies it, and a label value of a thousand names would weigh on etcd and Prometheus alike
STATUS_BY_CATEGORY = {"Passed": "succeeded", "Failed": "failed"}
STATUS_BY_RESULT = {"PASSED": "succeeded", "FAILED": "failed"}


def run_outputs(group_id: str, nodes: list[str], runs: list[dict]) -> dict[str, str]:
    """`busbw` (the best bus bandwidth over the runs whose workload succeeded, else -1), `group-id`, `nodes`."""
    values = [float(r["metrics"]["busBandwidthGBps"]) for r in runs
              if r.get("status") == "ok" and isinstance((r.get("metrics") or {}).get("busBandwidthGBps"), (int, float))]
    names = [str(n) for n in nodes]
    label = ",".join(names) if len(names) <= NODES_LABELLED else f"{names[0]},…,{names[-1]} ({len(names)} nodes)"
    return {"busbw": f"{max(values):.4f}" if values else NO_MEASUREMENT, "group-id": str(group_id), "nodes": label}


def status_outputs(report: dict, indexes: list[int]) -> dict[str, str]:
    """`status` (succeeded | failed | incomplete) and `status-<index>` for each category, in the plan's order."""
    out = {"status": STATUS_BY_RESULT.get(str(report.get("result")), "incomplete")}
    cats = report.get("categories") or []
    if any(c.get("gpu") for c in cats):  # one entry per category and GPU architecture: the worst of them
        for index in indexes:
            seen = {str(c.get("status")) for c in cats if c.get("index") == index}
            out[f"status-{index}"] = ("failed" if "Failed" in seen else "succeeded" if seen == {"Passed"}
                                      else "incomplete")
        return out
    for index, cat in zip(indexes, cats):
        out[f"status-{index}"] = STATUS_BY_CATEGORY.get(str(cat.get("status")), "incomplete")
    return out


__all__ = ["NODES_LABELLED", "NO_MEASUREMENT", "run_outputs", "status_outputs"]
