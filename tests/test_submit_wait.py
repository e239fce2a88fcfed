"""`nvcre submit --wait / --watch` and `nvcre report --workflow` against a stand-in Argo Server on loopback.

The stand-in answers Argo's REST paths (POST /api/v1/workflows/{ns}, GET /api/v1/workflows/{ns}/{name}) with a
recorded Workflow: the compiled workflow run by the local executor, its nodes written in the shape of Argo's
`status.nodes` (id, name, displayName, type, templateName, phase, startedAt, finishedAt, inputs/outputs parameters).
It goes through Hera's WorkflowsService and its models both ways, as against a real server. What it does not prove:
that a real controller fills these fields as recorded (the loopback e2e, tests/e2e/test_submit_watch_e2e.py, does that).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nvcre_hera.cli import main
from nvcre_hera.local_run import run_local

pytestmark = pytest.mark.filterwarnings("ignore:The `json` method is deprecated", "ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parent.parent
INTRA = str(ROOT / "examples" / "certifications" / "intra-node.yaml")
CLUSTERS = ROOT / "examples" / "clusters"
NAME = "intra-node-cert-k2x9q"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _iso(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def recorded(cluster: str, at: float | None = None) -> dict:
    """The Workflow as the Argo Server would return it `at` seconds into the run (None: after it ended)."""
    local = run_local(INTRA, str(CLUSTERS / cluster))
    wf = json.loads(json.dumps(local.workflow))
    wf["metadata"].update(name=NAME, namespace="gpu-cert")
    nodes = {}
    for n in local.run.nodes.values():
        done = n.finished is not None and (at is None or n.finished <= at)
        if at is not None and n.started > at:
            continue
        node = {"id": n.id.replace(local.run.name, NAME), "name": n.name.replace(local.run.name, NAME, 1),
                "displayName": n.display_name.replace(local.run.name, NAME, 1), "type": n.type,
                "templateName": n.template, "phase": n.phase if done else "Running", "startedAt": _iso(n.started),
                "inputs": {"parameters": [{"name": k, "value": v} for k, v in n.inputs.items()]}}
        if done:
            node["finishedAt"] = _iso(n.finished)
            params = (n.outputs or {}).get("parameters") or {}
            if params:
                node["outputs"] = {"parameters": [{"name": k, "value": v} for k, v in params.items()]}
            if n.message:
                node["message"] = n.message
        nodes[node["id"]] = node
    phase = local.run.phase if at is None else "Running"
    wf["status"] = {"phase": phase, "startedAt": _iso(0), "nodes": nodes,
                    **({"finishedAt": _iso(local.run.wall_time_s)} if at is None else {})}
    return wf


@dataclass
class Server:
    port: int = 0
    states: list[dict] = field(default_factory=list)  # answered in turn to GETs, the last one from then on
    gets: int = 0


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    state = Server()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, obj: dict, code: int = 200) -> None:
            payload = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            obj = body["workflow"]
            obj["metadata"]["name"] = NAME
            self._send(obj)

        def do_GET(self) -> None:  # noqa: N802
            if self.path != f"/api/v1/workflows/gpu-cert/{NAME}" or not state.states:
                self._send({"code": 5, "message": "workflows.argoproj.io not found"}, 404)
                return
            # count before answering: the client may act on the answer (and the test read `gets`) before this
            # thread runs again, which under load made `gets` read one short
            answer = state.states[min(state.gets, len(state.states) - 1)]
            state.gets += 1
            self._send(answer)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = httpd.server_port
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    monkeypatch.setenv("ARGO_SERVER", f"http://127.0.0.1:{state.port}")
    monkeypatch.setenv("ARGO_NAMESPACE", "gpu-cert")
    monkeypatch.delenv("ARGO_TOKEN", raising=False)
    yield state
    httpd.shutdown()
    httpd.server_close()


SUBMIT = ["submit", INTRA, "--step-image", "img:1", "--poll-interval", "0.01"]


def test_watch_shows_progress_then_the_card_and_exits_1_on_failed(server: Server,
                                                                  capsys: pytest.CaptureFixture) -> None:
    server.states = [recorded("slow-nic.yaml", at=700.0), recorded("slow-nic.yaml")]
    code = main([*SUBMIT, "--watch"])
    out, err = capsys.readouterr()
    assert code == 1, err
    lines = out.splitlines()
    assert lines[1] == f"Argo UI: http://127.0.0.1:{server.port}/workflows/gpu-cert/{NAME}"
    progress = [ln for ln in lines if ln.startswith("[")]
    tests = [ln for ln in progress if "/16  " in ln]  # the category lines read ": 16/16 done"
    assert len(tests) == 32  # each test once, though the finished ones were seen on both polls
    failing = [ln for ln in tests if "✗" in ln]
    assert len(failing) == 1 and "gpu-node-07" in failing[0] and "192.73 vs value >= 300" in failing[0]
    assert "Result:        FAILED" in out and out.rstrip().endswith(f"workflow {NAME} Failed: FAILED")
    # the category's runtime is its task's span in the workflow (18m16s, see the local run), not the sum of tests
    assert "Runtime:    18m16s" in out


def test_wait_exits_0_on_passed_and_prints_no_progress(server: Server, capsys: pytest.CaptureFixture) -> None:
    server.states = [recorded("healthy-h100-16.yaml", at=100.0), recorded("healthy-h100-16.yaml")]
    assert main([*SUBMIT, "--wait"]) == 0
    out = capsys.readouterr().out
    assert not any(ln.startswith("[") for ln in out.splitlines())
    assert "Result:        PASSED" in out and server.gets == 2


def test_wait_without_a_report_and_on_timeout_exits_1(server: Server, capsys: pytest.CaptureFixture) -> None:
    ended = recorded("healthy-h100-16.yaml")
    ended["status"]["nodes"] = {k: v for k, v in ended["status"]["nodes"].items() if v["templateName"] != "judge"}
    ended["status"].update(phase="Error", message="pod deleted")
    server.states = [ended]
    assert main([*SUBMIT, "--wait"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"nvcre: workflow {NAME} ended Error before its judge wrote a report: pod deleted"
    server.states, server.gets = [recorded("healthy-h100-16.yaml", at=100.0)], 0
    assert main([*SUBMIT, "--wait", "--wait-timeout", "0.05"]) == 1
    assert "is still Running after 0.05s (--wait-timeout): no verdict" in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "where"), [(["--wait", "--as", "template"], "--wait"),
                                              (["--wait", "--wait-timeout", "0"], "--wait-timeout"),
                                              (["--watch", "--poll-interval", "-1"], "--poll-interval")])
def test_bad_wait_flags_exit_2_with_one_line(server: Server, capsys: pytest.CaptureFixture, flags: list[str],
                                             where: str) -> None:
    assert main([*SUBMIT[:4], *flags]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"nvcre: {where}: ") and "Traceback" not in err


def test_report_workflow_renders_the_same_card(server: Server, capsys: pytest.CaptureFixture) -> None:
    server.states = [recorded("slow-nic.yaml")]
    assert main(["report", "--workflow", NAME]) == 0
    card = capsys.readouterr().out
    assert card.startswith("Certification Report\n") and "Result:        FAILED" in card
    assert main(["report", "--workflow", NAME, "--format", "html"]) == 0
    assert capsys.readouterr().out.count("<svg") >= 6
    assert main(["report", "--workflow", "nope"]) == 2
    assert capsys.readouterr().err.startswith("nvcre: --workflow: cannot read workflow gpu-cert/nope")
