"""Recursion depth under the interpreter: as deep as eager, a RecursionError past that, never a crash.

Each interpreted call costs several native Python frames (_run -> CALL handler -> call -> execute), so
under the user's recursion limit interpreted code reached about a quarter of eager's depth; raising the
limit without bound let deep recursion overflow the C stack (SIGSEGV at depth 20,000 with
setrecursionlimit(100000)). While the interpreter runs, the interpreted depth is limited to what eager
would allow from the caller's depth, capped at MAX_INTERPRETED_DEPTH (measured safe: 12,000 ran here),
and the native limit is raised just enough for that many interpreted frames.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager

MAX_INTERPRETED_DEPTH = 5000
NATIVE_FRAMES_PER_CALL = 6  # measured about 4.2 on 3.11; kept generous
_MARGIN = 60  # native frames below the user's function (jit, front end, tracing) and for the handlers


def user_depth() -> int:
    """Native frames of the program around the jitted call (the compiler's and analyzer's own excluded):
    the depth at which eager would have called the function."""
    import os

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # compiler/
    skip = (here + os.sep, os.path.join(os.path.dirname(here), "analyzer") + os.sep, os.path.dirname(
        contextmanager.__code__.co_filename) + os.sep + "contextlib.py")
    frame, n = sys._getframe(1), 0
    while frame is not None:
        if not frame.f_code.co_filename.startswith(skip):
            n += 1
        frame = frame.f_back
    return n


def native_depth() -> int:
    frame, n = sys._getframe(1), 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


@contextmanager
def eager_depth(interp, user_depth_at_call: int):
    """While `interp` runs: the interpreted depth eager would allow a function called at native depth
    `user_depth_at_call`, and a native limit high enough to reach it."""
    limit = sys.getrecursionlimit()
    allowed = max(1, min(limit - user_depth_at_call - 1, MAX_INTERPRETED_DEPTH))
    interp.depth_limit = allowed
    needed = native_depth() + allowed * NATIVE_FRAMES_PER_CALL + _MARGIN
    if needed > limit:
        sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        if sys.getrecursionlimit() == needed:
            sys.setrecursionlimit(limit)
