"""A one-line progress bar on stderr, only on a terminal and only once a run has taken a while."""

from __future__ import annotations

import sys
import time
from typing import TextIO

SHOW_AFTER_S = 1.0  # short runs print nothing
REDRAW_EVERY_S = 0.1


class ProgressBar:
    def __init__(self, stream: TextIO | None = None, *, width: int = 30, show_after: float = SHOW_AFTER_S):
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.show_after = show_after
        self.started = time.monotonic()
        self.last_draw = 0.0
        self.drawn = False
        self.enabled = _is_tty(self.stream)

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        now = time.monotonic()
        if now - self.started < self.show_after or (now - self.last_draw < REDRAW_EVERY_S and done < total):
            return
        self.last_draw = now
        filled = self.width * done // total
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r[{bar}] {done}/{total} files")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * (self.width + 40) + "\r")  # leave the terminal clean
            self.stream.flush()
            self.drawn = False


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
