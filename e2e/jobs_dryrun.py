"""`nvcre jobs` against a real kube-apiserver: start etcd and kube-apiserver (the binaries e2e/build.sh builds, in
NVCRE_E2E_BIN or .e2e/bin), install the MPIJob, JobSet and TrainJob CRDs from the schemas dir (NVCRE_SCHEMAS_DIR or
../shared/schemas), create every object `nvcre jobs --group 0` prints for a few examples with dryRun=All and
fieldValidation=Strict (what `kubectl apply --dry-run=server` does), then a negative control (an unknown field must
be rejected). Both processes are stopped and the temporary state removed at the end. TrainingRuntime has no
vendored CRD and is skipped. From the repository root: `.venv/bin/python e2e/jobs_dryrun.py`; exit 0 when every
object was accepted and the negative control rejected.

What it proves: the API server's decoding and the CRDs' schemas accept the manifests. Not proven: the operators'
admission webhooks, scheduling, or that the objects run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.dynamic import DynamicClient

from nvcre_hera.controlplane import config as cfg
from nvcre_hera.controlplane.core import _admin_tls, _http, _wait, _write_yaml, default_bin_dir, default_schemas_dir
from nvcre_hera.controlplane.install import CrdFile, Installer, load_crd
from nvcre_hera.controlplane.pki import write_pki
from nvcre_hera.controlplane.procs import free_port, start, stop

CRDS = [("mpi-operator-v0.8.0-mpijobs.crd.yaml", "mpijobs.kubeflow.org"),
        ("jobset-v0.12.0-jobsets.crd.yaml", "jobsets.jobset.x-k8s.io"),
        ("kubeflow-trainer-v2.3.0-trainjobs.crd.yaml", "trainjobs.trainer.kubeflow.org")]
CASES = [("examples/certification.yaml", None),
         ("examples/certifications/reserved-pool.yaml", "examples/clusters/tainted.yaml"),
         ("examples/certifications/unpinned.yaml", None),
         ("examples/certifications/full-scale.yaml", "examples/clusters/onprem-rdma.yaml"),
         ("examples/certifications/trainjob.yaml", None),
         ("examples/certifications/intra-node.yaml", None)]
DRY_RUN = [("dryRun", "All"), ("fieldValidation", "Strict")]


def _jobs(cert: str, cluster: str | None) -> list[dict]:
    argv = [sys.executable, "-m", "nvcre_hera.cli", "jobs", cert, "--group", "0",
            *(["--cluster", cluster] if cluster else [])]
    return [d for d in yaml.safe_load_all(subprocess.run(argv, capture_output=True, text=True, check=True).stdout) if d]


def main() -> int:
    sd = Path(tempfile.mkdtemp(prefix="nvcre-jobs-dryrun-"))
    (sd / "logs").mkdir()
    bins, schemas = default_bin_dir(), default_schemas_dir()
    pki, env = write_pki(sd / "pki"), cfg.clean_env(os.environ)
    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    procs = []
    try:
        etcd = start("etcd", cfg.etcd_argv(bins / "etcd", sd / "etcd", etcd_port, peer_port), sd / "logs" / "etcd.log",
                     env, sd)
        procs.append(etcd)
        _wait("etcd", etcd, lambda: _http(f"http://127.0.0.1:{etcd_port}/health")[0] == 200, 60)
        api = start("kube-apiserver", cfg.apiserver_argv(bins / "kube-apiserver", pki, etcd_port, api_port),
                    sd / "logs" / "kube-apiserver.log", env, sd)
        procs.append(api)
        server, t0 = f"https://127.0.0.1:{api_port}", time.monotonic()
        _wait("kube-apiserver", api, lambda: _http(f"{server}/readyz", _admin_tls(pki))[0] == 200, 300)
        print(f"kube-apiserver ready in {time.monotonic() - t0:.0f} s", flush=True)
        kubeconfig = sd / "admin.kubeconfig"
        _write_yaml(kubeconfig, cfg.kubeconfig(server, pki.ca_cert, user="admin", cert=pki.admin_cert,
                                               key=pki.admin_key))
        api_client = k8s_config.new_client_from_config(config_file=str(kubeconfig))
        installer = Installer(api_client, sd / "discovery.json")
        installer.apply_crds([load_crd(CrdFile(schemas / f, n, "shared/schemas")) for f, n in CRDS])
        installer.wait_established([n for _, n in CRDS], timeout=180)
        k8s.CoreV1Api(api_client).create_namespace({"metadata": {"name": "nvcre"}})
        dyn = DynamicClient(api_client)
        accepted, rejected, skipped = 0, 0, 0
        for cert, cluster in CASES:
            for doc in _jobs(cert, cluster):
                if doc["kind"] == "TrainingRuntime":
                    skipped += 1
                    continue
                try:
                    dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"]).create(
                        body=doc, namespace="nvcre", query_params=DRY_RUN)
                    accepted += 1
                except k8s.ApiException as exc:
                    rejected += 1
                    print(f"REJECTED {cert} {doc['kind']}: {exc.body}")
        print(f"dry-run: {accepted} accepted, {rejected} rejected, {skipped} TrainingRuntime skipped")
        doc = _jobs("examples/certification.yaml", None)[0]
        doc["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["affinity"]["podAntiAffinity"]["bogus"] = 1
        try:
            dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"]).create(
                body=doc, namespace="nvcre", query_params=DRY_RUN)
            print("negative control ACCEPTED: the check cannot fail")
            return 1
        except k8s.ApiException as exc:
            print(f"negative control rejected ({exc.status})")
        return 0 if rejected == 0 and accepted else 1
    finally:
        for proc in reversed(procs):
            stop(proc)
        shutil.rmtree(sd, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
