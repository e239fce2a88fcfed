"""What `up` puts into the fresh API server: CRDs (waited until Established), the repo's manifests/ as they are,
the runner's Node, the Argo controller's ConfigMap, and service-account tokens from the TokenRequest API.

Objects are server-side applied (`PATCH application/apply-patch+yaml`, force), as `kubectl apply --server-side`
would: the 2.9 MB full Argo CRDs exceed the 256 KiB annotation a client-side apply would write."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes import client as k8s
from kubernetes.dynamic import DynamicClient

FIELD_MANAGER = "nvcre-e2e-controlplane"
ARGO_MAIN_CRDS = ("workflows", "workflowtemplates", "cronworkflows", "clusterworkflowtemplates")
ARGO_OTHER_CRDS = ("workflowtaskresults", "workflowtasksets", "workflowartifactgctasks", "workfloweventbindings")
# CRDs from shared/schemas beside the checkout (provenance: shared/schemas/SOURCES.md).
SHARED_CRDS = {f"argo-workflows-v4.1.2-{n}.crd.yaml": f"{n}.argoproj.io" for n in ARGO_MAIN_CRDS} | {
    "mpi-operator-v0.8.0-mpijobs.crd.yaml": "mpijobs.kubeflow.org",
    "jobset-v0.12.0-jobsets.crd.yaml": "jobsets.jobset.x-k8s.io",
    "kubeflow-trainer-v2.3.0-trainjobs.crd.yaml": "trainjobs.trainer.kubeflow.org",
    "kubeflow-trainer-v2.3.0-clustertrainingruntimes.crd.yaml": "clustertrainingruntimes.trainer.kubeflow.org",
}


class InstallError(Exception):
    """A CRD, manifest or object could not be installed (one line, for the CLI)."""


@dataclass(frozen=True)
class CrdFile:
    path: Path
    name: str  # metadata.name, e.g. workflows.argoproj.io
    source: str  # where it came from, for the log
    namespaced_from: str | None = None  # the cluster-scoped CRD in `path` this namespaced twin is made from


# Kubeflow Trainer's TrainingRuntime (namespaced, what the TrainJob backend creates) and ClusterTrainingRuntime
# (vendored) wrap the same TrainingRuntimeSpec (kubeflow/trainer pkg/apis/trainer/v1alpha1/trainingruntime_types.go):
# the namespaced CRD is the cluster one with its scope and names changed.
TRAINING_RUNTIME = ("trainingruntimes.trainer.kubeflow.org", "clustertrainingruntimes.trainer.kubeflow.org")


def namespaced_twin(crd: dict, name: str) -> dict:
    """A cluster-scoped CRD as its namespaced twin `name` (plural.group): same versions and schemas."""
    out = json.loads(json.dumps(crd))
    plural = name.split(".", 1)[0]
    kind = crd["spec"]["names"]["kind"].removeprefix("Cluster")
    out["metadata"] = {"name": name, **({"annotations": crd["metadata"]["annotations"]}
                                        if crd.get("metadata", {}).get("annotations") else {})}
    out["spec"]["scope"] = "Namespaced"
    out["spec"]["names"] = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": plural[:-1]}
    return out


def crd_files(schemas_dir: Path | None, argo_module_dir: Path) -> list[CrdFile]:
    """Every CRD file to install. Argo's four main CRDs are v4.1.2 from shared/schemas when that folder is there,
    else the v4.0.5 module's; the other four Argo CRDs always come from the v4.0.5 module (manifests/base/crds/full);
    MPIJob, JobSet and TrainJob exist only in shared/schemas, so without it `up` fails (fail closed)."""
    full = argo_module_dir / "manifests" / "base" / "crds" / "full"
    out = []
    shared_ok = schemas_dir is not None and schemas_dir.is_dir()
    for n in ARGO_MAIN_CRDS:
        shared = schemas_dir / f"argo-workflows-v4.1.2-{n}.crd.yaml" if shared_ok else None
        if shared is not None and shared.is_file():
            out.append(CrdFile(shared, f"{n}.argoproj.io", "shared/schemas (Argo v4.1.2)"))
        else:
            out.append(CrdFile(full / f"argoproj.io_{n}.yaml", f"{n}.argoproj.io", "argo module v4.0.5"))
    for n in ARGO_OTHER_CRDS:
        out.append(CrdFile(full / f"argoproj.io_{n}.yaml", f"{n}.argoproj.io", "argo module v4.0.5"))
    for fname, name in SHARED_CRDS.items():
        if fname.startswith("argo-workflows-"):
            continue
        if not shared_ok:
            raise InstallError(f"schemas dir {schemas_dir}: not found; it holds the {name} CRD "
                               "(set --schemas-dir or NVCRE_SCHEMAS_DIR)")
        out.append(CrdFile(schemas_dir / fname, name, "shared/schemas"))
    cluster_runtime = next(c for c in out if c.name == TRAINING_RUNTIME[1])
    out.append(CrdFile(cluster_runtime.path, TRAINING_RUNTIME[0], "derived from the ClusterTrainingRuntime CRD",
                       namespaced_from=TRAINING_RUNTIME[1]))
    for c in out:
        if not c.path.is_file():
            raise InstallError(f"CRD file {c.path}: not found")
    return out


def load_crd(c: CrdFile, cache_dir: Path | None = None) -> dict:
    """The CRD as a dict. Parsing 2.9 MB of YAML takes seconds even with libyaml, so the parsed form is cached as
    JSON under cache_dir, keyed by the file's sha256 (a changed file is parsed again)."""
    raw = c.path.read_bytes()
    cached = cache_dir / f"{hashlib.sha256(raw).hexdigest()}.json" if cache_dir else None
    if cached is not None and cached.is_file():
        doc = json.loads(cached.read_text())
    else:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        docs = [d for d in yaml.load_all(raw, Loader=loader) if d]
        if len(docs) != 1 or docs[0].get("kind") != "CustomResourceDefinition":
            raise InstallError(f"{c.path}: expected one CustomResourceDefinition, found {len(docs)} documents")
        doc = docs[0]
        doc.get("metadata", {}).pop("creationTimestamp", None)
        doc.pop("status", None)
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(".tmp")
            tmp.write_text(json.dumps(doc, separators=(",", ":")))
            tmp.replace(cached)
    if c.namespaced_from is not None and doc.get("metadata", {}).get("name") == c.namespaced_from:
        doc = namespaced_twin(doc, c.name)
    if doc.get("metadata", {}).get("name") != c.name:
        raise InstallError(f"{c.path}: metadata.name is {doc.get('metadata', {}).get('name')!r}, expected {c.name}")
    return doc


