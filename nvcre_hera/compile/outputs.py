"""Optional judge outputs, each behind a compile option so the default workflow (and its goldens) stay as they were:

- `--nvsentinel-configmaps`: the judge writes the node-list ConfigMaps NVSentinel reads (`nvcre-step judge
  --nvsentinel-configmaps`), owned by the Workflow; the service account then needs manifests/components/nvsentinel.
- `--bundle-artifact`: the judge's `/tmp/nvcre/bundle` folder becomes the output artifact `bundle`. Argo uploads
  it to the artifact repository (the workflow controller's default, `artifactRepositoryRef`, or the namespace's
  `artifact-repositories` ConfigMap). Without a repository the upload fails and the judge node errors:
  argo-workflows v4.0.5 workflow/executor/executor.go L403-419 (saveArtifactFromFile asks the template's
  ArchiveLocation for a key) and pkg/apis/workflow/v1alpha1/workflow_types.go L1323-1347 (an empty location
  answers "artifact storage is not configured"); `optional: true` only covers a missing file (executor.go
  L382-388). So it is off unless asked for (docs/outputs.md).
"""

from __future__ import annotations

from hera.workflows import Artifact

from nvcre_hera.compile.plan import CompileOptions

BUNDLE_ARTIFACT = "bundle"


def judge_output_args(opts: CompileOptions) -> list[str]:
    if not opts.nvsentinel_configmaps:
        return []
    return ["--nvsentinel-configmaps", "--workflow-name", "{{workflow.name}}", "--workflow-uid", "{{workflow.uid}}",
            "--namespace", "{{workflow.namespace}}"]


def judge_artifacts(opts: CompileOptions, out_dir: str) -> list[Artifact]:
    if not opts.bundle_artifact:
        return []
    return [Artifact(name=BUNDLE_ARTIFACT, path=f"{out_dir}/bundle", optional=True)]


__all__ = ["BUNDLE_ARTIFACT", "judge_artifacts", "judge_output_args"]
