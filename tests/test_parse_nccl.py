"""nccl-tests parser: every real log in tests/data/real/nccl with values read off the text, plus layout quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcre_hera.parsers.nccl import parse_nccl

REAL = Path(__file__).parent / "data" / "real" / "nccl"

# Expected values written from reading each log (see tests/data/real/SOURCES.md), not from the parser.
# 24: #wrong sums both halves; each half prints 4,8,...,524288 (= 4*(2**18-1)) then the %g values below.
_WRONG_24_SCI = [1048580, 2097150, 4194300, 8388610, 16777200, 33554400, 67108900, 134218000, 268435000]
REAL_CASES = {
    "04-h100-p5-2node-eks-efa-mpijob-allreduce.txt": dict(
        test=None, status="ok", rows=32, busbw=480.87, algbw=256.46, avg=123.343, wrong=0,
        oob={"count": 0, "ok": True}, transport=None, errors=0, ranks=None),
    "06-h100-gcp-a3mega-2node-allreduce-full.txt": dict(
        test="all_reduce", status="ok", rows=31, busbw=338.82, algbw=180.71, avg=70.742, wrong=0,
        oob={"count": 0, "ok": True}, transport=None, errors=0, ranks=16),
    "07-rtx5090-single-gpu-alltoall-NA-inplace.txt": dict(
        test="alltoall", status="ok", rows=1, busbw=0.0, algbw=1715.44, avg=0.0, wrong=0,
        oob={"count": 0, "ok": True}, transport=None, errors=0, ranks=1),
    "08-256gpu-nccl2.8.4-old-format-no-root-col-allreduce.txt": dict(
        test="all_reduce", status="incomplete", rows=6, busbw=71.55, algbw=35.92, avg=None, wrong=None,
        oob=None, transport=None, errors=0, ranks=None),
    "11-v100-2node-socket-fallback-nccl-warn-init.txt": dict(
        test="all_reduce", status="incomplete", rows=0, busbw=None, algbw=None, avg=None, wrong=None,
        oob=None, transport="NET/Socket", errors=0, ranks=2),  # its one NCCL WARN is in `warnings`
    "13-rtxa6000-2node-init-failure-mpirun-abort.txt": dict(
        test=None, status="failed", rows=0, busbw=None, algbw=None, avg=None, wrong=None,
        oob=None, transport=None, errors=3, ranks=4),
    "17-gb10-dgx-spark-2node-nccltests2.20-allreduce-partial.txt": dict(
        test="all_reduce", status="incomplete", rows=4, busbw=0.96, algbw=0.96, avg=None, wrong=0,
        oob=None, transport=None, errors=0, ranks=2),
    "24-rtx3090-2node-inc-nonzero-wrong-108-FAILED.txt": dict(
        test=None, status="failed", rows=27, busbw=7.50, algbw=7.50, avg=3.02663,
        wrong=2 * (4 * (2**18 - 1) + sum(_WRONG_24_SCI)), oob={"count": 108, "ok": False},
        transport=None, errors=0, ranks=2),
}


def _parse(name: str) -> dict:
    return parse_nccl((REAL / name).read_text(encoding="utf-8"))


def test_every_real_log_has_a_case() -> None:
    assert sorted(p.name for p in REAL.glob("*.txt")) == sorted(REAL_CASES)


@pytest.mark.parametrize("name", sorted(REAL_CASES))
def test_real_log(name: str) -> None:
    exp = REAL_CASES[name]
    res = _parse(name)
    assert res["test"] == exp["test"]
    assert res["status"] == exp["status"]
    assert len(res["rows"]) == exp["rows"]
    assert res["busBandwidthGBps"] == pytest.approx(exp["busbw"]) if exp["busbw"] is not None \
        else res["busBandwidthGBps"] is None
    assert res["algBandwidthGBps"] == pytest.approx(exp["algbw"]) if exp["algbw"] is not None \
        else res["algBandwidthGBps"] is None
    assert res["avgBusBandwidthGBps"] == pytest.approx(exp["avg"]) if exp["avg"] is not None \
        else res["avgBusBandwidthGBps"] is None
    assert res["wrong"] == exp["wrong"]
    assert res["outOfBounds"] == exp["oob"]
    assert res["transport"] == exp["transport"]
    assert len(res["errors"]) == exp["errors"]
    assert res["ranks"] == exp["ranks"]
    json.dumps(res, allow_nan=False)


def test_real_04_mpi_prefix_and_sizes_above_2_32() -> None:
    rows = _parse("04-h100-p5-2node-eks-efa-mpijob-allreduce.txt")["rows"]
    assert rows[0] == {"sizeBytes": 8, "count": 2, "type": "float", "redop": "sum", "root": -1,
                       "outOfPlace": {"timeUs": 87.96, "algBandwidthGBps": 0.0, "busBandwidthGBps": 0.0, "wrong": 0},
                       "inPlace": {"timeUs": 78.05, "algBandwidthGBps": 0.0, "busBandwidthGBps": 0.0, "wrong": 0}}
    last = rows[-1]
    assert (last["sizeBytes"], last["count"]) == (17179869184, 4294967296)
    assert last["outOfPlace"]["timeUs"] == 66988
    assert last["inPlace"]["busBandwidthGBps"] == 482.82


def test_real_06_devices() -> None:
    res = _parse("06-h100-gcp-a3mega-2node-allreduce-full.txt")
    assert res["devices"][0] == {"rank": 0, "host": "ztan-mig-235z", "device": 0, "busId": "0000:04:00",
                                 "name": "NVIDIA H100 80GB HBM3"}
    assert res["devices"][15]["host"] == "ztan-mig-gq73"
    assert res["rows"][-1]["sizeBytes"] == 8589934592


def test_real_07_na_inplace_wrong() -> None:
    row = _parse("07-rtx5090-single-gpu-alltoall-NA-inplace.txt")["rows"][0]
    assert row["redop"] == "none" and row["root"] == -1
    assert row["inPlace"] == {"timeUs": 0.78, "algBandwidthGBps": 43046.10, "busBandwidthGBps": 0.0, "wrong": None}


def test_real_08_old_error_column() -> None:
    res = _parse("08-256gpu-nccl2.8.4-old-format-no-root-col-allreduce.txt")
    row = res["rows"][4]
    assert row["sizeBytes"] == 536870912 and row["redop"] == "sum" and row["root"] is None
    assert row["outOfPlace"] == {"timeUs": 16129.0, "algBandwidthGBps": 33.29, "busBandwidthGBps": 66.31,
                                 "wrong": None, "error": None}
    assert res["maxError"] is None
    assert res["ncclVersion"] == "2.8.4+cuda10.1"


def test_real_11_13_errors() -> None:
    r11 = _parse("11-v100-2node-socket-fallback-nccl-warn-init.txt")
    assert "NCCL WARN NET/OFI Only EFA provider is supported" in r11["warnings"][0]
    assert r11["errors"] == [] and r11["status"] == "incomplete"  # a warning is no failure evidence
    r13 = _parse("13-rtxa6000-2node-init-failure-mpirun-abort.txt")
    assert r13["errors"][0].startswith("fengyun: Test NCCL failure common.cu:959")
    assert r13["errors"][2].startswith("Primary job  terminated normally")


def test_real_17_two_space_wrong_header() -> None:
    res = _parse("17-gb10-dgx-spark-2node-nccltests2.20-allreduce-partial.txt")
    assert res["ncclTestsVersion"] == "2.20.0"
    assert [r["sizeBytes"] for r in res["rows"]] == [8192, 16384, 32768, 65536]
    assert res["rows"][3]["inPlace"]["busBandwidthGBps"] == 1.01


def test_real_24_scientific_wrong() -> None:
    rows = _parse("24-rtx3090-2node-inc-nonzero-wrong-108-FAILED.txt")["rows"]
    assert rows[18]["sizeBytes"] == 2097152 and rows[18]["outOfPlace"]["wrong"] == 1048580
    assert rows[-1]["inPlace"]["wrong"] == 268435000


# ---- synthetic layout quirks -------------------------------------------------------------------------------------

HDR_NEW = (
    "#                                                              out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.5\n"


def _row(size: int, busbw: float = 10.0, wrong: str = "0", redop: str = "sum", root: str = "-1") -> str:
    return (f"{size:12d}  {size // 4:12d}     float  {redop:>6s}  {root:>6s}    100.0   {busbw / 2:5.2f}  "
            f"{busbw:6.2f}  {wrong:>5s}    101.0   {busbw / 2:5.2f}  {busbw:6.2f}  {wrong:>5s}\n")


def test_synthetic_ok_run() -> None:
    res = parse_nccl("# Collective test starting: reduce_scatter_perf\n" + HDR_NEW + _row(1024, 5.0)
                     + _row(2048, 9.0) + FOOTER)
    assert res["test"] == "reduce_scatter"
    assert res["status"] == "ok"
    assert res["busBandwidthGBps"] == 9.0 and res["algBandwidthGBps"] == 4.5
    assert res["avgBusBandwidthGBps"] == 12.5


def test_old_layout_without_redop_and_root() -> None:
    text = ("#                                             out-of-place                    in-place\n"
            "#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n"
            "     1048576        262144   float    123.4    8.50   14.87  0e+00    120.1    8.73   15.28  0e+00\n"
            "     2097152        524288   float    200.0   10.49   18.35  2e-07    199.9   10.49   18.36  1e-06\n"
            " Out of bounds values : 0 OK\n# Avg bus bandwidth    : 16.71\n")
    res = parse_nccl(text)
    assert [r["redop"] for r in res["rows"]] == [None, None] and res["rows"][0]["root"] is None
    assert res["wrong"] is None
    assert res["maxError"] == pytest.approx(1e-06)
    assert res["busBandwidthGBps"] == 18.35
    assert res["status"] == "ok"


def test_old_broadcast_layout_root_only() -> None:
    text = ("#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n"
            "     1048576        262144   float       0    50.00   20.97   20.97  0e+00     49.0   21.40   21.40  0e+00\n"
            "# Avg bus bandwidth    : 21.18\n")
    row = parse_nccl(text)["rows"][0]
    assert row["root"] == 0 and row["redop"] is None
    assert row["outOfPlace"]["busBandwidthGBps"] == 20.97


def test_no_header_rows_are_still_read() -> None:
    res = parse_nccl(_row(4096, 3.0) + _row(8192, 4.0) + FOOTER)
    assert len(res["rows"]) == 2 and res["busBandwidthGBps"] == 4.0 and res["status"] == "ok"


def test_prefixes_and_interleaved_info_lines() -> None:
    lines = ["0: " + x for x in (HDR_NEW + _row(1024, 1.0)).splitlines()]
    lines.append("node1:123:456 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA")
    lines.append("1: " + _row(2048, 2.0).rstrip("\n"))
    lines.append("[1,0]<stdout>:" + _row(4096, 3.0).rstrip("\n"))
    lines.append("2024-05-01T10:00:00.123456789Z " + _row(8192, 4.0).rstrip("\n"))
    lines += ["0: " + x for x in FOOTER.splitlines()]
    res = parse_nccl("\r\n".join(lines))
    assert [r["sizeBytes"] for r in res["rows"]] == [1024, 2048, 4096, 8192]
    assert res["transport"] == "NET/IB"
    assert res["status"] == "ok"


def test_scientific_notation_and_na_cells() -> None:
    row = ("  4294967296  1073741824     float     sum      -1  1.2e+04  357.91  671.08    N/A    N/A    N/A    N/A    N/A\n")
    res = parse_nccl(HDR_NEW + row + FOOTER)
    r = res["rows"][0]
    assert r["sizeBytes"] == 2**32 and r["outOfPlace"]["timeUs"] == 12000.0
    assert r["inPlace"] == {"timeUs": None, "algBandwidthGBps": None, "busBandwidthGBps": None, "wrong": None}
    assert res["wrong"] is None  # validation off: nothing counted, not zero
    assert res["busBandwidthGBps"] == 671.08


def test_duplicated_rows_keep_the_last_at_the_first_position() -> None:
    res = parse_nccl(HDR_NEW + _row(1024, 1.0) + _row(2048, 2.0) + _row(1024, 7.0) + FOOTER)
    assert [r["sizeBytes"] for r in res["rows"]] == [1024, 2048]
    assert res["rows"][0]["outOfPlace"]["busBandwidthGBps"] == 7.0
    # a different redop is a different row
    res = parse_nccl(HDR_NEW + _row(1024, 1.0) + _row(1024, 1.0, redop="max") + FOOTER)
    assert len(res["rows"]) == 2


def test_missing_footer_is_incomplete() -> None:
    assert parse_nccl(HDR_NEW + _row(1024)).get("status") == "incomplete"


def test_truncated_last_row_is_dropped() -> None:
    text = HDR_NEW + _row(1024) + _row(2048)[:60]
    res = parse_nccl(text)
    assert len(res["rows"]) == 1 and res["skippedLines"] == 1 and res["status"] == "incomplete"


def test_nonzero_wrong_and_oob_failed_fail() -> None:
    assert parse_nccl(HDR_NEW + _row(1024, wrong="3") + FOOTER)["status"] == "failed"
    text = HDR_NEW + _row(1024) + "# Out of bounds values : 2 FAILED\n# Avg bus bandwidth    : 1\n"
    res = parse_nccl(text)
    assert res["status"] == "failed" and res["outOfBounds"] == {"count": 2, "ok": False} and res["wrong"] == 0


def test_fatal_error_beats_complete_table() -> None:
    text = HDR_NEW + _row(1024) + "host: Test CUDA failure common.cu:733 'an illegal memory access'\n" + FOOTER
    res = parse_nccl(text)
    assert res["status"] == "failed" and res["errors"] == [
        "host: Test CUDA failure common.cu:733 'an illegal memory access'"]


def test_warn_in_a_completed_run_is_listed_but_ok() -> None:
    warn = "h:1:1 [0] NCCL WARN NET/OFI Unable to find provider\n"
    res = parse_nccl(warn + HDR_NEW + _row(1024) + FOOTER)
    assert res["status"] == "ok" and res["errors"] == [] and res["warnings"] == [warn.strip()]
    assert res["warningCount"] == 1
    # cut short after a WARN: not a failure, not a measurement either
    assert parse_nccl(warn + HDR_NEW + _row(1024))["status"] == "incomplete"


def test_benign_libibverbs_warn_on_a_socket_machine_is_ok() -> None:
    """Issue 9 item 9: `Failed to open libibverbs.so` on a socket-only machine used to mark the log failed."""
    warn = "node-1:12:12 [0] misc/ibvwrap.cc:106 NCCL WARN Failed to open libibverbs.so[.1]\n"
    res = parse_nccl(warn + HDR_NEW + _row(1024) + FOOTER)
    assert res["status"] == "ok" and res["errors"] == [] and len(res["warnings"]) == 1


def test_no_table() -> None:
    assert parse_nccl("")["status"] == "incomplete"
    assert parse_nccl("hello\nworld\n")["rows"] == []
    res = parse_nccl("MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD\n")
    assert res["status"] == "failed" and res["errorCount"] == 1


def test_single_gpu_zero_busbw_is_ok() -> None:
    res = parse_nccl(HDR_NEW + _row(1024, 0.0) + FOOTER)
    assert res["status"] == "ok" and res["busBandwidthGBps"] == 0.0


@pytest.mark.parametrize(("line", "expected"), [
    ("h:1:1 [0] NCCL INFO Using network IB", "NET/IB"),
    ("h:1:1 [0] NCCL INFO Using network Socket", "NET/Socket"),
    ("h:1:1 [0] NCCL INFO Using network AWS Libfabric", "NET/OFI"),
    ("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/AWS Libfabric/0/GDRDMA", "NET/OFI"),
    ("h:1:1 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/Socket/0", "NET/Socket"),
    ("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>", "NET/IB"),
    ("h:1:1 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)", "NET/OFI"),
])
def test_transport_from_info_lines(line: str, expected: str) -> None:
    assert parse_nccl(line + "\n" + HDR_NEW + _row(1024) + FOOTER)["transport"] == expected


def test_using_network_beats_init_chatter() -> None:
    text = ("h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
            "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n"
            "h:1:1 [0] NCCL INFO Using network IB\n")
    assert parse_nccl(text)["transport"] == "NET/IB"


def test_test_name_from_command_line() -> None:
    assert parse_nccl("mpirun -np 16 /opt/nccl-tests/build/sendrecv_perf_mpi -b 8 -e 1G\n")["test"] == "sendrecv"
    assert parse_nccl("$ ./build/broadcast_perf -g 8\n")["test"] == "broadcast"
