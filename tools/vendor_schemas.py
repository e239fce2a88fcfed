"""Extract the openAPIV3Schema of the CRDs we validate against from ../shared/schemas into the package.

The CRDs are 0.7–2.9 MB of YAML each (≈1 s to load); the package ships each storage version's schema as gzipped
JSON (milliseconds to load), byte-for-byte the upstream schema, with provenance in nvcre_hera/schemas/SOURCES.md.
Run: .venv/bin/python tools/vendor_schemas.py [SHARED_SCHEMAS_DIR]
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path

import yaml

CRDS = {
    "workflow": "argo-workflows-v4.1.2-workflows.crd.yaml",
    "workflowtemplate": "argo-workflows-v4.1.2-workflowtemplates.crd.yaml",
    "cronworkflow": "argo-workflows-v4.1.2-cronworkflows.crd.yaml",
    "mpijob": "mpi-operator-v0.8.0-mpijobs.crd.yaml",
    "jobset": "jobset-v0.12.0-jobsets.crd.yaml",
    "trainjob": "kubeflow-trainer-v2.3.0-trainjobs.crd.yaml",
    # Also checks namespaced TrainingRuntimes: the two CRDs' schemas differ only in two description strings
    # (kubeflow/trainer v2.3.0 manifests/base/crds/, see docs/trainjob-backend.md).
    "clustertrainingruntime": "kubeflow-trainer-v2.3.0-clustertrainingruntimes.crd.yaml",
}


def schema_sha256(schema: dict) -> str:
    """sha256 of a schema as canonical JSON (sorted keys, no spaces): the same on any machine and YAML loader."""
    return hashlib.sha256(json.dumps(schema, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else Path(__file__).resolve().parents[2] / "shared" / "schemas"
    out = Path(__file__).resolve().parents[1] / "nvcre_hera" / "schemas"
    lines = ["# Vendored CRD schemas", "",
             "Each `<kind>.json.gz` is `spec.versions[storage].schema.openAPIV3Schema` of the CRD below, unchanged,",
             "extracted by `tools/vendor_schemas.py` from the project's shared/schemas (provenance of those files:",
             "shared/schemas/SOURCES.md, reproduced here).", "",
             "The last column is the sha256 of that schema as canonical JSON (`json.dumps(schema, sort_keys=True,",
             "separators=(',', ':'))`, UTF-8): the tests check the packaged schemas against it on any machine, and",
             "against the CRD files themselves where shared/schemas is present.", "",
             "| file | CRD file | group/kind | storage version | sha256 of the CRD file | sha256 of the schema |",
             "|---|---|---|---|---|---|"]
    for kind, name in CRDS.items():
        raw = (src / name).read_bytes()
        crd = yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
        schema = version["schema"]["openAPIV3Schema"]
        payload = {"group": crd["spec"]["group"], "kind": crd["spec"]["names"]["kind"], "version": version["name"],
                   "schema": schema}
        with gzip.open(out / f"{kind}.json.gz", "wt", encoding="utf-8", compresslevel=9) as fh:
            json.dump(payload, fh, separators=(",", ":"), sort_keys=True)
        lines.append(f"| `{kind}.json.gz` | `{name}` | {payload['group']}/{payload['kind']} | {version['name']} | "
                     f"{hashlib.sha256(raw).hexdigest()} | {schema_sha256(schema)} |")
    upstream = (src / "SOURCES.md").read_text().split("\n")
    lines += ["", "## shared/schemas/SOURCES.md", ""] + [l for l in upstream if l.startswith("|")]
    (out / "SOURCES.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
