"""The vendored CRD schemas (nvcre_hera/schemas) are the upstream ones listed in their SOURCES.md, unchanged.

SOURCES.md records, per schema, the sha256 of the CRD file and of its storage version's schema as canonical JSON.
The packaged schemas are checked against the second on every machine; where the project's shared/schemas is
found (beside this checkout or above it, as for a worktree), the CRD files are checked against both."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "nvcre_hera" / "schemas"
ROWS = re.findall(r"^\| `(\w+)\.json\.gz` \| `([^`]+)` \| [^|]+ \| (\w+) \| ([0-9a-f]{64}) \| ([0-9a-f]{64}) \|$",
                  (PKG / "SOURCES.md").read_text(), re.M)


def _shared_schemas() -> Path | None:
    for parent in ROOT.parents:
        if (parent / "shared" / "schemas" / "SOURCES.md").is_file():
            return parent / "shared" / "schemas"
    return None


SHARED = _shared_schemas()


def _digest(schema: dict) -> str:
    return hashlib.sha256(json.dumps(schema, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _payload(kind: str) -> dict:
    return json.loads(gzip.decompress((PKG / f"{kind}.json.gz").read_bytes()))


def test_every_vendored_schema_has_a_provenance_row():
    assert len(ROWS) == 7
    assert sorted(r[0] for r in ROWS) == sorted(p.name.split(".")[0] for p in PKG.glob("*.json.gz"))


@pytest.mark.parametrize("kind, crd_file, version, crd_sha, schema_sha", ROWS, ids=[r[0] for r in ROWS])
def test_vendored_schema_matches_its_recorded_digest(kind, crd_file, version, crd_sha, schema_sha):
    payload = _payload(kind)
    assert payload["version"] == version
    assert _digest(payload["schema"]) == schema_sha


def test_a_changed_schema_changes_its_digest():
    """The digest check above can fail: one description edited deep in a schema is caught."""
    kind, *_rest, schema_sha = ROWS[3]
    schema = _payload(kind)["schema"]
    schema["properties"]["spec"]["description"] = "edited"
    assert _digest(schema) != schema_sha


@pytest.mark.skipif(SHARED is None, reason="no shared/schemas beside or above this checkout (the CRD files are "
                    "not in the repository; the digests above still pin the packaged schemas)")
@pytest.mark.parametrize("kind, crd_file, version, crd_sha, schema_sha", ROWS, ids=[r[0] for r in ROWS])
def test_recorded_digests_match_the_crd_file(kind, crd_file, version, crd_sha, schema_sha):
    raw = (SHARED / crd_file).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == crd_sha
    crd = yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    storage = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    assert storage["name"] == version
    assert _digest(storage["schema"]["openAPIV3Schema"]) == schema_sha
