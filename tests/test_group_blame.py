"""Group blame when the log names the culprit (issue 9 item 11): the node the log or its NCCL INFO lines name gets
the reason with the evidence line; the group's other nodes are members of the failed group, listed apart; a group
that misses its threshold keeps ThresholdViolation beside a transport reason."""

from __future__ import annotations

import json
from pathlib import Path

from nvcre_hera.judge import judge
from nvcre_hera.local_run import run_local
from nvcre_hera.parsers import parse_nccl
from nvcre_hera.parsers.reasons import attribute_to_nodes, nccl_reasons

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "data" / "real" / "nccl"
CERT = ROOT / "examples" / "fail-closed" / "all-reduce-300.yaml"
NODES = [f"gpu-node-{i:02d}" for i in range(1, 9)]
SUMMARY = {"platform": "onprem", "gpu": "h100", "totalNodes": 8, "selectedNodes": 8, "excludedNodes": []}


def _nccl_log(*lines: str) -> str:
    head = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20",
            "# Using devices"]
    return "\n".join(head + [f"#  Rank {r:2d} Group  0 Pid {100 + r} on {NODES[r]} device  0 [0x18] H100"
                             for r in range(8)] + list(lines)) + "\n"


def test_real_log_names_the_failing_host() -> None:
    text = (REAL / "13-rtxa6000-2node-init-failure-mpirun-abort.txt").read_text()
    hosts = parse_nccl(text)["failedHosts"]
    assert [h["host"] for h in hosts] == ["fengyun"]
    assert hosts[0]["line"].startswith("fengyun: Test NCCL failure common.cu:959 'internal error")


def test_real_socket_fallback_names_its_host() -> None:
    text = (REAL / "11-v100-2node-socket-fallback-nccl-warn-init.txt").read_text()
    nets = parse_nccl(text)["hostNetworks"]
    assert [(n["host"], n["transport"]) for n in nets] == [("ip-172-31-0-112", "NET/Socket")]


def test_crash_line_blames_the_host_it_names() -> None:
    text = _nccl_log("gpu-node-03: Test CUDA failure common.cu:1133 'an illegal memory access was encountered'",
                     " .. gpu-node-03 pid 4242: Test failure common.cu:1201")
    parsed = parse_nccl(text)
    reasons = attribute_to_nodes(nccl_reasons(parsed, "ib"), parsed, NODES)
    assert [(r["node"], r["reason"]) for r in reasons] == [("gpu-node-03", "WorkloadFailed")]
    assert "gpu-node-03: Test CUDA failure common.cu:1133" in reasons[0]["message"]


def test_a_host_that_is_no_node_of_the_group_stays_group_blame() -> None:
    text = _nccl_log("mpijob-worker-3: Test CUDA failure common.cu:1133 'an illegal memory access was encountered'")
    parsed = parse_nccl(text)
    reasons = attribute_to_nodes(nccl_reasons(parsed, "ib"), parsed, NODES)
    assert [(r["node"], r["reason"]) for r in reasons] == [(None, "WorkloadFailed")]


def test_socket_fallback_blames_the_host_whose_own_lines_show_it() -> None:
    info = [f"{n}:{100 + i}:{100 + i} [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>"
            for i, n in enumerate(NODES) if n != "gpu-node-04"]
    info[3:3] = ["gpu-node-04:103:103 [0] NCCL INFO NET/IB : No device found.",
                 "gpu-node-04:103:103 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.4<0>"]
    parsed = parse_nccl(_nccl_log("gpu-node-01:100:100 [0] NCCL INFO Using network Socket", *info))
    reasons = [r for r in attribute_to_nodes(nccl_reasons(parsed, "ib"), parsed, NODES)
               if r["reason"] == "TransportMismatch"]  # (no result rows here: MeasurementNotFound beside it)
    assert [r["node"] for r in reasons] == ["gpu-node-04"]
    assert "NET/IB : No device found" in reasons[0]["message"]


def test_socket_seen_only_from_one_host_without_a_fabric_peer_stays_group_blame() -> None:
    # only rank 0 printed (as NCCL_DEBUG_SUBSYS can make it): nothing says which node lacks the fabric
    parsed = parse_nccl(_nccl_log("gpu-node-01:100:100 [0] NCCL INFO NET/IB : No device found.",
                                  "gpu-node-01:100:100 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>"))
    reasons = attribute_to_nodes(nccl_reasons(parsed, "ib"), parsed, NODES)
    assert [(r["node"], r["reason"]) for r in reasons if r["reason"] == "TransportMismatch"] == \
        [(None, "TransportMismatch")]


