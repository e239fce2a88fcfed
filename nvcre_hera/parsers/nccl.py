"""Parse nccl-tests output (`all_reduce_perf` & co., https://github.com/NVIDIA/nccl-tests, README "Performance").

Follows the table that `src/common.cu` prints: one row per message size with an out-of-place and an in-place
half (time, algbw, busbw, #wrong), optional `redop`/`root` columns, the `# Out of bounds values` and
`# Avg bus bandwidth` footer. Every layout since 2.x is accepted: the old float `error` column (2.8 and before),
no `root`, no `redop`, the two-space `#  #wrong` header of 2.17+, `N/A` cells, `%g` numbers (`1.04858e+06`),
sizes above 2^32, OpenMPI `[1,0]<stdout>:`, Slurm/torchrun `0: `, kubectl `--prefix`/`--timestamps` prefixes,
and NCCL INFO/WARN lines interleaved anywhere.

Duplicated rows (same size, type, redop, root: a `-N` repeat, a re-read stream) keep the LAST occurrence at the
position of the first, so the newest measurement wins and the row order stays that of the log.

Status: `failed` only on failure evidence: a fatal error line (Test NCCL/CUDA failure, MPI abort banners), any
#wrong > 0, an out-of-bounds FAILED footer; `incomplete` when there are no rows or no `# Avg bus bandwidth` footer
(a log cut short is never a measurement); else `ok`. NCCL WARN lines are listed in `warnings`, never in `errors`,
and never fail a run by themselves (`Failed to open libibverbs.so` on a socket-only machine, EFA/OFI plugins probing
providers: healthy clusters warn); a WARN before a run that never finished leaves it `incomplete`.
"""

from __future__ import annotations

import math
import re
from typing import Any

_PREFIX = re.compile(
    r"^(?:(?:\[\d+,\d+\]<std(?:out|err)>:|\d+: |\[pod/[^\]]*\] ?|\[default\d+\]:|"
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) ))+"
)
_RANK = re.compile(
    r"^#\s+Rank\s+(\d{1,9})\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d{1,9})\s+\[([^\]]*)\]\s*(.*?)\s*$"
)
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d{1,18})\s+(OK|FAILED)", re.I)
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)")
_BINARY = re.compile(
    r"\b(all_reduce|all_gather|alltoall|alltoallv|reduce_scatter|sendrecv|broadcast|reduce|gather|scatter|"
    r"hypercube)_perf\w*"
)
_FATAL = re.compile(
    r"Test (?:NCCL |CUDA )?failure|MPI_ABORT|Primary job\s+terminated|mpirun noticed that|"
    r"mpirun detected that|prterun (?:noticed|detected)|srun: error:|Segmentation fault|"
    r"terminate called after|NCCL error"
)
_NCCL_VERSION = re.compile(r"NCCL version (\S+)")
_TESTS_VERSION = re.compile(r"nccl-tests version (\S+)")
_USING_NETWORK = re.compile(r"Using network (.+?)\s*$")
_VIA_NET = re.compile(r"via NET/([A-Za-z][^/]*?)\s*(?:/|$)")
_NET_USING = re.compile(r"NET/(IB|Socket|OFI)\s*:?\s*(?:Using|Selected)")
_PLUGIN = re.compile(r"(?:Loaded net plugin|NET/Plugin\s*:?\s*(?:Loaded|Using))\s+(.+?)\s*(?:\(|$)")
# `host: Test CUDA failure common.cu:1133 '…'` (common.cu prints the host name first) and its ` .. host pid N:` echo
_FAILURE_HOST = re.compile(r"^(?:\.\. )?([A-Za-z0-9][-A-Za-z0-9_.]*)(?: pid \d+)?: Test (?:NCCL |CUDA )?failure \S+:\d+")
# NCCL's own line prefix `host:pid:tid [dev]`: which host printed an INFO line
_INFO_HOST = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*):\d+:\d+ \[\d+\]")
_NO_IB = re.compile(r"NET/IB\s*:\s*No device found")
_NETWORK_NAMES = {"ib": "NET/IB", "socket": "NET/Socket", "aws libfabric": "NET/OFI", "ofi": "NET/OFI"}
_MAX_ERRORS = 50  # lines kept in `errors` (and in `warnings`); `errorCount`/`warningCount` count them all


