"""ensure_up / down: the loopback control plane's lifecycle (etcd, kube-apiserver, Argo workflow-controller and
Argo Server as plain processes; no kubelet, scheduler or kube-controller-manager)."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from nvcre_hera.controlplane import config as cfg
from nvcre_hera.controlplane import template
from nvcre_hera.controlplane.install import Installer, InstallError, crd_files, load_crd, manifest_objects
from nvcre_hera.controlplane.pki import Pki, write_pki
from nvcre_hera.controlplane.procs import Proc, alive, free_port, log_tail, start, stop
from nvcre_hera.controlplane.state import (MARKER, ORDER, State, StateError, load_state, recorded_procs,
                                           record_procs, save_state)

REPO = Path(__file__).resolve().parents[2]
ARGO_MODULE = "github.com/argoproj/argo-workflows/v4"
TOKEN_SECONDS = 24 * 3600
REFRESH_BEFORE = 3600.0


class ControlPlaneError(Exception):
    """A component failed to start or answer (one line plus where its log is)."""


def _say(msg: str) -> None:
    print(f"controlplane: {msg}", file=sys.stderr, flush=True)


def default_bin_dir() -> Path:
    return Path(os.environ.get("NVCRE_E2E_BIN") or REPO / ".e2e" / "bin")


def default_schemas_dir() -> Path:
    return Path(os.environ.get("NVCRE_SCHEMAS_DIR") or REPO.parent / "shared" / "schemas")


def argo_module_dir() -> Path:
    """The Argo module the binaries were built from (e2e/tools/argo/go.mod pins it); NVCRE_ARGO_MODULE_DIR wins."""
    if os.environ.get("NVCRE_ARGO_MODULE_DIR"):
        return Path(os.environ["NVCRE_ARGO_MODULE_DIR"])
    try:
        out = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", ARGO_MODULE], cwd=REPO / "e2e" / "tools" / "argo",
                             capture_output=True, text=True, timeout=120, check=True)
    except (OSError, subprocess.SubprocessError) as e:
        raise StateError(f"cannot locate the Argo module source ({e.__class__.__name__}); "
                         "set NVCRE_ARGO_MODULE_DIR") from None
    return Path(out.stdout.strip())


@contextlib.contextmanager
def _locked(sd: Path):
    """One `up` or `down` at a time per state dir (the lock file sits beside it, so `down` can wipe the dir)."""
    sd.parent.mkdir(parents=True, exist_ok=True)
    with open(sd.parent / f".{sd.name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _http(url: str, ctx: ssl.SSLContext | None = None, token: str | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=3, context=ctx) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def _admin_tls(pki: Pki) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki.ca_cert))
    ctx.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
    return ctx


def _wait(what: str, proc: Proc, ready: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if not alive(proc):
            raise ControlPlaneError(f"{proc.name} exited while starting; log {proc.log}:\n{log_tail(proc.log)}")
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"{what}: not ready after {timeout:.0f} s; log {proc.log}:\n{log_tail(proc.log)}")
        time.sleep(0.1)


def health(st: State) -> list[str]:
    """What is wrong with a recorded control plane; [] when every process runs and both servers answer."""
    problems = [f"{n} (pid {st.procs[n].pid}) is not running" for n in ORDER
                if n not in st.procs or not alive(st.procs[n])]
    if problems:
        return problems
    if _http(f"{st.apiserver}/readyz", _admin_tls(Pki.under(st.state_dir / "pki")))[0] != 200:
        problems.append(f"kube-apiserver {st.apiserver}/readyz does not answer 200")
    if _http(f"{st.argo_server}/api/v1/version", token=st.submitter_token)[0] != 200:
        problems.append(f"argo server {st.argo_server}/api/v1/version does not answer 200")
    return problems


def _write_yaml(path: Path, doc: dict) -> None:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)


def _mint(st_dir: Path, inst: Installer, server: str, ca: Path) -> dict:
    """Tokens for the workflow's SA and the submitter, and their kubeconfigs."""
    sa_token, expires = inst.token(cfg.WORKFLOW_SA, cfg.NAMESPACE, TOKEN_SECONDS)
    sub_token, sub_expires = inst.token(cfg.SUBMITTER_SA, cfg.NAMESPACE, TOKEN_SECONDS)
    sa_kc, sub_kc = st_dir / "sa.kubeconfig", st_dir / "submitter.kubeconfig"
    _write_yaml(sa_kc, cfg.kubeconfig(server, ca, user=cfg.WORKFLOW_SA, token=sa_token))
    _write_yaml(sub_kc, cfg.kubeconfig(server, ca, user=cfg.SUBMITTER_SA, token=sub_token))
    return {"sa_token": sa_token, "sa_kubeconfig": sa_kc, "submitter_token": sub_token,
            "submitter_kubeconfig": sub_kc, "token_expires": min(expires, sub_expires)}


def _installer(st_dir: Path, admin_kc: Path) -> Installer:
    return Installer(k8s_config.new_client_from_config(config_file=str(admin_kc)), st_dir / "discovery.json")