def _category(reasons: list[dict], bus: float) -> dict:
    run = {"group": "g0", "nodes": NODES, "status": "failed", "metrics": {"busBandwidthGBps": bus},
           "reasons": reasons, "runtimeSec": 5.0, "jobName": "j", "jobDeleted": True}
    return {"domain": "communication", "variant": "nccl-all-reduce", "testScale": "full-scale",
            "thresholds": {"busBandwidthGBps": "value >= 300"}, "metricNames": ["busBandwidthGBps"],
            "results": [run]}


def test_judge_keeps_threshold_violation_beside_a_transport_reason() -> None:
    transport = {"node": "gpu-node-04", "reason": "TransportMismatch", "message": "NET/Socket on gpu-node-04"}
    report = judge("c", SUMMARY, [_category([transport], 1.49)])
    cat = report["categories"][0]
    assert cat["thresholds"][0]["passed"] is False and cat["thresholds"][0]["measuredValue"] == 1.49
    assert [(n["name"], n["reasons"]) for n in report["failedNodes"]] == \
        [("gpu-node-04", ["ThresholdViolation", "TransportMismatch"])]
    assert [m["name"] for m in report["failedGroupMembers"]] == [n for n in NODES if n != "gpu-node-04"]
    assert cat["failedGroups"][0]["nodes"] == NODES and cat["failedGroups"][0]["blamedNodes"] == ["gpu-node-04"]


def test_judge_without_a_named_node_blames_the_whole_group() -> None:
    report = judge("c", SUMMARY, [_category([{"node": None, "reason": "WorkloadFailed", "message": "exit 1"}],
                                            1.0)])
    assert [n["name"] for n in report["failedNodes"]] == NODES
    assert report["failedGroupMembers"] == []


def _certify(cluster: str) -> dict:
    report = run_local(str(CERT), str(ROOT / "examples" / "clusters" / cluster)).report
    assert report is not None
    return json.loads(json.dumps(report))


def test_certify_crash_names_gpu_node_03_and_keeps_the_others_as_members() -> None:
    report = _certify("crash.yaml")
    assert report["result"] == "FAILED"
    (node,) = report["failedNodes"]
    assert node["name"] == "gpu-node-03" and node["reasons"] == ["WorkloadFailed"]
    assert "gpu-node-03: Test CUDA failure" in node["message"] and "illegal memory access" in node["message"]
    assert [m["name"] for m in report["failedGroupMembers"]] == [n for n in NODES if n != "gpu-node-03"]


def test_certify_socket_fallback_names_gpu_node_04_and_keeps_the_threshold() -> None:
    report = _certify("socket-fallback.yaml")
    assert report["result"] == "FAILED"
    (node,) = report["failedNodes"]
    assert node["name"] == "gpu-node-04"
    assert node["reasons"] == ["ThresholdViolation", "TransportMismatch"]
    (threshold,) = report["categories"][0]["thresholds"]
    assert threshold["passed"] is False and threshold["measuredValue"] < 10
    assert len(report["failedGroupMembers"]) == 15


TORCHRUN_FAILURE = """[rank5]: RuntimeError: CUDA error: an illegal memory access was encountered
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
pretrain_gpt.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2025-01-01_00:00:01
  host      : gpu-node-01
  rank      : 1 (local_rank: 1)
  exitcode  : -15 (pid: 77)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-01-01_00:00:00
  host      : gpu-node-06
  rank      : 40 (local_rank: 0)
  exitcode  : 1 (pid: 412)
  error_file: <N/A>
============================================================
"""


def test_torchrun_root_cause_names_its_host_not_the_other_failures() -> None:
    from nvcre_hera.parsers import parse_training

    hosts = parse_training(TORCHRUN_FAILURE)["failedHosts"]
    assert [h["host"] for h in hosts] == ["gpu-node-06"]
    group = [{"node": None, "reason": "WorkloadFailed", "message": "launcher failed with exit code 1"}]
    (named,) = attribute_to_nodes(group, parse_training(TORCHRUN_FAILURE), NODES, "training")
    assert named["node"] == "gpu-node-06" and "host      : gpu-node-06".split()[-1] in named["message"]


def test_certify_training_crash_names_the_root_cause_host() -> None:
    report = run_local(str(ROOT / "examples" / "certification.yaml"),
                       str(ROOT / "examples" / "clusters" / "crash.yaml")).report
    assert report is not None and report["result"] == "FAILED"
    (node,) = report["failedNodes"]
    assert node["name"] == "gpu-node-03"
    assert "training/nemotron5-8b: training: torchrun root cause: host : gpu-node-03" in node["message"]
    assert [m["name"] for m in report["failedGroupMembers"]] == [n for n in NODES if n != "gpu-node-03"]
