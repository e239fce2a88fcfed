"""`nvcre validate`: compile every form of a certification and check each document the way a cluster would.

The Workflow, WorkflowTemplate and CronWorkflow go through the strict Argo v4.1.2 CRD check, the CRD's CEL rules and
the lint; each category's job manifest is rendered for a sample group on every platform and checked the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nvcre_hera.api import Certification
from nvcre_hera.catalog import gpu_architectures, platforms
from nvcre_hera.compile.plan import CompileOptions
from nvcre_hera.validate.crd import crd_errors
from nvcre_hera.validate.crd_rules import rule_errors
from nvcre_hera.validate.lint import lint


@dataclass
class CheckReport:
    documents: int = 0
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def check_document(doc: dict) -> list[str]:
    return crd_errors(doc) + rule_errors(doc) + lint(doc)


def sample_job_manifests(cert: Certification, namespace: str = "nvcre"):
    """(label, manifest) for each category × platform × a sample of architectures, on a two-node group."""
    from nvcre_hera.jobs import JobContext, render_objects
    from nvcre_hera.spec_load import resolve_categories

    gang = cert.spec.gang_scheduler
    backend = cert.spec.orchestration.backend if cert.spec.orchestration else None
    for cat in resolve_categories(cert):
        for platform in platforms():
            for gpu in (gpu_architectures()[0], "gb300"):
                ctx = JobContext("sample-wf", "00000000-0000-0000-0000-000000000000", namespace, platform, gpu,
                                 gang.scheduler_name if gang else None, gang.queue if gang else None,
                                 gang.queue_label_key if gang else None, cert.spec.priority_class_name,
                                 # the certification's own target and placement: tolerations and node affinity
                                 # as its jobs will carry them
                                 target=cert.spec.target.model_dump(by_alias=True, exclude_defaults=True,
                                                                    mode="json"),
                                 placement=cert.spec.orchestration.placement if cert.spec.orchestration
                                 else "Pinned")
                nodes = ["node-a"] if cat.entry.scope == "per-node" else ["node-a", "node-b"]
                for obj in render_objects(cat.entry, cat.index, cat.options, {"id": "g0", "nodes": nodes}, 0, ctx,
                                          backend):
                    yield f"{cat.key} on {platform}/{gpu}", obj


def check_certification(cert: Certification, opts: CompileOptions) -> CheckReport:
    from dataclasses import replace

    from nvcre_hera.compile.workflow import compile_certification

    report = CheckReport()
    for kind in ("workflow", "template", "cron"):
        doc = compile_certification(cert, replace(opts, kind=kind))
        report.documents += 1
        problems = check_document(doc)
        report.problems += [f"{doc['kind']}: {p}" for p in problems]
        report.lines.append(f"{doc['kind']:<17} {'ok' if not problems else 'INVALID'}")
    jobs_ok = 0
    for label, manifest in sample_job_manifests(cert, opts.namespace):
        report.documents += 1
        problems = crd_errors(manifest) + rule_errors(manifest)
        report.problems += [f"{manifest['kind']} ({label}): {p}" for p in problems]
        jobs_ok += not problems
    report.lines.append(f"job manifests     {jobs_ok} ok")
    return report


__all__ = ["CheckReport", "check_certification", "check_document", "sample_job_manifests"]
