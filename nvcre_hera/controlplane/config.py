"""Pure builders for the loopback control plane: argv lists, environments, kubeconfigs, the Argo controller's
ConfigMap and env.sh. No I/O here, so each is unit-tested without binaries.

Facts are from the components' source (cited in docs/controlplane.md):
- kube-apiserver rejects a loopback --advertise-address only through the endpoint reconciler's ValidateIP;
  `--endpoint-reconciler-type=none` validates nothing, so 127.0.0.1 works with no default route and no dummy
  interface (k8s.io/kubernetes v1.37.2 pkg/controlplane/instance.go, pkg/controlplane/reconcilers/none.go).
- workflow-controller and argo read every flag also from ARGO_<FLAG> (viper), so stray ARGO_* variables are
  dropped from their environment (cmd/workflow-controller/main.go, cmd/argo/commands/server.go).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Mapping

from nvcre_hera.controlplane.pki import Pki

NAMESPACE = "nvcre"
WORKFLOW_SA = "nvcre-hera"
SUBMITTER_SA = "nvcre-e2e-submitter"
RUNNER_NODE = "nvcre-e2e-runner"
EXECUTOR_IMAGE = "nvcre-e2e/argoexec:v4.0.5"  # never pulled: there is no kubelet; the lead's runner runs argoexec
SERVICE_CIDR = "10.0.0.0/24"
# etcd refuses requests over 1.5 MiB by default; a full Argo CRD is 1.3 MB as JSON (2.9 MB of YAML) and bigger
# once stored with managedFields. kube-apiserver takes request bodies up to 3 MiB (MaxRequestBodyBytes in
# k8s.io/apiserver v0.37.2 pkg/server/config.go; no flag sets it).
MAX_REQUEST_BYTES = 10 * 1024 * 1024  # etcd warns above 10 MiB
# Environment kept for the Go processes; everything else (ARGO_*, KUBECONFIG, proxies) is dropped.
KEEP_ENV = ("PATH", "HOME", "TMPDIR", "LANG", "TZ")


def clean_env(env: Mapping[str, str], **extra: str) -> dict[str, str]:
    out = {k: v for k, v in env.items() if k in KEEP_ENV}
    out.update(extra)
    return out


def etcd_argv(binary: Path, data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    client = f"http://127.0.0.1:{client_port}"
    peer = f"http://127.0.0.1:{peer_port}"
    return [str(binary), "--name=nvcre-e2e", f"--data-dir={data_dir}",
            f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=nvcre-e2e={peer}", "--initial-cluster-state=new",
            "--unsafe-no-fsync=true", f"--max-request-bytes={MAX_REQUEST_BYTES}",
            "--quota-backend-bytes=4294967296", "--log-level=warn"]


def apiserver_argv(binary: Path, pki: Pki, etcd_port: int, port: int) -> list[str]:
    return [str(binary), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1", f"--secure-port={port}",
            "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
            f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            f"--service-account-issuer=https://127.0.0.1:{port}",
            f"--service-account-key-file={pki.sa_pub}", f"--service-account-signing-key-file={pki.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=RBAC", "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true", "--profiling=false", "--v=1"]


def controller_argv(binary: Path, kubeconfig: Path) -> list[str]:
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--namespace={NAMESPACE}", "--namespaced",
            f"--managed-namespace={NAMESPACE}", f"--executor-image={EXECUTOR_IMAGE}", "--loglevel=info"]


def argo_server_argv(binary: Path, kubeconfig: Path, port: int) -> list[str]:
    # `argo server` has no bind-address flag: it listens on ":<port>", every interface
    # (server/apiserver/argoserver.go). --auth-mode=client only: a request's bearer token is its k8s identity,
    # and a request without one is refused (adding `server` would serve it as the server's admin identity).
    return [str(binary), "server", f"--kubeconfig={kubeconfig}", f"--namespace={NAMESPACE}", "--namespaced",
            f"--managed-namespace={NAMESPACE}", f"--port={port}", "--secure=false", "--auth-mode=client",
            "--loglevel=info"]


def kubeconfig(server: str, ca_file: Path, *, user: str, namespace: str = NAMESPACE,
               cert: Path | None = None, key: Path | None = None, token: str | None = None,
               anonymous: bool = False) -> dict:
    """A one-context kubeconfig; `anonymous` has no credentials (the Argo Server's base for bearer tokens)."""
    if anonymous:
        if token is not None or cert is not None:
            raise ValueError("an anonymous kubeconfig user has no credentials")
        creds = {}
    elif (token is None) == (cert is None):
        raise ValueError("a kubeconfig user has either a client certificate or a token")
    else:
        creds = {"token": token} if token is not None else {"client-certificate": str(cert), "client-key": str(key)}
    return {"apiVersion": "v1", "kind": "Config", "current-context": user, "preferences": {},
            "clusters": [{"name": "nvcre-e2e", "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
            "users": [{"name": user, "user": creds}],
            "contexts": [{"name": user, "context": {"cluster": "nvcre-e2e", "user": user, "namespace": namespace}}]}


def controller_configmap() -> dict:
    """workflow-controller-configmap. The controller parses it with yaml.UnmarshalStrict (config/controller.go):
    an unknown key is fatal. Metrics off, so nothing listens on :9090; no artifact repository."""
    config = "metricsConfig:\n  enabled: false\ntelemetryConfig:\n  enabled: false\n"
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "workflow-controller-configmap", "namespace": NAMESPACE},
            "data": {"config": config}}


def runner_node() -> dict:
    labels = {"kubernetes.io/hostname": RUNNER_NODE, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "nvcre.nvidia.com/e2e-runner": "true"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": RUNNER_NODE, "labels": labels}, "spec": {}}


def submitter_objects() -> list[dict]:
    """A second identity for `ARGO_TOKEN`: the project's Role is what the workflow's *steps* need and grants no
    access to Workflows, so its token cannot submit. This one can, like an Argo user (docs/workflow-rbac.md)."""
    meta = {"name": SUBMITTER_SA, "namespace": NAMESPACE}
    rules = [{"apiGroups": ["argoproj.io"],
              "resources": ["workflows", "workflowtemplates", "cronworkflows", "workfloweventbindings",
                            "workflowtaskresults"],
              "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
             {"apiGroups": [""], "resources": ["pods", "events"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}]
    return [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(meta)},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": dict(meta), "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": dict(meta),
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": SUBMITTER_SA},
             "subjects": [{"kind": "ServiceAccount", "name": SUBMITTER_SA, "namespace": NAMESPACE}]}]


def env_sh(admin_kubeconfig: Path, argo_server_port: int, token: str, namespace: str = NAMESPACE) -> str:
    lines = {"KUBECONFIG": str(admin_kubeconfig), "ARGO_SERVER": f"127.0.0.1:{argo_server_port}",
             "ARGO_TOKEN": f"Bearer {token}", "ARGO_NAMESPACE": namespace, "ARGO_SECURE": "false",
             "ARGO_HTTP1": "true"}
    return "# source me: the loopback control plane (python -m nvcre_hera.controlplane up)\n" + "".join(
        f"export {k}={shlex.quote(v)}\n" for k, v in lines.items())
