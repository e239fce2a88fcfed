"""The catalog is pinned to docs/workload-facts.md, the table of image facts with their upstream sources.

The expectations come from the markdown (written by hand from the upstream files it cites), never from the code under
test: a catalog edit that the table does not follow, or a table row without a source, fails here. What this cannot
prove is that the cited upstream lines say what the table says; that is the review of the page itself.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nvcre_hera.catalog import load_catalog
from nvcre_hera.jobs import JobContext, render_job

DOC = Path(__file__).resolve().parent.parent / "docs" / "workload-facts.md"
FIELDS = ("image", "binary", "entrypoint", "user", "ports", "env", "mpi")
SSH_FIELDS = ("sshd", "mpirun")  # entries whose jobs start sshd workers and an mpirun launcher (mpi, torch)
CITATION = re.compile(r"L\d+|https?://|@ ?[0-9a-f]{7}|\[[A-Z]+\]")


def facts_tables(text: str) -> dict[str, dict[str, tuple[str, str]]]:
    """`## domain/variant` sections → {field: (value cell, source cell)} of the first table under each."""
    tables: dict[str, dict[str, tuple[str, str]]] = {}
    current: str | None = None
    for line in text.splitlines():
        heading = re.fullmatch(r"## ([a-z0-9-]+/[a-z0-9-]+)\s*", line)
        if heading:
            current = heading.group(1)
            tables[current] = {}
            continue
        if current and line.startswith("|") and not re.match(r"\|\s*-", line):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 3 and cells[0] != "field":
                tables[current][cells[0]] = (cells[1], cells[2])
    return tables


def first_code(cell: str) -> str:
    found = re.search(r"`([^`]*)`", cell)
    assert found, f"no `value` in {cell!r}"
    return found.group(1)


TABLES = facts_tables(DOC.read_text())
KEYS = sorted(load_catalog())


def _required(key: str) -> tuple[str, ...]:
    entry = load_catalog()[key]
    return FIELDS + (SSH_FIELDS if entry.framework in ("mpi", "torch") else ())


def test_every_entry_has_every_field_with_a_source_or_unverified():
    """100% of catalog entries: a row for each field, each with a source or the word unverified."""
    missing = []
    for key in KEYS:
        rows = TABLES.get(key, {})
        for field in _required(key):
            if field not in rows:
                missing.append(f"{key}: no row {field!r}")
                continue
            value, source = rows[field]
            if not value or not (CITATION.search(source) or "unverified" in source.lower()):
                missing.append(f"{key}: {field} has no source and is not marked unverified ({source!r})")
    assert not missing, "\n".join(missing)
    assert set(TABLES) >= set(KEYS)


def test_no_table_for_an_entry_that_does_not_exist():
    assert set(TABLES) <= set(KEYS), f"stale sections: {sorted(set(TABLES) - set(KEYS))}"


@pytest.mark.parametrize("key", KEYS)
def test_catalog_image_and_binary_match_the_table(key: str):
    entry = load_catalog()[key]
    rows = TABLES[key]
    assert entry.image == first_code(rows["image"][0])
    assert entry.command[0] == first_code(rows["binary"][0])
    if entry.framework in ("mpi", "torch"):
        assert entry.sshd == first_code(rows["sshd"][0])
        assert entry.mpirun == first_code(rows["mpirun"][0])
    if "script" in rows:
        assert f"{entry.megatron_dir}/pretrain_gpt.py" == first_code(rows["script"][0])
        assert "{megatronDir}/pretrain_gpt.py" in entry.args
    if "parameters" in rows:
        assert first_code(rows["parameters"][0]) in entry.args


def _job(key: str, options: dict | None = None) -> dict:
    entry = load_catalog()[key]
    ctx = JobContext("wf", "uid", "nvcre", "onprem", "h100")
    nodes = ["a"] if entry.scope == "per-node" else ["a", "b"]
    return render_job(entry, 0, dict(options or {}), {"id": "g0", "nodes": nodes}, 0, ctx)


@pytest.mark.parametrize("key", [k for k in KEYS if load_catalog()[k].framework in ("mpi", "torch")])
def test_generated_mpijob_uses_the_tables_port_sshd_and_mpirun(key: str):
    """The job a cluster would run, not the YAML: worker sshd, its probe, and the launcher's ssh port all equal the
    table's port; the launcher starts the table's mpirun and the worker the table's sshd."""
    rows = TABLES[key]
    port = int(first_code(rows["ports"][0]))
    specs = _job(key)["spec"]["mpiReplicaSpecs"]
    worker = specs["Worker"]["template"]["spec"]["containers"][0]
    launcher = specs["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert worker["command"][0] == first_code(rows["sshd"][0])
    assert worker["command"][worker["command"].index("-p") + 1] == str(port)
    assert worker["readinessProbe"]["tcpSocket"]["port"] == port
    assert launcher[0] == first_code(rows["mpirun"][0])
    rsh = launcher[launcher.index("plm_rsh_args") + 1].split()
    assert rsh[rsh.index("-p") + 1] == str(port)
    assert launcher[launcher.index("plm_rsh_args") - 1] == "--mca"
    assert first_code(rows["binary"][0]) in launcher


@pytest.mark.parametrize("key", [k for k in KEYS if load_catalog()[k].framework == "exec"])
def test_generated_jobset_runs_the_tables_binary(key: str):
    pod = _job(key)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == [first_code(TABLES[key]["binary"][0])]
    if first_code(TABLES[key]["ports"][0]) == "none":
        assert "ports" not in container and "--host" not in container["args"]
