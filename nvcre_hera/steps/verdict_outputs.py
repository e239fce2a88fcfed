"""What the judge writes besides the report parameter: the results bundle (`<out>/bundle/`: results.json,
ctrf.json, components.ndjson, manifest.json; see `nvcre_hera.report.bundle`).

The compiled judge template can declare `<out>/bundle` as an optional output artifact (`nvcre compile
--bundle-artifact`): Argo uploads it to the workflow's artifact repository. Without that flag, or without a
repository, the files stay in the judge pod and the `report` output parameter is the record (docs/outputs.md).
"""

from __future__ import annotations

from typing import Any, Callable

from nvcre_hera.report.bundle import bundle_files, component_rows
from nvcre_hera.steps.io import Outputs

BUNDLE_DIR = "bundle"


def write_outputs(report: dict, categories: list[dict], plan: dict[str, Any], out: Outputs,
                  log: Callable[[str], None], *, cluster: Any = None, nvsentinel: dict | None = None) -> None:
    if nvsentinel is not None:
        write_nvsentinel(report, cluster, nvsentinel, log)
    files = bundle_files(report, component_rows(categories), plan=plan)
    for name, data in files.items():
        out.write(f"{BUNDLE_DIR}/{name}", data.decode())
    log(f"judge: results bundle written to {out.out_dir.rstrip('/')}/{BUNDLE_DIR}/ ({', '.join(files)}); it is "
        f"uploaded only when the workflow declares it as an output artifact and an artifact repository is "
        f"configured (docs/outputs.md)")


def write_nvsentinel(report: dict, cluster: Any, where: dict, log: Callable[[str], None]) -> list[str]:
    """Create or replace the node-list ConfigMaps; an API refusal is logged with the ConfigMap's name (the verdict
    stands either way: it is in the report and the exit code)."""
    from nvcre_hera.report.nvsentinel import result_configmaps

    maps = result_configmaps(report, workflow_name=str(where["workflowName"]),
                             namespace=str(where.get("namespace") or "nvcre"), workflow_uid=where.get("workflowUid"))
    written = []
    for cm in maps:
        name = cm["metadata"]["name"]
        try:
            written.append(cluster.apply_configmap(cm))
            log(f"judge: NVSentinel ConfigMap {cm['metadata']['namespace']}/{name} written "
                f"({', '.join(cm['binaryData'])})")
        except Exception as err:  # noqa: BLE001 - report each one and try the others
            log(f"judge: could not write NVSentinel ConfigMap {name}: {err}")
    if not maps:
        log("judge: no NVSentinel ConfigMap to write (no category passed or blamed a node)")
    return written


__all__ = ["BUNDLE_DIR", "write_nvsentinel", "write_outputs"]
