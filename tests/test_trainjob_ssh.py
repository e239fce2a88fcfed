"""TrainJob (Kubeflow Trainer v2.3) MPI pods find their ssh keys at modes OpenSSH accepts for root.

Trainer mounts its key Secret with the private key at 0640 (kubeflow/trainer v2.3.0 pkg/constants/constants.go
L153-154), and OpenSSH refuses a private key owned by the user running ssh when any group/other bit is set
(openssh-portable authfile.c sshkey_perm_ok); Secret files are root's and our pods run as root. So the Secret must
not be /root/.ssh itself: it is mounted aside and copied in at 0600. Expected paths and modes are literals from
those sources. Not proven here: that Trainer's webhook accepts the runtime, or that `install` behaves as GNU
coreutils documents (a real cluster or the network-namespace launch test).
"""

from __future__ import annotations

import yaml

from nvcre_hera.jobs import JobContext
from nvcre_hera.jobs.registry import render_objects
from nvcre_hera.spec_load import parse_certification, resolve_categories
from nvcre_hera.validate.crd import crd_errors


def _runtime() -> dict:
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
           "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]}}
    (cat,) = resolve_categories(parse_certification(yaml.safe_dump(doc), "c.yaml"))
    ctx = JobContext("wf", "uid", "nvcre", "onprem", "h100")
    runtime, _ = render_objects(cat.entry, 0, cat.options, {"id": "g0", "nodes": ["a", "b"]}, 0, ctx, "trainjob")
    return runtime


def test_trainer_secret_is_mounted_aside_and_copied_into_root_ssh_at_0600():
    runtime = _runtime()
    assert runtime["spec"]["mlPolicy"]["mpi"]["sshAuthMountPath"] == "/mnt/mpi-ssh"
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = rjob["template"]["spec"]["template"]["spec"]
        inits = {c["name"]: c for c in pod["initContainers"]}
        assert inits["ssh-dir"]["command"] == ["install", "-d", "-m", "0700", "/root/.ssh"]
        assert inits["ssh-keys"]["command"] == ["install", "-m", "0600", "-t", "/root/.ssh", "/mnt/mpi-ssh/id_rsa",
                                                "/mnt/mpi-ssh/id_rsa.pub", "/mnt/mpi-ssh/authorized_keys"]
        assert [c["name"] for c in pod["initContainers"]][-2:] == ["ssh-dir", "ssh-keys"]  # dir first
        # the copy reads Trainer's Secret volume (constants.go L136 "mpi-ssh-auth") and writes the shared emptyDir
        mounts = {m["name"]: m["mountPath"] for m in inits["ssh-keys"]["volumeMounts"]}
        assert mounts == {"mpi-ssh-auth": "/mnt/mpi-ssh", "ssh-home": "/root/.ssh"}
        (node,) = [c for c in pod["containers"] if c["name"] == "node"]
        assert {"name": "ssh-home", "mountPath": "/root/.ssh"} in node["volumeMounts"]
        assert {"name": "ssh-home", "emptyDir": {}} in pod["volumes"]
    assert crd_errors(runtime) == []