def _write_env(st: State) -> None:
    port = int(st.argo_server.rsplit(":", 1)[1])
    (st.state_dir / "env.sh").write_text(cfg.env_sh(st.admin_kubeconfig, port, st.submitter_token))
    (st.state_dir / "env.sh").chmod(0o600)


def _refresh_tokens(st: State) -> State:
    if st.token_expires - time.time() > REFRESH_BEFORE:
        return st
    inst = _installer(st.state_dir, st.admin_kubeconfig)
    fields = _mint(st.state_dir, inst, st.apiserver, st.ca_file)
    st = dataclasses.replace(st, **fields)
    save_state(st)
    _write_env(st)
    return st


def ensure_up(state_dir: str | Path = ".e2e/run", *, bin_dir: Path | None = None, schemas_dir: Path | None = None,
              manifests_dir: Path | None = None, say: Callable[[str], None] = _say) -> State:
    """The control plane recorded in `state_dir` if it is healthy (tokens re-minted when under an hour is left);
    otherwise whatever is there is stopped and wiped, and a fresh one is started."""
    sd = Path(state_dir).resolve()
    with _locked(sd):
        return _ensure_up(sd, bin_dir, schemas_dir, manifests_dir, say)


def _ensure_up(sd: Path, bin_dir: Path | None, schemas_dir: Path | None, manifests_dir: Path | None,
               say: Callable[[str], None]) -> State:
    st = load_state(sd)
    if st is not None:
        if all(n in st.procs and alive(st.procs[n]) for n in ORDER):
            try:
                st = _refresh_tokens(st)  # before the health check, which uses the submitter token
            except Exception:  # any failure (API error, connection refused): the health check below names it
                pass
        problems = health(st)
        if not problems:
            return st
        say(f"recorded control plane is unhealthy ({problems[0]}); restarting it")
    _down(sd)
    return _cold_up(sd, bin_dir or default_bin_dir(), schemas_dir or default_schemas_dir(),
                    manifests_dir or REPO / "manifests", say)


def _binaries(bin_dir: Path) -> dict[str, Path]:
    bins = {n: bin_dir / n for n in ("etcd", "kube-apiserver", "workflow-controller", "argo")}
    missing = [str(p) for p in bins.values() if not os.access(p, os.X_OK)]
    if missing:
        raise StateError(f"missing binaries {', '.join(missing)}: run `bash e2e/build.sh` (make e2e-up does)")
    return bins