def kustomization_resources(manifests_dir: Path) -> tuple[str | None, list[Path]]:
    """(namespace, resource files in order) of manifests_dir/kustomization.yaml. Only plain file resources and the
    `namespace` field are supported: anything else would need kustomize, so it is refused rather than ignored."""
    path = manifests_dir / "kustomization.yaml"
    try:
        k = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise InstallError(f"{path}: {e.__class__.__name__}: {str(e).splitlines()[0]}") from None
    allowed = {"apiVersion", "kind", "namespace", "resources"}
    if not isinstance(k, dict) or set(k) - allowed:
        extra = sorted(set(k) - allowed) if isinstance(k, dict) else "not a mapping"
        raise InstallError(f"{path}: unsupported kustomization fields {extra} (only namespace and resources)")
    files = []
    for r in k.get("resources") or []:
        f = manifests_dir / str(r)
        if not f.is_file():
            raise InstallError(f"{path}: resources entry {r!r} is not a file in {manifests_dir}")
        files.append(f)
    return k.get("namespace"), files


def manifest_objects(manifests_dir: Path) -> tuple[str | None, list[dict]]:
    """The base kustomization's objects, then every optional component's (`components/*/kustomization.yaml`, as
    an overlay listing them all would apply), in the base's namespace: the e2e runs every backend, TrainJob too."""
    ns, files = kustomization_resources(manifests_dir)
    for component in sorted((manifests_dir / "components").glob("*/kustomization.yaml")):
        files += kustomization_resources(component.parent)[1]
    objs = []
    for f in files:
        for i, d in enumerate(yaml.safe_load_all(f.read_text())):
            if d is None:
                continue
            if not isinstance(d, dict) or not d.get("kind") or not d.get("apiVersion") \
                    or not d.get("metadata", {}).get("name"):
                raise InstallError(f"{f}: document {i + 1} lacks apiVersion, kind or metadata.name")
            objs.append(d)
    return ns, objs


class Installer:
    """Talks to the API server as admin (system:masters)."""

    def __init__(self, api: k8s.ApiClient, cache_file: Path):
        self.api = api
        self.dyn = DynamicClient(api, cache_file=str(cache_file))

    def apply(self, obj: dict, namespace: str | None = None) -> None:
        """Server-side apply; `namespace` is set on namespaced kinds only, as kustomize's namespace field does."""
        res = self.dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        body = json.loads(json.dumps(obj))
        if res.namespaced and namespace:
            body["metadata"]["namespace"] = namespace
        self.dyn.server_side_apply(res, body=body, field_manager=FIELD_MANAGER, force_conflicts=True,
                                   serialize=False)

    def apply_crds(self, crds: list[dict]) -> None:
        res = self.dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
        for c in crds:
            self.dyn.server_side_apply(res, body=c, field_manager=FIELD_MANAGER, force_conflicts=True,
                                       serialize=False)

    def wait_established(self, names: list[str], timeout: float = 60.0) -> None:
        ext = k8s.ApiextensionsV1Api(self.api)
        deadline = time.monotonic() + timeout
        pending = list(names)
        while pending:
            name = pending[0]
            resp = ext.read_custom_resource_definition_status(name, _preload_content=False)
            conds = json.loads(resp.data).get("status", {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                pending.pop(0)
                continue
            if time.monotonic() > deadline:
                raise InstallError(f"CRD {name}: not Established after {timeout:.0f} s: {conds}")
            time.sleep(0.1)

    def mark_node_ready(self, name: str) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        cond = {"type": "Ready", "status": "True", "reason": "NvcreE2ERunner", "lastHeartbeatTime": now,
                "lastTransitionTime": now, "message": "pods bound here are run by the nvcre e2e pod runner"}
        k8s.CoreV1Api(self.api).patch_node_status(name, {"status": {"conditions": [cond]}})

    def token(self, sa: str, namespace: str, seconds: int) -> tuple[str, float]:
        body = k8s.AuthenticationV1TokenRequest(spec=k8s.V1TokenRequestSpec(audiences=[],
                                                                           expiration_seconds=seconds))
        tr = k8s.CoreV1Api(self.api).create_namespaced_service_account_token(sa, namespace, body)
        return tr.status.token, tr.status.expiration_timestamp.timestamp()
