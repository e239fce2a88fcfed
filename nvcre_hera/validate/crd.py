"""Strict validation against the real CRD schemas (the closest offline stand-in for the API server).

Recipe from shared/reference/argo-hera-kubeflow.md §3: take the storage version's openAPIV3Schema, map OpenAPI
`nullable` to a JSON-Schema null type, honour `x-kubernetes-int-or-string`, and close every object schema that has
`properties` (unless it preserves unknown fields) so a misspelled key fails as the API server's pruning would
silently drop it. The schemas ship in the package (`nvcre_hera/schemas`, see SOURCES.md there).
"""

from __future__ import annotations

import functools
import gzip
import json
from importlib import resources

from jsonschema import Draft202012Validator

KIND_TO_SCHEMA = {
    "Workflow": "workflow",
    "WorkflowTemplate": "workflowtemplate",
    "CronWorkflow": "cronworkflow",
    "MPIJob": "mpijob",
    "JobSet": "jobset",
    "TrainJob": "trainjob",
    "ClusterTrainingRuntime": "clustertrainingruntime",
    # Same schema as ClusterTrainingRuntime (one Go type, TrainingRuntimeSpec; docs/trainjob-backend.md).
    "TrainingRuntime": "clustertrainingruntime",
}
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")


def _strict(schema: dict) -> dict:
    """A copy of an OpenAPI v3 structural schema as strict JSON Schema."""
    out = dict(schema)
    out.pop("x-kubernetes-validations", None)  # CEL rules: evaluated by nvcre_hera.validate.crd_rules
    if out.pop("x-kubernetes-int-or-string", False):
        out.pop("anyOf", None)
        out["type"] = ["integer", "string"]
    if out.pop("nullable", False) and "type" in out:
        out["type"] = [*([out["type"]] if isinstance(out["type"], str) else out["type"]), "null"]
    if "properties" in out:
        out["properties"] = {k: _strict(v) for k, v in out["properties"].items()}
        if "additionalProperties" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _strict(out["additionalProperties"])
    if isinstance(out.get("items"), dict):
        out["items"] = _strict(out["items"])
    for key in _SUBSCHEMA_LISTS:
        if key in out:
            out[key] = [_strict(s) for s in out[key]]
    return out


@functools.lru_cache(maxsize=None)
def crd_payload(kind: str) -> dict:
    """`{group, kind, version, schema}`: the storage version's openAPIV3Schema, as vendored (CEL rules included)."""
    name = KIND_TO_SCHEMA[kind]
    with resources.files("nvcre_hera.schemas").joinpath(f"{name}.json.gz").open("rb") as raw:
        return json.loads(gzip.decompress(raw.read()))


@functools.lru_cache(maxsize=None)
def _validator(kind: str) -> tuple[Draft202012Validator, str, str]:
    payload = crd_payload(kind)
    schema = _strict(payload["schema"])
    # Top-level metadata is `type: object` in CRDs; the API server checks it as ObjectMeta. Keep it open.
    return Draft202012Validator(schema), f"{payload['group']}/{payload['version']}", payload["kind"]


def crd_errors(doc: dict) -> list[str]:
    """Every schema violation as `path: message`; empty when the document is valid for its kind's CRD."""
    kind = doc.get("kind")
    if kind not in KIND_TO_SCHEMA:
        return [f"kind: {kind!r} has no vendored CRD (known: {', '.join(KIND_TO_SCHEMA)})"]
    validator, api_version, _ = _validator(kind)
    errors = []
    if doc.get("apiVersion") != api_version:
        errors.append(f"apiVersion: {doc.get('apiVersion')!r} is not the CRD's storage version {api_version}")
    for err in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        path = ".".join(str(p) for p in err.absolute_path) or "(root)"
        errors.append(f"{path}: {err.message[:300]}")
    return errors


__all__ = ["KIND_TO_SCHEMA", "crd_errors", "crd_payload"]
