"""Parse `dcgmi diag` output, table and `--json`/`-j` (DCGM user guide, "DCGM Diagnostics", Output section).

Table: the boxed `| Diagnostic | Result |` layout of DCGM 3.x (`Pass`, `Fail - All`, `Pass - GPUs: 0, 1`,
`Fail - GPU: 3`) and 4.x (`Pass`/`Fail` overall, then `GPUn: Pass` continuation lines, lower-case test names);
category rows (`|-----  Hardware  ---+---|`), `Warning`/`Info` rows whose text dcgmi wraps mid-word at a fixed width
(re-joined here), metadata rows (DCGM Version, Driver Version Detected, GPU Device IDs Detected).
JSON: `{"DCGM GPU Diagnostic": {...}}` (2.x/3.x, `gpu_ids` as "0,1,2" or an int) and `{"DCGM Diagnostic": {...}}`
(4.x, results per `entity_group`/`entity_id`, `test_summary`), `null` entries, stray lines before the JSON.

Several runs in one file (a retried diag, two `dcgmi diag` calls in one log) are judged on the LAST one: a table
restarts at its `| Diagnostic | Result |` header row, and of several JSON results the last one counts.

Status: `error` when dcgmi could not complete the diagnostic (`Error: Unable to complete diagnostic …`, a JSON
`runtime_error`), whatever the partial table says; else `fail` if any test failed; `error` on any other dcgmi error
line; `incomplete` when no test was read, every test was skipped (nothing was diagnosed), or the table never closed
(no bottom border after the last test); else `pass` (some skipped tests are fine).
"""

from __future__ import annotations

import json
import re
from typing import Any

_CATEGORY = re.compile(r"^[+|]-+\s+([A-Za-z][\w /&-]*?)\s+-+[+|]")
_BORDER = re.compile(r"^\+[-=]+\+[-=]+\+\s*$")
_STATUS = re.compile(r"^(pass|fail|skip|warn|not run)\b\s*(?:-\s*(?:(all)|gpus?\s*:\s*([\d,\s]+)))?\s*$", re.I)
_GPU_LINE = re.compile(r"^GPU\s*(\d{1,9})\s*:\s*(pass|fail|skip|warn|not run)\b", re.I)
_GPU_MENTION = re.compile(r"\bGPU\s*(\d{1,9})\b")
_ERROR = re.compile(r"^\s*Error\b\s*:?", re.I)
_NOT_COMPLETED = re.compile(r"Unable to complete diagnostic|Could not start NVVS|Host engine connection", re.I)
_META = {"dcgm version": "version", "driver version detected": "driver", "gpu device ids detected": "deviceIds"}
_STATUS_WORDS = {"pass": "pass", "fail": "fail", "skip": "skip", "warn": "warn", "not run": "skip",
                 "warning": "warn", "skipped": "skip", "failed": "fail", "passed": "pass"}


def _norm(status: Any) -> str:
    return _STATUS_WORDS.get(str(status).strip().lower(), "unknown")


def _new_test(name: str, category: str | None, status: str) -> dict[str, Any]:
    return {"name": name, "category": category, "status": status, "gpus": {}, "warnings": [], "info": []}


def _chunk(cell: str) -> str:
    """The text of one wrapped cell line: dcgmi pads one space left and two right, and wraps mid-word."""
    return cell[1:-2] if len(cell) >= 4 else cell.strip()


