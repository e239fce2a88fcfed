"""A nightly revalidation: the example certification as a CronWorkflow at 03:00 UTC, one run at a time."""

from pathlib import Path

from nvcre_hera.compile.plan import CompileOptions
from nvcre_hera.compile.workflow import build
from nvcre_hera.spec_load import load_certification

_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "certification.yaml"

nightly = build(load_certification(_EXAMPLE), CompileOptions(kind="cron", schedule="0 3 * * *"))