def _cold_up(sd: Path, bin_dir: Path, schemas_dir: Path, manifests_dir: Path, say: Callable[[str], None]) -> State:
    t0 = time.monotonic()
    bins = _binaries(bin_dir)
    crds = crd_files(schemas_dir, argo_module_dir())  # bad paths fail before anything starts
    ns, objs = manifest_objects(manifests_dir)
    extra = [cfg.controller_configmap(), cfg.runner_node(), *cfg.submitter_objects()]
    cache = bin_dir.parent / "cache"
    tmpl = template.template_dir(cache, template.template_key([c.path for c in crds], [*objs, *extra], bin_dir))
    sd.mkdir(parents=True, exist_ok=True)
    (sd / MARKER).write_text("created by python -m nvcre_hera.controlplane up; wiped by down\n")
    (sd / "logs").mkdir(exist_ok=True)
    seeded = template.seed(tmpl, sd / "etcd")
    procs: dict[str, Proc] = {}
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        loaded = None if seeded else pool.submit(lambda: [load_crd(c, cache / "crds") for c in crds])
        pki = write_pki(sd / "pki")
        env = cfg.clean_env(os.environ)

        def run(name: str, argv: list[str], extra_env: dict[str, str] | None = None) -> Proc:
            procs[name] = start(name, argv, sd / "logs" / f"{name}.log", {**env, **(extra_env or {})}, sd)
            record_procs(sd, procs)
            return procs[name]

        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        server, tls = f"https://127.0.0.1:{api_port}", _admin_tls(pki)

        def start_store() -> None:
            etcd = run("etcd", cfg.etcd_argv(bins["etcd"], sd / "etcd", etcd_port, peer_port))
            _wait("etcd", etcd, lambda: _http(f"http://127.0.0.1:{etcd_port}/health")[0] == 200, 30)
            api = run("kube-apiserver", cfg.apiserver_argv(bins["kube-apiserver"], pki, etcd_port, api_port))
            _wait("kube-apiserver", api, lambda: _http(f"{server}/readyz", tls)[0] == 200, 180)
            say(f"etcd and kube-apiserver ready on {server} ({time.monotonic() - t0:.1f} s)")

        start_store()
        admin_kc = sd / "admin.kubeconfig"
        _write_yaml(admin_kc, cfg.kubeconfig(server, pki.ca_cert, user="nvcre-e2e-admin",
                                             cert=pki.admin_cert, key=pki.admin_key))
        inst = _installer(sd, admin_kc)
        try:
            if loaded is not None:
                inst.apply_crds(loaded.result())
            inst.wait_established([c.name for c in crds], timeout=180)
            say(f"{len(crds)} CRDs established{' (seeded etcd)' if seeded else ''} ({time.monotonic() - t0:.1f} s)")
            for o in objs:
                inst.apply(o, ns)
            for o in extra:
                inst.apply(o)
            inst.mark_node_ready(cfg.RUNNER_NODE)
        except k8s.ApiException as e:
            raise ControlPlaneError(f"installing into the API server failed: {e.status} {e.reason}: "
                                    f"{(e.body or '')[:300]}") from None
        if not seeded:  # keep this etcd as the template for the next cold up
            for name in ("kube-apiserver", "etcd"):
                stop(procs.pop(name))
            template.save(sd / "etcd", tmpl)
            say(f"saved etcd template {tmpl.name}; restarting ({time.monotonic() - t0:.1f} s)")
            start_store()
            inst = _installer(sd, admin_kc)

        # DEFAULT_REQUEUE_TIME (docs/environment-variables.md, default 10s) paces how often a workflow is looked at
        # again; 1s keeps simulated runs short. It changes when the controller acts, not what it does.
        ctl = run("workflow-controller", cfg.controller_argv(bins["workflow-controller"], admin_kc),
                  {"LEADER_ELECTION_DISABLE": "true",
                   "DEFAULT_REQUEUE_TIME": os.environ.get("NVCRE_E2E_REQUEUE_TIME", "1s")})
        argo_port = free_port("0.0.0.0")  # argo server listens on every interface (no bind-address flag)
        # In client auth mode the Argo Server builds each request's client from KUBECONFIG (default loading
        # rules, not --kubeconfig) minus its credentials (util/kubeconfig/kubeconfig.go): give it one with none.
        base_kc = sd / "argo-server-base.kubeconfig"
        _write_yaml(base_kc, cfg.kubeconfig(server, pki.ca_cert, user="anonymous", anonymous=True))
        argo = run("argo-server", cfg.argo_server_argv(bins["argo"], admin_kc, argo_port),
                   {"KUBECONFIG": str(base_kc)})
        minted = _mint(sd, inst, server, pki.ca_cert)
        argo_url = f"http://127.0.0.1:{argo_port}"
        _wait("argo server", argo,
              lambda: _http(f"{argo_url}/api/v1/version", token=minted["submitter_token"])[0] == 200, 60)
        if not alive(ctl):
            raise ControlPlaneError(f"workflow-controller exited; log {ctl.log}:\n{log_tail(ctl.log)}")
        versions = _versions(etcd_port, server, tls, argo_url, minted["submitter_token"])
        st = State(sd, server, pki.ca_cert, admin_kc, minted["sa_kubeconfig"], minted["sa_token"],
                   minted["submitter_kubeconfig"], minted["submitter_token"], minted["token_expires"], argo_url,
                   cfg.NAMESPACE, dict(procs), versions)
        save_state(st)
        _write_env(st)
        say(f"up in {time.monotonic() - t0:.1f} s")
        return st
    except BaseException:
        for name in reversed(ORDER):  # nothing keeps running after a failed up; logs stay for reading
            if name in procs:
                stop(procs[name])
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _versions(etcd_port: int, server: str, tls: ssl.SSLContext, argo_url: str, token: str) -> dict[str, str]:
    def field(status_body: tuple[int, bytes], key: str) -> str:
        try:
            return str(json.loads(status_body[1])[key]) if status_body[0] == 200 else "unknown"
        except (ValueError, KeyError):
            return "unknown"
    return {"etcd": field(_http(f"http://127.0.0.1:{etcd_port}/version"), "etcdserver"),
            "kubernetes": field(_http(f"{server}/version", tls), "gitVersion"),
            "argo": field(_http(f"{argo_url}/api/v1/version", token=token), "version")}


def down(state_dir: str | Path = ".e2e/run") -> list[str]:
    """Stop every process an `up` started in `state_dir` and wipe it. Names what was stopped; [] when nothing
    was up. Refuses a non-empty directory that `up` did not create."""
    sd = Path(state_dir).resolve()
    with _locked(sd):
        return _down(sd)


def _down(sd: Path) -> list[str]:
    if not sd.exists():
        return []
    if not (sd / MARKER).exists():
        if any(sd.iterdir()):
            raise StateError(f"{sd}: not a control-plane state directory (no {MARKER}); refusing to wipe it")
        sd.rmdir()
        return []
    procs = recorded_procs(sd)
    stopped = []
    from nvcre_hera.podrunner.process import stop_runner  # started by certify --engine argo or make e2e

    if stop_runner(sd):
        stopped.append("podrunner")
    for name in reversed(ORDER):
        p = procs.get(name)
        if p is None:
            continue
        was_alive = alive(p)
        if not stop(p):
            raise ControlPlaneError(f"{name} (pid {p.pid}) survived SIGKILL; state kept in {sd}")
        if was_alive:
            stopped.append(name)
    shutil.rmtree(sd)
    return stopped
