"""Each golden report's HTML page, rendered by a real browser (Debian's headless `chromium`): the charts are laid
out, visible, and painted.

Two renders per page, both offline (a temp profile, no network access is needed: the page has no external asset):
1. `--dump-dom` of the page plus a probe script this test appends (the page itself has no script): the laid-out box
   of every `svg.chart` and how many of its shapes have a non-empty bounding box;
2. `--screenshot`: the PNG, decoded here with zlib (no imaging library), and in each chart's box the share of
   non-white pixels and of saturated ones (the red, blue and green of the lines and bars).
What this does not prove: how other browsers lay the page out. `make test` installs chromium when it is missing and
runs as root (as `launch-deps` installs Debian packages); without it and without root this test is skipped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import pytest

from nvcre_hera.judge import judge
from nvcre_hera.report import render_html

GOLDEN = Path(__file__).parent / "golden" / "report"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "input.json").is_file())
WIDTH = 700  # one chart per row (580 px) with the page's margins
SCALE = 0.5  # device pixels per CSS pixel in the screenshot: enough to see lines, small enough to decode in Python
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

PROBE = """<script>
addEventListener('load', () => {
  const out = [...document.querySelectorAll('svg.chart')].map(svg => {
    const r = svg.getBoundingClientRect(), s = getComputedStyle(svg);
    const shapes = [...svg.querySelectorAll('path,rect,circle,line')].filter(e => {
      const b = e.getBBox(); return b.width > 0 || b.height > 0; }).length;
    return {kind: svg.getAttribute('class'), x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height,
            visible: s.visibility === 'visible' && s.display !== 'none' && +s.opacity > 0, shapes};
  });
  const pre = document.createElement('pre'); pre.id = 'probe';
  pre.textContent = JSON.stringify({charts: out, height: document.documentElement.scrollHeight});
  document.body.appendChild(pre);
});
</script>"""

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed: `make test` installs it as root (apt-get install chromium); "
           "not root: install Debian's chromium to run the browser check")


def _chromium(args: list[str], profile: str) -> subprocess.CompletedProcess:
    argv = [CHROMIUM, "--headless", "--disable-gpu", f"--user-data-dir={profile}", "--no-first-run",
            "--hide-scrollbars", "--disable-extensions", "--disable-background-networking",
            "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", *args]  # no network: nothing to fetch
    if os.geteuid() == 0:
        argv.insert(1, "--no-sandbox")  # chromium refuses to run as root with its sandbox
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def decode_png(data: bytes) -> tuple[int, int, int, bytes]:
    """(width, height, bytes per pixel, raw pixels) of an 8-bit RGB or RGBA PNG (the PNG spec's filters 0-4)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = bytearray(stride * height)
    prev = bytearray(stride)
    for y in range(height):
        f, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                row[i] = (row[i] + row[i - bpp]) & 255
        elif f == 2:
            row = bytearray((a + b) & 255 for a, b in zip(row, prev))
        elif f == 3:
            for i in range(stride):
                row[i] = (row[i] + ((row[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif f == 4:
            for i in range(stride):
                a = row[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out[y * stride:(y + 1) * stride] = row
        prev = row
    return width, height, bpp, bytes(out)


def _pixels(png: tuple[int, int, int, bytes], box: dict) -> tuple[float, float]:
    """(share of non-white pixels, share of saturated pixels) inside a chart's box (CSS px, scaled)."""
    width, height, bpp, px = png
    x0, y0 = int(box["x"] * SCALE) + 1, int(box["y"] * SCALE) + 1
    x1, y1 = min(width, int((box["x"] + box["w"]) * SCALE) - 1), min(height, int((box["y"] + box["h"]) * SCALE) - 1)
    total = inked = saturated = 0
    for y in range(y0, y1):
        for x in range(x0, x1):
            i = (y * width + x) * bpp
            r, g, b = px[i], px[i + 1], px[i + 2]
            total += 1
            inked += min(r, g, b) < 235
            saturated += max(r, g, b) - min(r, g, b) > 60
    return inked / max(1, total), saturated / max(1, total)


def _report(case: str) -> dict:
    doc = json.loads((GOLDEN / case / "input.json").read_text())
    return judge(doc["name"], doc["summary"], doc["categories"], generated_at=doc.get("generatedAt"))


@pytest.mark.parametrize("case", CASES)
def test_golden_report_charts_render_visibly(case: str, tmp_path: Path) -> None:
    report = _report(case)
    page = render_html(report)
    probe_page = tmp_path / "probe.html"
    probe_page.write_text(page.replace("</body>", PROBE + "</body>"))
    for _attempt in range(2):  # a machine under load may end the first one before the load event: once more
        with tempfile.TemporaryDirectory() as profile:
            dom = _chromium(["--virtual-time-budget=5000", "--dump-dom", probe_page.as_uri()], profile)
        found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
        if found:
            break
    assert found, f"chromium printed no probe (exit {dom.returncode}): {dom.stderr[-500:]}"
    probe = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    # every golden report has the bandwidth and the per-node chart (a diagnose category its rounds chart instead);
    # one without any sample (missing-metric) shows the bandwidth chart's frame saying so, and at least one chart
    # with data
    diagnose_only = all(c.get("diagnose") for c in report["categories"])
    expected = {"diag"} if diagnose_only else {"bw", "nodes"}
    assert expected <= {c["kind"].split()[1] for c in probe["charts"]}, probe["charts"]
    charts = [c for c in probe["charts"] if "empty" not in c["kind"]]
    assert charts, probe["charts"]
    for c in probe["charts"]:
        assert c["visible"] and c["w"] >= 400 and c["h"] >= (100 if c in charts else 60), c
        assert c["x"] >= 0 and c["x"] + c["w"] <= WIDTH, c  # inside the page, not clipped off its right edge
    for c in charts:
        assert c["shapes"] >= 5, c

    page_file = tmp_path / "page.html"
    page_file.write_text(page)
    shot = tmp_path / "page.png"
    with tempfile.TemporaryDirectory() as profile:
        run = _chromium([f"--screenshot={shot}", f"--window-size={WIDTH},{int(probe['height']) + 20}",
                         f"--force-device-scale-factor={SCALE}", page_file.as_uri()], profile)
    assert shot.is_file(), f"no screenshot (exit {run.returncode}): {run.stderr[-500:]}"
    png = decode_png(shot.read_bytes())
    for c in charts:
        inked, saturated = _pixels(png, c)
        assert inked > 0.02, (c, inked)  # painted: axes, grid, lines or bars, not a blank box
        assert saturated > 0.002, (c, saturated)  # and in colour: the measured lines or bars, not only the frame
