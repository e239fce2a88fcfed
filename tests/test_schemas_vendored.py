"""The vendored CRD schemas (nvcre_hera/schemas) are the upstream ones listed in their SOURCES.md, unchanged."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest
import yaml

PKG = Path(__file__).resolve().parent.parent / "nvcre_hera" / "schemas"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "schemas"
ROWS = re.findall(r"^\| `(\w+)\.json\.gz` \| `([^`]+)` \| [^|]+ \| (\w+) \| ([0-9a-f]{64}) \|$",
                  (PKG / "SOURCES.md").read_text(), re.M)


def test_every_vendored_schema_has_a_provenance_row():
    assert sorted(r[0] for r in ROWS) == sorted(p.name.split(".")[0] for p in PKG.glob("*.json.gz"))


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/schemas is not beside this checkout")
@pytest.mark.parametrize("kind, crd_file, version, sha", ROWS)
def test_vendored_schema_matches_the_crd(kind, crd_file, version, sha):
    raw = (SHARED / crd_file).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == sha
    payload = json.loads(gzip.decompress((PKG / f"{kind}.json.gz").read_bytes()))
    assert payload["version"] == version
    if len(raw) < 1_000_000:  # the big Argo CRDs take seconds to parse; the sha256 above already pins them
        crd = yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        storage = next(v for v in crd["spec"]["versions"] if v.get("storage"))
        assert payload["schema"] == storage["schema"]["openAPIV3Schema"]
