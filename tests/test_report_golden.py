"""Golden report cases, NVCRE style: tests/golden/report/<case>/{input.json, expected.json, expected.txt}.

A reviewer reads the case folder, not this file. input.json holds judge()'s arguments; expected.json is the report
(compared as dicts), expected.txt the text card (compared byte for byte). To regenerate after an intended change:
`NVCRE_UPDATE_GOLDEN=1 pytest tests/test_report_golden.py`, then review the diff before committing.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nvcre_hera.judge import judge
from nvcre_hera.report import render_card, render_json, render_junit

GOLDEN = Path(__file__).parent / "golden" / "report"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "input.json").is_file())
UPDATE = os.environ.get("NVCRE_UPDATE_GOLDEN") == "1"


def _report(case: str) -> dict:
    doc = json.loads((GOLDEN / case / "input.json").read_text())
    return judge(doc["name"], doc["summary"], doc["categories"], generated_at=doc.get("generatedAt"))


def test_golden_cases_exist() -> None:
    assert len(CASES) >= 9, CASES


@pytest.mark.parametrize("case", CASES)
def test_report_json(case: str) -> None:
    report = _report(case)
    path = GOLDEN / case / "expected.json"
    if UPDATE:
        path.write_text(render_json(report))
    assert report == json.loads(path.read_text())


@pytest.mark.parametrize("case", CASES)
def test_card_text(case: str) -> None:
    card = render_card(_report(case))
    path = GOLDEN / case / "expected.txt"
    if UPDATE:
        path.write_text(card)
    assert card == path.read_text()


@pytest.mark.parametrize("case", CASES)
def test_report_is_strict_json_and_junit_parses(case: str) -> None:
    report = _report(case)
    assert json.loads(render_json(report)) == report  # allow_nan=False: no NaN sneaks into the contract
    root = ET.fromstring(render_junit(report).encode())
    assert root.tag == "testsuites"
    failures = len(list(root.iter("failure")))
    expected = sum(len(c["failedGroups"]) for c in report["categories"])  # a step that errored: one "group"
    expected += sum(1 for c in report["categories"] if c.get("incomplete"))  # an Incomplete category: one failure
    assert int(root.get("failures")) == failures == expected
