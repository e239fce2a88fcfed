"""Concurrency caps: workflow `parallelism`, template `parallelism`, semaphores and mutexes.

argo-workflows v4.1.2 docs/parallelism.md and docs/synchronization.md: `spec.parallelism` caps running pods in the
whole workflow; a template's `parallelism` caps its active children (Pods, DAGs, Steps) within one invocation;
a semaphore caps holders across the namespace, a mutex is a semaphore of one. A request waits in the queue of the
first full cap it meets (FIFO), so a release only rescans the requests that cap was blocking.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable


@dataclass(eq=False)
class Cap:
    """A counter with a limit and the requests it is blocking."""

    name: str
    limit: int
    used: int = 0
    waiting: deque[_Request] = field(default_factory=deque)


@dataclass(eq=False)
class _Request:
    caps: list[Cap]
    start: Callable[[], None]


class Caps:
    """Acquire-all-or-wait over a list of caps; `start` runs once all are held."""

    def __init__(self) -> None:
        self._pumping = False
        self._ready: deque[Cap] = deque()

    def acquire(self, caps: list[Cap], start: Callable[[], None]) -> None:
        self._try(_Request(caps, start))

    def _try(self, req: _Request) -> bool:
        for cap in req.caps:
            if cap.used >= cap.limit:
                cap.waiting.append(req)
                return False
        for cap in req.caps:
            cap.used += 1
        req.start()
        return True

    def release(self, caps: list[Cap]) -> None:
        for cap in caps:
            cap.used -= 1
            self._ready.append(cap)
        if self._pumping:
            return
        self._pumping = True
        try:
            while self._ready:
                cap = self._ready.popleft()
                while cap.waiting and cap.used < cap.limit:  # a blocked request moves to another cap's queue
                    self._try(cap.waiting.popleft())
        finally:
            self._pumping = False


__all__ = ["Cap", "Caps"]
