"""The control plane harness's pure parts and process handling, without the Go binaries (those are proven by
tests/e2e/test_controlplane.py): certificates, argv lists, the controller ConfigMap against Argo's own Config
struct, kustomization parsing, state files, stopping processes, and the CLI's bad-input paths."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from nvcre_hera.controlplane import config as cfg
from nvcre_hera.controlplane.__main__ import main
from nvcre_hera.controlplane.core import down
from nvcre_hera.controlplane.install import InstallError, crd_files, kustomization_resources, load_crd
from nvcre_hera.controlplane.pki import Pki, write_pki
from nvcre_hera.controlplane.procs import Proc, alive, free_port, start, stop
from nvcre_hera.controlplane.state import MARKER, State, StateError, load_state, record_procs, recorded_procs, \
    save_state

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("NVCRE_SCHEMAS_DIR") or REPO.parent / "shared" / "schemas")
ARGO_MOD = Path(os.path.expanduser("~/go/pkg/mod/github.com/argoproj/argo-workflows/v4@v4.0.5"))


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return write_pki(tmp_path_factory.mktemp("pki"))


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
        return True
    except (ValueError, TypeError, Exception):  # InvalidSignature has no common base besides Exception
        return False


def test_admin_cert_is_a_system_masters_client_cert_signed_by_the_ca(pki):
    ca, admin = _cert(pki.ca_cert), _cert(pki.admin_cert)
    assert _signed_by(admin, ca)
    assert admin.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    assert list(admin.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == \
        [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_serving_cert_covers_loopback_and_a_foreign_ca_does_not_sign_it(pki, tmp_path):
    ca, srv = _cert(pki.ca_cert), _cert(pki.serving_cert)
    sans = srv.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert "127.0.0.1" in [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]
    assert _signed_by(srv, ca)
    other = write_pki(tmp_path / "other")
    assert not _signed_by(srv, _cert(other.ca_cert))


def test_keys_are_private_and_the_sa_key_is_ecdsa(pki):
    for key in (pki.ca_key, pki.serving_key, pki.admin_key, pki.sa_key):
        assert key.stat().st_mode & 0o077 == 0, key
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    assert isinstance(load_pem_private_key(pki.sa_key.read_bytes(), None), ec.EllipticCurvePrivateKey)


def _flags(argv: list[str]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--") and "=" in a)


def test_apiserver_flags_rbac_token_request_and_loopback_only(pki):
    f = _flags(cfg.apiserver_argv(Path("/bin/kube-apiserver"), pki, 2379, 6443))
    assert f["authorization-mode"] == "RBAC"
    assert f["disable-admission-plugins"] == "ServiceAccount"
    assert f["bind-address"] == "127.0.0.1" and f["secure-port"] == "6443"
    # a loopback advertise address is only accepted with no endpoint reconciler
    assert f["advertise-address"] == "127.0.0.1" and f["endpoint-reconciler-type"] == "none"
    assert f["service-account-signing-key-file"] == str(pki.sa_key)
    assert f["service-account-key-file"] == str(pki.sa_pub)
    assert f["service-account-issuer"] == "https://127.0.0.1:6443"
    assert f["client-ca-file"] == str(pki.ca_cert)


def test_etcd_listens_on_loopback_only_and_takes_the_big_crds():
    f = _flags(cfg.etcd_argv(Path("/bin/etcd"), Path("/d"), 1111, 2222))
    urls = [f[k] for k in ("listen-client-urls", "advertise-client-urls", "listen-peer-urls",
                           "initial-advertise-peer-urls")]
    assert urls == ["http://127.0.0.1:1111"] * 2 + ["http://127.0.0.1:2222"] * 2
    assert f["initial-cluster"] == f"{f['name']}=http://127.0.0.1:2222"
    assert int(f["max-request-bytes"]) > 2_900_000 and f["unsafe-no-fsync"] == "true"


def test_argo_processes_are_namespaced_and_the_server_needs_a_client_token():
    ctl = _flags(cfg.controller_argv(Path("/bin/workflow-controller"), Path("/k")))
    assert (ctl["namespace"], ctl["managed-namespace"]) == ("nvcre", "nvcre")
    srv = cfg.argo_server_argv(Path("/bin/argo"), Path("/k"), 2746)
    assert srv[1] == "server" and "--namespaced" in srv
    assert _flags(srv)["auth-mode"] == "client" and _flags(srv)["secure"] == "false"


def test_clean_env_drops_argo_and_kube_variables():
    env = cfg.clean_env({"PATH": "/bin", "ARGO_NAMESPACE": "x", "ARGO_SECURE": "true", "KUBECONFIG": "/k",
                         "HOME": "/root"}, LEADER_ELECTION_DISABLE="true")
    assert env == {"PATH": "/bin", "HOME": "/root", "LEADER_ELECTION_DISABLE": "true"}


def test_kubeconfig_has_exactly_one_credential():
    kc = cfg.kubeconfig("https://127.0.0.1:1", Path("/ca"), user="u", token="t")
    assert kc["users"] == [{"name": "u", "user": {"token": "t"}}]
    assert kc["contexts"][0]["context"]["namespace"] == "nvcre"
    with pytest.raises(ValueError):
        cfg.kubeconfig("https://x", Path("/ca"), user="u")
    with pytest.raises(ValueError):
        cfg.kubeconfig("https://x", Path("/ca"), user="u", token="t", cert=Path("/c"), key=Path("/k"))
    anon = cfg.kubeconfig("https://x", Path("/ca"), user="anonymous", anonymous=True)
    assert anon["users"] == [{"name": "anonymous", "user": {}}]
    with pytest.raises(ValueError):
        cfg.kubeconfig("https://x", Path("/ca"), user="u", token="t", anonymous=True)


def test_env_sh_survives_a_shell_with_hostile_values(tmp_path):
    token = "a'b\"c $(touch pwned) `x` ;d"
    f = tmp_path / "env.sh"
    f.write_text(cfg.env_sh(tmp_path / "my dir" / "admin.kubeconfig", 4321, token))
    out = subprocess.run(["bash", "-c", 'source "$1"; printf "%s\\n" "$KUBECONFIG" "$ARGO_SERVER" "$ARGO_TOKEN" '
                          '"$ARGO_NAMESPACE" "$ARGO_SECURE" "$ARGO_HTTP1"', "bash", str(f)],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == [str(tmp_path / "my dir" / "admin.kubeconfig"), "127.0.0.1:4321", f"Bearer {token}", "nvcre",
                   "false", "true"]
    assert not (tmp_path / "pwned").exists()


def _go_json_fields(struct: str, source: str) -> set[str]:
    body = re.search(r"type " + struct + r" struct \{(.*?)\n\}", source, re.S).group(1)
    return set(re.findall(r'json:"([A-Za-z]+)', body))


@pytest.mark.skipif(not ARGO_MOD.is_dir(), reason="Argo v4.0.5 module source not in the Go module cache")
def test_controller_configmap_uses_only_keys_argo_parses():
    """The controller parses its ConfigMap with yaml.UnmarshalStrict: the keys must be fields of Argo's Config
    and MetricsConfig structs (read from the v4.0.5 source, config/config.go)."""
    source = (ARGO_MOD / "config" / "config.go").read_text()
    cm = cfg.controller_configmap()
    assert list(cm["data"]) == ["config"]
    conf = yaml.safe_load(cm["data"]["config"])
    assert set(conf) <= _go_json_fields("Config", source)
    for key in ("metricsConfig", "telemetryConfig"):
        assert set(conf[key]) <= _go_json_fields("MetricsConfig", source)
        assert conf[key]["enabled"] is False


def test_kustomization_of_the_repo_lists_its_files_in_order():
    ns, files = kustomization_resources(REPO / "manifests")
    listed = yaml.safe_load((REPO / "manifests" / "kustomization.yaml").read_text())["resources"]
    assert ns == "nvcre" and [f.name for f in files] == listed


@pytest.mark.parametrize("text, needle", [
    ("resources: [a.yaml]\npatches: []\n", "patches"),
    ("resources: [missing.yaml]\n", "missing.yaml"),
    ("resources: [a.yaml\n", "kustomization.yaml"),
])
def test_kustomization_it_cannot_apply_is_refused(tmp_path, text, needle):
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
    (tmp_path / "kustomization.yaml").write_text(text)
    with pytest.raises(InstallError, match=needle):
        kustomization_resources(tmp_path)


@pytest.mark.skipif(not ARGO_MOD.is_dir(), reason="Argo v4.0.5 module source not in the Go module cache")
def test_crd_files_prefer_shared_v412_and_fail_without_the_job_crds(tmp_path):
    if SHARED.is_dir():
        files = crd_files(SHARED, ARGO_MOD)
        by = {c.name: c for c in files}
        assert "v4.1.2" in by["workflows.argoproj.io"].source
        assert "v4.0.5" in by["workflowtaskresults.argoproj.io"].source
        assert {"mpijobs.kubeflow.org", "jobsets.jobset.x-k8s.io", "trainjobs.trainer.kubeflow.org"} <= set(by)
    with pytest.raises(InstallError, match="mpijobs.kubeflow.org"):
        crd_files(tmp_path / "absent", ARGO_MOD)


def test_load_crd_caches_and_checks_the_name(tmp_path):
    from nvcre_hera.controlplane.install import CrdFile
    f = tmp_path / "c.yaml"
    f.write_text("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
                 "metadata: {name: foos.example.com, creationTimestamp: null}\nspec: {group: example.com}\n"
                 "status: {}\n")
    doc = load_crd(CrdFile(f, "foos.example.com", "test"), tmp_path / "cache")
    assert doc == {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "foos.example.com"}, "spec": {"group": "example.com"}}
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1
    assert load_crd(CrdFile(f, "foos.example.com", "test"), tmp_path / "cache") == doc
    with pytest.raises(InstallError, match="expected bars.example.com"):
        load_crd(CrdFile(f, "bars.example.com", "test"), tmp_path / "cache")


def _state(tmp_path: Path) -> State:
    p = Proc("etcd", 123, 456, str(tmp_path / "etcd.log"))
    return State(tmp_path, "https://127.0.0.1:1", tmp_path / "ca.crt", tmp_path / "a", tmp_path / "s", "tok",
                 tmp_path / "sub", "subtok", 1e9, "http://127.0.0.1:2", "nvcre", {"etcd": p}, {"etcd": "3.7.3"})


def test_state_round_trips_with_the_documented_keys(tmp_path):
    st = _state(tmp_path)
    save_state(st)
    raw = json.loads((tmp_path / "state.json").read_text())
    assert {"apiserver", "caFile", "adminKubeconfig", "saKubeconfig", "saToken", "argoServer", "namespace",
            "pids", "logs", "versions"} <= set(raw)
    assert raw["pids"] == {"etcd": 123} and (tmp_path / "state.json").stat().st_mode & 0o077 == 0
    assert load_state(tmp_path) == st


def test_corrupt_state_and_process_records_are_errors_not_nothing(tmp_path):
    (tmp_path / "state.json").write_text("{")
    with pytest.raises(StateError, match="state.json"):
        load_state(tmp_path)
    (tmp_path / "procs.json").write_text('{"etcd": {"pid": "x"}}')
    with pytest.raises(StateError, match="procs.json"):
        recorded_procs(tmp_path)
    assert load_state(tmp_path / "nowhere") is None


def _sleeper(tmp_path: Path, name: str = "sleeper") -> Proc:
    return start(name, ["sleep", "60"], tmp_path / f"{name}.log", {"PATH": os.environ["PATH"]}, tmp_path)


def test_stop_ends_the_process_and_a_recycled_pid_is_not_ours(tmp_path):
    p = _sleeper(tmp_path)
    assert alive(p)
    assert not alive(Proc(p.name, p.pid, p.start + 1, p.log))  # same pid, other start time
    assert stop(p) and not alive(p)
    assert stop(p)  # stopping a stopped process is fine


def test_stop_escalates_to_sigkill(tmp_path):
    p = start("stubborn", [sys.executable, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, "
                           "signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(60)"],
              tmp_path / "s.log", {"PATH": os.environ["PATH"]}, tmp_path)
    deadline = time.monotonic() + 10
    while "ready" not in (tmp_path / "s.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    t0 = time.monotonic()
    assert stop(p, grace=0.5) and not alive(p)
    assert time.monotonic() - t0 < 5


def test_down_stops_recorded_processes_and_wipes_only_its_own_dir(tmp_path):
    sd = tmp_path / "run"
    sd.mkdir()
    (sd / MARKER).write_text("")
    p = _sleeper(sd, "etcd")
    record_procs(sd, {"etcd": p})
    assert down(sd) == ["etcd"]
    assert not alive(p) and not sd.exists()
    assert down(sd) == []  # nothing up: fine
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("x")
    with pytest.raises(StateError, match="refusing"):
        down(foreign)
    assert (foreign / "keep.txt").exists()


def test_free_port_is_bindable():
    import socket
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["up", "--state-dir", str(tmp_path / "run"), "--bin-dir", str(tmp_path / "nobin")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing binaries" in err[0] and "e2e/build.sh" in err[0]
    assert main(["status", "--state-dir", str(tmp_path / "run")]) == 1
    assert "not up" in capsys.readouterr().out
    assert main(["down", "--state-dir", str(tmp_path / "run")]) == 0


def test_etcd_template_key_follows_contents_and_seed_copies(tmp_path):
    from nvcre_hera.controlplane import template
    bins = tmp_path / "bin"
    bins.mkdir()
    for n in ("etcd", "kube-apiserver"):
        (bins / n).write_text("binary")
        (bins / f".{n}.stamp").write_text("1\n")
    crd = tmp_path / "c.yaml"
    crd.write_text("a")
    objs = [{"kind": "Namespace", "metadata": {"name": "nvcre"}}]
    k = template.template_key([crd], objs, bins)
    assert template.template_key([crd], objs, bins) == k
    assert template.template_key([crd], [{"kind": "Namespace", "metadata": {"name": "other"}}], bins) != k
    crd.write_text("b")
    assert template.template_key([crd], objs, bins) != k
    k2 = template.template_key([crd], objs, bins)
    (bins / ".kube-apiserver.stamp").write_text("3\n")
    assert template.template_key([crd], objs, bins) != k2

    cache = tmp_path / "cache"
    tmpl = template.template_dir(cache, "k1")
    assert not template.seed(tmpl, tmp_path / "d0")
    data = tmp_path / "data"
    (data / "member" / "snap").mkdir(parents=True)
    (data / "member" / "snap" / "db").write_text("bolt")
    template.save(data, tmpl)
    template.save(data, template.template_dir(cache, "k2"))  # a newer template replaces older ones
    assert [p.name for p in cache.iterdir()] == ["etcd-k2"]
    assert template.seed(template.template_dir(cache, "k2"), tmp_path / "d1")
    assert (tmp_path / "d1" / "member" / "snap" / "db").read_text() == "bolt"


def test_manifest_objects_include_the_optional_components():
    from nvcre_hera.controlplane.install import manifest_objects

    ns, objs = manifest_objects(REPO / "manifests")
    names = {(o["kind"], o["metadata"]["name"]) for o in objs}
    component = list(yaml.safe_load_all((REPO / "manifests/components/trainjob/role-trainjob.yaml").read_text()))
    assert ns == "nvcre" and {(d["kind"], d["metadata"]["name"]) for d in component} <= names


@pytest.mark.skipif(not ARGO_MOD.is_dir(), reason="Argo v4.0.5 module source not in the Go module cache")
def test_the_namespaced_training_runtime_crd_is_the_cluster_one_namespaced():
    """The TrainJob backend creates a namespaced TrainingRuntime, whose CRD is not vendored: it is the vendored
    ClusterTrainingRuntime's (the same TrainingRuntimeSpec upstream) with scope and names changed."""
    from nvcre_hera.controlplane.install import TRAINING_RUNTIME

    crds = {c.name: c for c in crd_files(SHARED, ARGO_MOD)}
    twin, cluster = load_crd(crds[TRAINING_RUNTIME[0]]), load_crd(crds[TRAINING_RUNTIME[1]])
    assert cluster["spec"]["scope"] == "Cluster" and twin["spec"]["scope"] == "Namespaced"
    assert twin["spec"]["names"]["kind"] == "TrainingRuntime" and twin["metadata"]["name"] == TRAINING_RUNTIME[0]
    assert twin["spec"]["versions"] == cluster["spec"]["versions"]