def _num(tok: str) -> float | None:
    """A table cell as a finite float; N/A (and anything non-numeric or non-finite) is None."""
    try:
        val = float(tok)
    except ValueError:
        return None
    return val if math.isfinite(val) else None


def _isint(tok: str) -> bool:
    """ASCII digits of a sane length (str.isdigit also accepts '²', which int() rejects)."""
    return tok.isascii() and tok.isdigit() and len(tok) <= 20


def _cells(vals: list[str]) -> list[float | None]:
    """Table cells as finite floats, N/A as None; raises ValueError on anything else (a mangled row).

    The hot path of a 10 MB log: one float() per cell, no regex.
    """
    out: list[float | None] = []
    for v in vals:
        if v == "N/A":
            out.append(None)
        else:
            f = float(v)
            out.append(f if f - f == 0.0 else None)  # inf and nan fail f - f == 0
    return out


def _half(c: list[float | None], old: bool) -> dict[str, Any]:
    """One out-of-place/in-place half: time, algbw, busbw, #wrong (or the old float error)."""
    if old:
        return {"timeUs": c[0], "algBandwidthGBps": c[1], "busBandwidthGBps": c[2], "wrong": None, "error": c[3]}
    w = c[3]
    return {"timeUs": c[0], "algBandwidthGBps": c[1], "busBandwidthGBps": c[2],
            "wrong": None if w is None else int(round(w))}


def _row(tokens: list[str], n_prefix: int | None, old: bool) -> dict[str, Any] | None:
    """A data row, or None when the tokens do not form one (a truncated or mangled line)."""
    if len(tokens) < 7 or not _isint(tokens[0]) or not _isint(tokens[1]) or not tokens[2][:1].isalpha():
        return None
    rest = tokens[3:]
    n = len(rest)
    if n_prefix is None:  # no header seen: guess from the cell count
        n_prefix = n - 8 if 8 <= n <= 10 else n - 4 if 4 <= n <= 6 else -1
        if n_prefix < 0:
            return None
    n_vals = n - n_prefix
    if n_vals not in (4, 8):
        return None
    redop: str | None = None
    root: int | None = None
    for tok in rest[:n_prefix]:
        if _isint(tok.removeprefix("-")):
            root = int(tok)
        elif tok.isalpha():
            redop = tok
        else:
            return None
    try:
        c = _cells(rest[n_prefix:])
    except ValueError:
        return None
    return {"sizeBytes": int(tokens[0]), "count": int(tokens[1]), "type": tokens[2], "redop": redop,
            "root": root, "outOfPlace": _half(c, old), "inPlace": _half(c[4:], old) if n_vals == 8 else None}


def _header_layout(cols: list[str]) -> tuple[int, bool] | None:
    """(number of redop/root columns, old float error column?) from a `#  size count type ...` header."""
    if "type" not in cols or "time" not in cols:
        return None
    t = cols.index("type")
    first_time = cols.index("time")
    if first_time < t:
        return None
    return first_time - t - 1, "error" in cols


def _transport(line: str, found: dict[str, tuple[int, str]]) -> None:
    """Record transport evidence with a strength, so `Using network X` beats a channel line beats init chatter."""
    m = _USING_NETWORK.search(line)
    if m:
        name = m.group(1)
        found["transport"] = (3, _NETWORK_NAMES.get(name.lower(), "NET/" + name))
        return
    m = _VIA_NET.search(line)
    if m:
        name = m.group(1).strip()
        val = (2, _NETWORK_NAMES.get(name.lower(), "NET/" + name))
        if found.get("transport", (0, ""))[0] <= 2:
            found["transport"] = val
        return
    m = _NET_USING.search(line)
    if m and found.get("transport", (0, ""))[0] <= 1:
        found["transport"] = (1, "NET/" + m.group(1))
    m = _PLUGIN.search(line)
    if m:
        found["plugin"] = (1, m.group(1))


