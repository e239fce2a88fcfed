"""Renderings of a CertificationReport dict (built by `nvcre_hera.judge`): text card, JSON, JUnit XML, HTML, CTRF.

`nvcre report REPORT.json --format text|json|junit|html|ctrf` calls `render(report, fmt)`.
"""

from __future__ import annotations

import json

from nvcre_hera.report.card import render_card
from nvcre_hera.report.ctrf import render_ctrf
from nvcre_hera.report.html import render_html
from nvcre_hera.report.junit import render_junit

FORMATS = ("text", "json", "junit", "html", "ctrf")


def render_json(report: dict) -> str:
    """Stable, valid JSON (no NaN), keys in the report's own order."""
    return json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render(report: dict, fmt: str = "text") -> str:
    """The report in one of FORMATS; ValueError naming the choices otherwise."""
    renderers = {"text": render_card, "json": render_json, "junit": render_junit, "html": render_html,
                 "ctrf": render_ctrf}
    if fmt not in renderers:
        raise ValueError(f"unknown report format {fmt!r}: use one of {', '.join(FORMATS)}")
    return renderers[fmt](report)


__all__ = ["FORMATS", "render", "render_card", "render_ctrf", "render_html", "render_json", "render_junit"]
