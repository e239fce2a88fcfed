"""JobSet v1alpha2 (kubernetes-sigs/jobset v0.12): the backend for exec categories that run one pod per node
(DCGM diagnostics). `status.terminalState` is scalar, so waiting needs no condition predicates; the replicated job
is named `launcher` so logs are found the same way for every backend.
"""

from __future__ import annotations

from nvcre_hera.jobs.base import JobPlan, env_list, metadata, pod_placement, worker_affinity, worker_labels


class JobSetBackend:
    kind = "JobSet"

    def manifest(self, plan: JobPlan) -> dict:
        ctx = plan.context
        namespace = ctx.namespace if ctx else "default"
        pod_spec = {
            **pod_placement(plan),
            "restartPolicy": "Never",
            "affinity": worker_affinity(plan),
            "containers": [{
                "name": "launcher", "image": plan.image, "command": plan.argv[:1], "args": plan.argv[1:],
                "env": env_list(plan.env),
                "resources": {"limits": {"nvidia.com/gpu": str(plan.gpus_per_node)}},
                "securityContext": {"privileged": True},
            }],
        }
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": metadata(plan, namespace),
            "spec": {
                "failurePolicy": {"maxRestarts": 0},
                "replicatedJobs": [{
                    "name": "launcher",
                    "replicas": len(plan.nodes),
                    "template": {
                        "metadata": {"labels": dict(plan.labels)},
                        "spec": {
                            "backoffLimit": 0,
                            "activeDeadlineSeconds": int(plan.timeout_s),
                            "template": {"metadata": {"labels": worker_labels(plan)}, "spec": pod_spec},
                        },
                    },
                }],
            },
        }


__all__ = ["JobSetBackend"]