# Lines only nccl-tests or NCCL print (after any launcher prefix): the test's `#` header and footer, NCCL's
# `host:pid:tid [dev] NCCL INFO|WARN` lines, and the `host: Test NCCL|CUDA failure file.cu:line` lines of common.cu.
_OWN_LINE = re.compile(
    r"#\s*(?:nThread \d|Using devices|Rank\s+\d|Avg bus bandwidth|Out of bounds values|nccl-tests version|"
    r"Collective test starting|size\s+count\s+type)|"
    r"\S+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN)|"
    r"(?:\.\. )?\S+(?: pid \d+)?: Test (?:NCCL |CUDA )?failure \S+:\d+"
)


def is_nccl_tests_log(text: str) -> bool:
    """Whether `text` holds at least one line that nccl-tests or NCCL printed (a result row, a header, a footer,
    an NCCL INFO/WARN line, a test failure line). A file without one is not an nccl-tests log, whatever words it
    quotes: a README that mentions `alltoall_perf` and `Test NCCL failure` must not read as a failed alltoall."""
    for raw in text.splitlines():
        line = raw
        m = _PREFIX.match(line)
        if m:
            line = line[m.end():]
        s = line.lstrip()
        if _OWN_LINE.match(s):
            return True
        tokens = s.split()
        if tokens[:1] and tokens[0].isdigit() and _row(tokens, None, False) is not None:
            return True
    return False


def parse_nccl(text: str) -> dict[str, Any]:
    """Read an nccl-tests log into a plain dict; never raises on odd input (a fragment is `incomplete`)."""
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    errors: list[str] = []
    n_errors = 0
    warnings: list[str] = []
    n_warnings = 0
    fatal = False
    test: str | None = None
    test_from_banner = False
    layout: tuple[int, bool] | None = None
    avg: float | None = None
    footer = False
    oob_count: int | None = None
    oob_ok = True
    devices: dict[int, dict[str, Any]] = {}
    found: dict[str, tuple[int, str]] = {}
    nccl_version: str | None = None
    tests_version: str | None = None
    skipped = 0
    failed_hosts: dict[str, str] = {}  # host → the first failure line it printed
    host_nets: dict[str, tuple[str, str, int]] = {}  # host → (transport its own INFO lines show, the line, strength)

    for raw in text.splitlines():
        line = raw
        c = line[:1]
        if c == "[" or c.isdigit():
            m = _PREFIX.match(line)
            if m:
                line = line[m.end():]
        s = line.lstrip()
        c = s[:1]
        if c.isdigit():
            tokens = s.split()
            if len(tokens) >= 3 and tokens[2][:1].isalpha() and tokens[1].isdigit():
                row = _row(tokens, layout[0] if layout else None, layout[1] if layout else False)
                if row is not None:
                    rows[(row["sizeBytes"], row["type"], row["redop"], row["root"])] = row
                    continue
                skipped += 1
        elif c == "#":
            if "Avg bus bandwidth" in s:
                m = _AVG.search(s)
                if m:
                    footer = True
                    avg = _num(m.group(1))
            elif "Out of bounds" in s:
                m = _OOB.search(s)
                if m:
                    oob_count = (oob_count or 0) + int(m.group(1))
                    oob_ok = oob_ok and m.group(2).upper() == "OK"
            elif "Rank" in s:
                m = _RANK.match(s)
                if m:
                    devices[int(m.group(1))] = {"rank": int(m.group(1)), "host": m.group(3),
                                                "device": int(m.group(4)), "busId": m.group(5),
                                                "name": m.group(6) or None}
            elif "size" in s and "count" in s:
                lay = _header_layout(s.replace("#", " ").split())
                if lay is not None:
                    layout = lay
            elif "Collective test starting" in s:
                m = _BINARY.search(s)
                if m:
                    test, test_from_banner = m.group(1), True
            elif "nccl-tests version" in s:
                m = _TESTS_VERSION.search(s)
                if m:
                    tests_version = m.group(1)
            continue
        if "NCCL" in s:
            if "NCCL WARN" in s:
                n_warnings += 1
                if n_warnings <= _MAX_ERRORS:
                    warnings.append(s.strip())
                continue
            if "NCCL INFO" in s:
                if "NET" in s or "network" in s:
                    _transport(s, found)
                    _host_network(s, host_nets)
                continue
            if "NCCL version" in s and nccl_version is None:
                m = _NCCL_VERSION.search(s)
                if m:
                    nccl_version = m.group(1)
        if "_perf" in s and not test_from_banner and test is None:
            m = _BINARY.search(s)
            if m:
                test = m.group(1)
        if _FATAL.search(s):
            fatal = True
            n_errors += 1
            if n_errors <= _MAX_ERRORS:
                errors.append(s.strip())
            m = _FAILURE_HOST.match(s.strip())
            if m and m.group(1) not in failed_hosts and len(failed_hosts) < _MAX_ERRORS:
                failed_hosts[m.group(1)] = s.strip()

    result = _summarise(list(rows.values()), errors, n_errors, fatal, test, avg, footer, oob_count,
                        oob_ok, devices, found, nccl_version, tests_version, skipped)
    result.update(warnings=warnings, warningCount=n_warnings,
                  failedHosts=[{"host": h, "line": line} for h, line in failed_hosts.items()],
                  hostNetworks=[{"host": h, "transport": t, "line": line} for h, (t, line, _) in host_nets.items()])
    return result


