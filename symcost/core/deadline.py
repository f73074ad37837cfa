"""A time limit on one piece of symbolic work: ``with deadline(1.5): ...`` raises ``DeadlineExceeded``
inside the block once it has used that many seconds of CPU time.

SymPy's piecewise folding and solving can take minutes on a nested ``Min``/``Max`` of a serving metric
(``scale ... --metric kv_capacity --wrt tp``: 14 s of CPU for three nested regimes), and no bound on
the expression's size predicts which ones will. Commands that call them put the work under a deadline
and refuse in one line when it passes, so every command answers or refuses within a moment.

The limit is the process's user CPU time (``signal.setitimer(ITIMER_VIRTUAL)``, ``SIGVTALRM``), not
wall time, so the same command gives the same answer on a loaded machine; it works in the main thread
of a POSIX process, where the CLI runs; elsewhere (a thread, Windows) the block runs without a limit.
Nested deadlines keep the outer one's remaining time.

>>> with deadline(5):
...     sum(range(10))
45
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time


class DeadlineExceeded(BaseException):
    """The block's seconds ran out (caught by the caller, which says what did not finish). A
    ``BaseException``, as ``KeyboardInterrupt`` is: SymPy catches ``Exception`` in places (an
    assumption query that fails is taken as unknown), which would swallow the signal and let the
    work run on past its limit."""


_ACTIVE: list[float] = []  # the CPU end times of the deadlines in force, innermost last


def _fire(signum, frame):
    # fired inside a finaliser or weakref callback, the exception is "ignored" by Python (printed, not
    # raised): fire again shortly, so the block still stops at the next ordinary bytecode
    signal.setitimer(signal.ITIMER_VIRTUAL, 0.01)
    raise DeadlineExceeded()


def _quiet(unraisable, hook=sys.unraisablehook):
    """``sys.unraisablehook`` under a deadline: a DeadlineExceeded swallowed in a callback is not printed
    (the timer fires again); anything else goes to the hook that was there."""
    if isinstance(unraisable.exc_value, DeadlineExceeded):
        return
    hook(unraisable)


@contextlib.contextmanager
def deadline(seconds: float):
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return
    end = time.process_time() + seconds
    if _ACTIVE:
        end = min(end, _ACTIVE[-1])
    _ACTIVE.append(end)
    previous = signal.signal(signal.SIGVTALRM, _fire)
    hook = sys.unraisablehook
    sys.unraisablehook = lambda u: _quiet(u, hook)
    signal.setitimer(signal.ITIMER_VIRTUAL, max(end - time.process_time(), 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        sys.unraisablehook = hook
        _ACTIVE.pop()
        signal.signal(signal.SIGVTALRM, previous)
        if _ACTIVE:  # the outer deadline goes on with what it has left
            signal.setitimer(signal.ITIMER_VIRTUAL, max(_ACTIVE[-1] - time.process_time(), 1e-3))


def until(end: float | None):
    """``deadline`` ending at the CPU time ``end`` (a ``time.process_time()`` value), or no limit when
    ``end`` is None: one budget spent over several blocks of a computation."""
    return contextlib.nullcontext() if end is None else deadline(max(end - time.process_time(), 1e-3))
