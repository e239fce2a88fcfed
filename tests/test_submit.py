"""`nvcre submit` against a fake Argo Server on loopback: the request path per form, the bearer token, the body
Argo's API expects, the CLI's line, and one-line failures (server 4xx → exit 1; no ARGO_SERVER → exit 2)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nvcre_hera.cli import main
from nvcre_hera.compile.plan import CompileOptions
from nvcre_hera.compile.workflow import compile_certification
from nvcre_hera.spec_load import load_certification
from nvcre_hera.argo_connection import argo_connection

# Hera's WorkflowsService still calls pydantic's deprecated .json(); not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:The `json` method is deprecated")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "certification.yaml"


@dataclass
class FakeArgo:
    port: int
    requests: list[tuple[str, dict, dict]] = field(default_factory=list)
    status: int = 200


@pytest.fixture
def argo() -> Iterator[FakeArgo]:
    """An Argo Server stand-in: records POSTs and echoes the object back with a name, or answers `status`."""
    state = FakeArgo(port=0)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            state.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if state.status != 200:
                payload = json.dumps({"code": 3, "message": "workflow spec is invalid: bad things"}).encode()
            else:
                obj = dict(next(iter(body.values())))
                meta = dict(obj.get("metadata") or {})
                meta["name"] = meta.get("name") or meta.get("generateName", "x-") + "k2x9q"
                obj["metadata"] = meta
                payload = json.dumps(obj).encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_port
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def argo_env(argo: FakeArgo, monkeypatch: pytest.MonkeyPatch) -> FakeArgo:
    monkeypatch.setenv("ARGO_SERVER", f"http://127.0.0.1:{argo.port}")
    monkeypatch.setenv("ARGO_TOKEN", "s3cr3t")
    monkeypatch.setenv("ARGO_NAMESPACE", "gpu-cert")
    monkeypatch.delenv("ARGO_SECURE", raising=False)
    return argo


@pytest.mark.parametrize(("form", "path", "key", "kind", "name"), [
    ("workflow", "/api/v1/workflows/gpu-cert", "workflow", "Workflow", "gpu-cluster-cert-k2x9q"),
    ("template", "/api/v1/workflow-templates/gpu-cert", "template", "WorkflowTemplate", "gpu-cluster-cert"),
    ("cron", "/api/v1/cron-workflows/gpu-cert", "cronWorkflow", "CronWorkflow", "gpu-cluster-cert"),
])
def test_submit_posts_to_argo(argo_env: FakeArgo, capsys: pytest.CaptureFixture[str], form: str, path: str,
                              key: str, kind: str, name: str) -> None:
    """One POST per form to Argo's REST path in ARGO_NAMESPACE, bearer token, `{"<kind>": {...}}` body."""
    code = main(["submit", str(EXAMPLE), "--as", form, "--step-image", "img:1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(argo_env.requests) == 1
    req_path, headers, body = argo_env.requests[0]
    assert req_path == path
    assert headers["authorization"] == "Bearer s3cr3t"
    assert list(body) == [key]
    doc = body[key]
    assert doc["kind"] == kind and doc["apiVersion"] == "argoproj.io/v1alpha1"
    assert doc["metadata"]["namespace"] == "gpu-cert"
    # exactly what `nvcre compile` prints: Hera's request serialisation drops nothing we set
    assert doc == compile_certification(load_certification(EXAMPLE),
                                        CompileOptions(kind=form, namespace="gpu-cert", step_image="img:1"))
    ui_route = {"workflow": "workflows", "template": "workflow-templates", "cron": "cron-workflows"}[form]
    assert out.strip().splitlines() == [
        f"submitted {kind} gpu-cert/{name} to http://127.0.0.1:{argo_env.port}",
        f"Argo UI: http://127.0.0.1:{argo_env.port}/{ui_route}/gpu-cert/{name}"]


def test_submit_plain_host_port_with_argo_secure_false(argo: FakeArgo, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """ARGO_SERVER as host:port (like the argo CLI) with ARGO_SECURE=false talks plain HTTP; the flag namespace
    wins over ARGO_NAMESPACE."""
    monkeypatch.setenv("ARGO_SERVER", f"127.0.0.1:{argo.port}")
    monkeypatch.setenv("ARGO_SECURE", "false")
    monkeypatch.setenv("ARGO_NAMESPACE", "from-env")
    monkeypatch.setenv("ARGO_TOKEN", "t")
    code = main(["submit", str(EXAMPLE), "--namespace", "from-flag"])
    capsys.readouterr()
    assert code == 0
    assert argo.requests[0][0] == "/api/v1/workflows/from-flag"


def test_server_rejects(argo_env: FakeArgo, capsys: pytest.CaptureFixture[str]) -> None:
    """A 400 from the server: exit 1, one line on stderr naming the server, nothing on stdout, no traceback."""
    argo_env.status = 400
    code = main(["submit", str(EXAMPLE)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"nvcre: submit to http://127.0.0.1:{argo_env.port} failed: ")


def test_missing_argo_server(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """No ARGO_SERVER: exit 2 with one line saying what to set."""
    monkeypatch.delenv("ARGO_SERVER", raising=False)
    code = main(["submit", str(EXAMPLE)])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("nvcre: environment: ARGO_SERVER is not set")


def test_bad_spec_is_not_submitted(argo_env: FakeArgo, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad certification fails locally (exit 2, one line) and nothing reaches the server."""
    bad = tmp_path / "cert.yaml"
    bad.write_text(EXAMPLE.read_text().replace("nemotron5-8b", "nemotron5-9b"))
    code = main(["submit", str(bad)])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith(f"nvcre: {bad}: spec.categories[1].variant: ")
    assert argo_env.requests == []


@pytest.mark.parametrize(("env", "insecure", "expected"), [
    ({"ARGO_SERVER": "argo.example:2746"}, False, ("https://argo.example:2746", None, True)),
    ({"ARGO_SERVER": "argo.example:2746", "ARGO_SECURE": "false"}, False, ("http://argo.example:2746", None, True)),
    ({"ARGO_SERVER": "https://argo.example/", "ARGO_TOKEN": "t"}, True, ("https://argo.example", "t", False)),
    ({"ARGO_SERVER": "https://a", "ARGO_INSECURE_SKIP_VERIFY": "true"}, False, ("https://a", None, False)),
])
def test_argo_connection(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], insecure: bool,
                         expected: tuple) -> None:
    """The argo CLI's environment: https unless ARGO_SECURE=false, token optional, skip-verify by flag or env."""
    for var in ("ARGO_SERVER", "ARGO_SECURE", "ARGO_TOKEN", "ARGO_INSECURE_SKIP_VERIFY"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert argo_connection(insecure) == expected


def test_submit_a_workloadrun(argo_env: FakeArgo, capsys: pytest.CaptureFixture[str]) -> None:
    """NVIDIA's WorkloadRun example is submitted as the Workflow `nvcre compile` prints for it."""
    wr = EXAMPLE.parent / "workloadruns" / "nccl-all-reduce.yaml"
    code = main(["submit", str(wr), "--step-image", "img:1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = argo_env.requests[0][2]["workflow"]
    assert doc == compile_certification(load_certification(wr), CompileOptions(namespace="gpu-cert",
                                                                               step_image="img:1"))
    assert out.startswith("submitted Workflow gpu-cert/nccl-all-reduce-")