def _host_network(line: str, host_nets: dict[str, tuple[str, str, int]]) -> None:
    """The transport one host's own NET lines show, strongest evidence first: `NET/IB : No device found` (this
    host has no fabric device: it falls back to TCP) over `NET/IB|Socket|OFI : Using` (what its plugin opened)
    over `Using network X` (the communicator's choice, which every rank prints alike)."""
    m = _INFO_HOST.match(line)
    if not m:
        return
    if _NO_IB.search(line):
        found = ("NET/Socket", 3)
    elif n := _NET_USING.search(line):
        found = ("NET/" + n.group(1), 2)
    elif n := _USING_NETWORK.search(line):
        found = (_NETWORK_NAMES.get(n.group(1).lower(), "NET/" + n.group(1)), 1)
    else:
        return
    if found[1] > host_nets.get(m.group(1), ("", "", 0))[2]:
        host_nets[m.group(1)] = (found[0], line.strip(), found[1])


def _summarise(rows: list[dict[str, Any]], errors: list[str], n_errors: int, fatal: bool, test: str | None,
               avg: float | None, footer: bool, oob_count: int | None, oob_ok: bool,
               devices: dict[int, dict[str, Any]], found: dict[str, tuple[int, str]], nccl_version: str | None,
               tests_version: str | None, skipped: int) -> dict[str, Any]:
    """Fold the collected pieces into the result and decide the status."""
    busbw = [r["outOfPlace"]["busBandwidthGBps"] for r in rows if r["outOfPlace"]["busBandwidthGBps"] is not None]
    algbw = [r["outOfPlace"]["algBandwidthGBps"] for r in rows if r["outOfPlace"]["algBandwidthGBps"] is not None]
    wrong: int | None = None
    max_error: float | None = None
    for r in rows:
        for half in (r["outOfPlace"], r["inPlace"]):
            if half is None:
                continue
            if half["wrong"] is not None:
                wrong = (wrong or 0) + half["wrong"]
            err = half.get("error")
            if err is not None and (max_error is None or err > max_error):
                max_error = err
    failed = fatal or (wrong or 0) > 0 or not oob_ok
    status = "failed" if failed else "incomplete" if not rows or not footer else "ok"
    return {
        "test": test,
        "status": status,
        "rows": rows,
        "busBandwidthGBps": max(busbw) if busbw else None,
        "algBandwidthGBps": max(algbw) if algbw else None,
        "avgBusBandwidthGBps": avg,
        "wrong": wrong,
        "maxError": max_error,
        "outOfBounds": None if oob_count is None else {"count": oob_count, "ok": oob_ok},
        "errors": errors,
        "errorCount": n_errors,
        "transport": found["transport"][1] if "transport" in found else None,
        "netPlugin": found["plugin"][1] if "plugin" in found else None,
        "ranks": len(devices) if devices else None,
        "devices": [devices[k] for k in sorted(devices)] if devices else None,
        "ncclVersion": nccl_version,
        "ncclTestsVersion": tests_version,
        "skippedLines": skipped,
    }


__all__ = ["is_nccl_tests_log", "parse_nccl"]
