"""The example certification as a Hera flow: `hera generate yaml flows/` renders it (the same as `nvcre compile`)."""

from pathlib import Path

from nvcre_hera.compile.plan import CompileOptions
from nvcre_hera.compile.workflow import build
from nvcre_hera.spec_load import load_certification

_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "certification.yaml"

gpu_cluster_cert = build(load_certification(_EXAMPLE), CompileOptions(kind="workflow"))
