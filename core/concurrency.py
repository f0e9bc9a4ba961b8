"""Threads: the process-wide Warp lock and the one-thread-at-a-time rule of a scene.

Warp's rules (warp.capture_begin, Warp 1.19): a CPU graph capture is process-global — while one
thread captures, every CPU launch, copy and allocation made by *any* thread is recorded into that
graph (and a second capture raises "Graph capture already in progress"); loading (compiling) a
module from two threads at once is not safe either. A captured graph may be replayed from several
threads at once, on separate arrays (the env partitions of one scene already do).

So polyphys holds ``WARP_LOCK``, a process-wide shared/exclusive lock:

- shared: the replay of a captured step. Scenes stepped from different threads replay at the same
  time (Warp releases the GIL while a replay runs).
- exclusive: everything else that issues Warp work — build, an uncaptured step (the first step
  loads the modules), a capture, the checks after a step and the NaN reset, reset, forward,
  checkpoints and every public method of an entity (setters write arrays; getters may launch).

The lock is re-entrant within a thread (an entity setter called from a pre-step callback, a reset
from inside a step). A waiting exclusive holder blocks new shared holders, so a capture is never
starved by other scenes' replays. docs/architecture.md ("Threads") has the user-facing rules.

A scene itself is used by one thread at a time: ``SceneGuard`` raises ``SceneStateError`` when a
second thread calls into a scene while the first is inside it ("step() called from two threads").
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from .errors import SceneStateError


class SharedExclusiveLock:
    """A re-entrant readers-writer lock with writer preference."""

    def __init__(self):
        self._cond = threading.Condition(threading.Lock())
        self._shared = 0                 # shared holds by all threads
        self._writer: int | None = None  # thread ident holding it exclusively
        self._writer_depth = 0
        self._writers_waiting = 0
        self._local = threading.local()  # this thread's shared depth

    def _my_shared(self) -> int:
        return getattr(self._local, "depth", 0)

    @contextmanager
    def shared(self):
        me = threading.get_ident()
        with self._cond:
            if self._writer != me and self._my_shared() == 0:
                while self._writer is not None or self._writers_waiting:
                    self._cond.wait()
            self._shared += 1
            self._local.depth = self._my_shared() + 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._local.depth -= 1
                if self._shared == 0:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self):
        me = threading.get_ident()
        with self._cond:
            if self._writer == me:
                self._writer_depth += 1
            else:
                if self._my_shared():
                    raise RuntimeError("polyphys WARP_LOCK: exclusive requested while this thread holds it shared")
                self._writers_waiting += 1
                try:
                    while self._writer is not None or self._shared:
                        self._cond.wait()
                finally:
                    self._writers_waiting -= 1
                self._writer, self._writer_depth = me, 1
        try:
            yield
        finally:
            with self._cond:
                self._writer_depth -= 1
                if self._writer_depth == 0:
                    self._writer = None
                    self._cond.notify_all()


WARP_LOCK = SharedExclusiveLock()


class SceneGuard:
    """One thread inside a scene at a time; re-entrant for that thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._what = ""
        self._depth = 0

    @contextmanager
    def enter(self, what: str):
        me = threading.get_ident()
        with self._lock:
            if self._owner is not None and self._owner != me:
                raise SceneStateError(
                    f"{what} called from two threads: the scene is inside {self._what} in another thread. "
                    f"Use one scene from one thread at a time (several scenes may step in parallel, one per "
                    f"thread; docs/architecture.md, 'Threads')")
            if self._owner is None:
                self._owner, self._what = me, what
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self._owner, self._what = None, ""