def _ids(spec: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d{1,9}", spec)]


def _parse_table(lines: list[str], result: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """Walk the boxed table; returns the tests and whether a closing border followed the last test."""
    tests: list[dict[str, Any]] = []
    category: str | None = None
    current: dict[str, Any] | None = None
    target: tuple[Any, Any] | None = None  # (container, key) that a wrapped continuation line extends
    all_gpus: list[dict[str, Any]] = []    # tests whose status said "All": filled in when GPUs are known
    closed = False
    for line in lines:
        s = line.strip()
        if not s:
            continue
        if s[0] == "+" and _BORDER.match(s):
            closed = True
            target = None
            continue
        if s[0] in "+|" and s[1:2] == "-":
            m = _CATEGORY.match(s)
            if m:
                category = m.group(1).strip()
                target = None
                continue
        if s[0] != "|":
            if _ERROR.match(s):
                result["errors"].append(s)
            continue
        parts = s.split("|")
        if len(parts) < 3:
            continue
        name = parts[1].strip()
        cell = "|".join(parts[2:-1]) if len(parts) > 3 else parts[2]
        value = " ".join(cell.split())
        if name.lower() == "diagnostic" and value.lower() == "result":  # a new run begins: the last one counts
            tests, category, current, target, all_gpus, closed = [], None, None, None, [], False
            result["errors"].clear()
            result["_meta"].clear()
            continue
        if not name:
            m = _GPU_LINE.match(value)
            st = _STATUS.match(value)
            if current is not None and (m or (st and (st.group(3) or st.group(2)))):
                if m:
                    current["gpus"][m.group(1)] = _norm(m.group(2))
                    if current["gpus"][m.group(1)] == "fail":
                        current["status"] = "fail"
                else:
                    _apply_status(current, st, all_gpus)
                target = None
            elif target is not None:
                cont, key = target
                cont[key] = cont[key] + _chunk(cell)
            continue
        lname = name.lower()
        if lname in _META:
            result["_meta"][_META[lname]] = _chunk(cell)
            target = (result["_meta"], _META[lname])
        elif lname in ("warning", "info"):
            holder = current if current is not None else result
            bucket = holder["warnings" if lname == "warning" else "info"]
            bucket.append(_chunk(cell))
            target = (bucket, len(bucket) - 1)
        else:
            st = _STATUS.match(value)
            if st is None:
                target = None
                continue
            current = _new_test(name, category, _norm(st.group(1)))
            _apply_status(current, st, all_gpus)
            tests.append(current)
            closed = False
            target = None
    for test in tests:
        test["warnings"] = [" ".join(w.split()) for w in test["warnings"]]
        test["info"] = [" ".join(w.split()) for w in test["info"]]
    meta = {k: " ".join(v.split()) for k, v in result.pop("_meta").items()}
    result["version"] = meta.get("version")
    result["driverVersion"] = meta.get("driver")
    known = set()
    if meta.get("deviceIds"):
        known = {str(i) for i in range(len([x for x in meta["deviceIds"].split(",") if x.strip()]))}
    for test in tests:
        known.update(test["gpus"])
    for test in all_gpus:
        for gpu in sorted(known, key=int):
            test["gpus"].setdefault(gpu, test["status"])
    return tests, closed


def _apply_status(test: dict[str, Any], st: re.Match[str], all_gpus: list[dict[str, Any]]) -> None:
    """`Fail - All` marks every GPU (known only at the end); `Pass - GPUs: 0, 1` marks the listed ones."""
    status = _norm(st.group(1))
    if st.group(2):
        all_gpus.append(test)
    elif st.group(3):
        for gpu in _ids(st.group(3)):
            test["gpus"][str(gpu)] = status
    if status == "fail":
        test["status"] = "fail"


def _texts(value: Any) -> list[str]:
    """Warnings/info in any of the JSON shapes: a string, a list of strings, or dicts with warning/message."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        for key in ("warning", "message", "msg", "info"):
            if isinstance(value.get(key), str):
                return [value[key]]
        return []
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return [str(value)]


def _result_gpus(res: dict[str, Any]) -> list[str]:
    if "entity_id" in res:
        group = str(res.get("entity_group", "GPU")).upper()
        return [str(res["entity_id"])] if group == "GPU" or res.get("entity_group_id") == 1 else []
    ids = res.get("gpu_ids", res.get("gpu_id"))
    if isinstance(ids, bool) or ids is None:
        return []
    if isinstance(ids, int):
        return [str(ids)]
    if isinstance(ids, list):
        return [str(i) for i in ids if isinstance(i, int) and not isinstance(i, bool)]
    return [str(i) for i in _ids(str(ids))]


def _parse_json(obj: dict[str, Any], result: dict[str, Any]) -> list[dict[str, Any]]:
    root = obj.get("DCGM GPU Diagnostic") or obj.get("DCGM Diagnostic") or obj
    root = root if isinstance(root, dict) else {}
    tests: list[dict[str, Any]] = []
    cats = root.get("test_categories")
    for cat in cats if isinstance(cats, list) else []:
        if not isinstance(cat, dict):
            continue
        entries = cat.get("tests")
        for t in entries if isinstance(entries, list) else []:
            if not isinstance(t, dict):
                continue
            test = _new_test(str(t.get("name", "?")), cat.get("category"), "unknown")
            statuses: list[str] = []
            results = t.get("results")
            for res in results if isinstance(results, list) else []:
                if not isinstance(res, dict):
                    continue
                st = _norm(res.get("status"))
                statuses.append(st)
                for gpu in _result_gpus(res):
                    test["gpus"][gpu] = st
                test["warnings"] += _texts(res.get("warnings", res.get("warning")))
                test["info"] += _texts(res.get("info"))
            summary = t.get("test_summary")
            if isinstance(summary, dict) and summary.get("status") is not None:
                test["status"] = _norm(summary["status"])
                test["warnings"] += _texts(summary.get("warnings"))
            elif statuses:
                test["status"] = next((s for s in ("fail", "warn", "pass", "skip") if s in statuses), "unknown")
            tests.append(test)
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    for holder in (root, obj, meta):
        for key in ("version", "DCGM Version", "dcgm_version"):
            if result["version"] is None and isinstance(holder.get(key), (str, int, float)):
                result["version"] = str(holder[key])
        drv = holder.get("Driver Version Detected", holder.get("driver_version"))
        if result["driverVersion"] is None and isinstance(drv, str):
            result["driverVersion"] = drv
    for key in ("runtime_error", "error"):
        result["errors"] += _texts(root.get(key)) + (_texts(obj.get(key)) if obj is not root else [])
    return tests


def _find_json(text: str) -> tuple[dict[str, Any] | None, str]:
    """The LAST JSON object that starts a line and looks like a diag result (lines around it are noise), and the
    text after it (where dcgmi may still print an `Error:` line)."""
    decoder = json.JSONDecoder()
    found: tuple[dict[str, Any] | None, str] = (None, "")
    pos = 0
    for m in re.finditer(r"^[ \t]*\{", text, re.M):
        if m.start() < pos:
            continue
        try:
            obj, end = decoder.raw_decode(text, m.end() - 1)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and ("DCGM GPU Diagnostic" in obj or "DCGM Diagnostic" in obj
                                      or "test_categories" in obj):
            found, pos = (obj, text[end:]), end
    return found


def parse_dcgm(text: str) -> dict[str, Any]:
    """Read `dcgmi diag` output (table or JSON) into a plain dict; never raises on odd input."""
    result: dict[str, Any] = {"format": None, "version": None, "driverVersion": None, "errors": [],
                              "warnings": [], "info": [], "_meta": {}}
    obj, after = _find_json(text) if "{" in text else (None, "")
    if obj is not None:
        result["format"] = "json"
        result.pop("_meta")
        tests, closed = _parse_json(obj, result), True
        result["errors"] += [line.strip() for line in after.splitlines() if _ERROR.match(line)]
    else:
        tests, closed = _parse_table(text.splitlines(), result)
        result["format"] = "table" if tests else None
    failed = [t for t in tests if t["status"] == "fail"]
    failed_gpus: set[int] = set()
    for t in failed:
        bad = [int(g) for g, st in t["gpus"].items() if st == "fail"]
        if not bad and not t["gpus"]:
            bad = [int(g) for w in t["warnings"] for g in _GPU_MENTION.findall(w)]
        failed_gpus.update(bad)
    if any(_NOT_COMPLETED.search(e) for e in result["errors"]):
        status = "error"  # the diagnostic did not complete: a partial table is no verdict either way
    elif failed:
        status = "fail"
    elif result["errors"]:
        status = "error"
    elif not tests or not closed or all(t["status"] == "skip" for t in tests):
        status = "incomplete"
    else:
        status = "pass"
    result.update({"status": status, "tests": tests, "failedTests": [t["name"] for t in failed],
                   "failedGpus": sorted(failed_gpus)})
    return result


__all__ = ["parse_dcgm"]
