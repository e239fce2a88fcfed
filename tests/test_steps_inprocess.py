"""In-process steps (local executor, e2e pod runner) capture their own output per thread.

The interleaving below is the one that silenced `make e2e` in CI: thread A starts capturing, thread B starts, A ends
first, B ends last. With `contextlib.redirect_stdout` B's exit restored A's dead buffer as `sys.stdout`, and every
later print of the process was lost (the differential's summary line among them). And a capture that took its proxy
out of sys again crashed the process (below).
"""

import sys
import threading

from nvcre_hera.steps.inprocess import captured_output, run_step
from nvcre_hera.steps.io import Outputs


def test_overlapping_captures_ending_out_of_order_restore_the_streams(capsys) -> None:
    before_out, before_err = sys.stdout, sys.stderr
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    got: dict[str, str] = {}

    def a() -> None:
        with captured_output() as buf:
            print("from a")
            a_in.set()
            b_in.wait(5)
        got["a"] = buf.getvalue()
        a_out.set()

    def b() -> None:
        a_in.wait(5)
        with captured_output() as buf:
            b_in.set()
            a_out.wait(5)
            print("from b", file=sys.stderr)
        got["b"] = buf.getvalue()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    a_in.wait(5)
    print("from main while a captures")
    for t in threads:
        t.join(5)
    print("from main after")
    # the proxies stay in sys, writing a thread that does not capture to the streams that were there before
    assert sys.stdout.fallback is before_out and sys.stderr.fallback is before_err
    assert got == {"a": "from a\n", "b": "from b\n"}
    assert capsys.readouterr().out == "from main while a captures\nfrom main after\n"


def test_a_capture_never_takes_a_stream_out_of_sys(capsys) -> None:
    """CPython 3.11's print() holds a borrowed reference to sys.stdout: a stream taken out of sys while another thread
    prints to it can be freed under that print (python/cpython#130163; `make e2e` died so, exit 139). After the first
    capture the object in sys stays the same, however captures start and end."""
    with captured_output():
        installed = sys.stdout, sys.stderr
    for _ in range(3):
        with captured_output():
            assert (sys.stdout, sys.stderr) == installed
        assert (sys.stdout, sys.stderr) == installed


def test_argparse_rejection_is_the_pod_exit_code_and_its_log(capsys) -> None:
    code, log = run_step(["judge", "--plan", "{}", "--summary", "not-json"], cluster=None,
                         outputs=Outputs("/tmp/nvcre", in_memory=True))
    assert code == 2
    assert "argument --summary: not JSON" in log
    assert capsys.readouterr().err == ""  # in the step's log, as a container's stderr is, not on the runner's


def test_a_crashing_step_is_exit_1_with_its_traceback(monkeypatch, capsys) -> None:
    import nvcre_hera.steps.main as step_main

    def crash(argv, **_):
        print("started")
        raise RuntimeError("cluster unreachable")

    monkeypatch.setattr(step_main, "main", crash)
    code, log = run_step(["discover"], cluster=None, outputs=Outputs("/tmp/nvcre", in_memory=True))
    assert code == 1
    assert log.startswith("Traceback") and "RuntimeError: cluster unreachable" in log
    assert log.rstrip().endswith("started")  # stray prints are kept after the step's own log lines
    assert capsys.readouterr().out == ""
