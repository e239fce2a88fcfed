"""Run one `nvcre-step` invocation in this process, as a pod would run it: its exit code and its log.

Both the local executor and the e2e pod runner run steps in process, several threads at a time. A step prints
through `log`; anything else it writes to stdout or stderr (argparse's usage error) is kept in that step's log, never lost and never mixed into
another thread's output. `contextlib.redirect_stdout` cannot do that: it swaps the process-wide `sys.stdout`, and
two overlapping redirects that end out of order leave `sys.stdout` pointing at a dead buffer (every later print of
the process vanished that way in `make e2e`). Here one proxy routes each thread's writes to its own buffer.
"""

from __future__ import annotations

import io
import sys
import threading
import traceback
from contextlib import contextmanager
from typing import Any, Iterator


class _PerThreadStream(io.TextIOBase):
    """sys.stdout or sys.stderr while any capture is open: a capturing thread's writes go to its buffer, every other
    thread's to `fallback`, the stream that was there before."""

    def __init__(self, fallback: Any) -> None:
        self.fallback = fallback
        self.local = threading.local()

    def _target(self) -> Any:
        local = self.__dict__.get("local")  # absent while the object is built or torn down: write through
        return getattr(local, "buffer", None) or self.__dict__.get("fallback") or sys.__stdout__

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        capturing = getattr(self.__dict__.get("local"), "buffer", None) is not None
        return not capturing and bool(self._target().isatty())


_STREAMS = ("stdout", "stderr")
_lock = threading.Lock()
# Every proxy ever installed, kept for the life of the process: CPython 3.11's print() holds a borrowed reference to
# sys.stdout (Python/bltinmodule.c builtin_print, `_PySys_GetAttr`), so a stream that one thread takes out of sys
# while another prints to it can be freed under that print: a segmentation fault (python/cpython#130163, fixed by
# python/cpython#130503 in later releases). `make e2e` died so, exit 139, with faulthandler showing one thread in
# print() and another in a step's capture. So the proxies go into sys once and are never taken out or freed; they
# write every thread that is not capturing to the stream that was there before, which they keep alive.
_installed: list[_PerThreadStream] = []


@contextmanager
def captured_output() -> Iterator[io.StringIO]:
    """What this thread prints to stdout or stderr inside the block, in order; other threads print as before."""
    with _lock:
        for name in _STREAMS:
            if not isinstance(getattr(sys, name), _PerThreadStream):  # first use, or something else replaced it
                proxy = _PerThreadStream(getattr(sys, name))
                _installed.append(proxy)
                setattr(sys, name, proxy)
        proxies = [getattr(sys, name) for name in _STREAMS]
    buffer = io.StringIO()
    previous = [getattr(p.local, "buffer", None) for p in proxies]
    for proxy in proxies:
        proxy.local.buffer = buffer
    try:
        yield buffer
    finally:
        for proxy, before in zip(proxies, previous):
            proxy.local.buffer = before


def run_step(argv: list[str], *, cluster: Any, outputs: Any) -> tuple[int, str]:
    """`nvcre-step ARGV` against `cluster`: (exit code, log). argparse's exit is the pod's exit code; an exception
    is exit 1 with its traceback in the log, as a crashing container would show."""
    from nvcre_hera.steps.main import main as step_main

    lines: list[str] = []
    with captured_output() as stray:
        try:
            code = step_main(argv, cluster=cluster, outputs=outputs, log=lines.append)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except Exception:  # noqa: BLE001 - a crashing step is a failed pod, not a crashed runner
            lines.append(traceback.format_exc())
            code = 1
    return int(code or 0), "\n".join(lines) + stray.getvalue()


__all__ = ["captured_output", "run_step"]
