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
                  log: Callable[[str], None]) -> None:
    files = bundle_files(report, component_rows(categories), plan=plan)
    for name, data in files.items():
        out.write(f"{BUNDLE_DIR}/{name}", data.decode())
    log(f"judge: results bundle written to {out.out_dir.rstrip('/')}/{BUNDLE_DIR}/ ({', '.join(files)}); it is "
        f"uploaded only when the workflow declares it as an output artifact and an artifact repository is "
        f"configured (docs/outputs.md)")


__all__ = ["BUNDLE_DIR", "write_outputs"]
