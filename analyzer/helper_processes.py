"""A held project linted by several processes: forked helpers each read, parse, compile-check and summarize a
share of the files, hold them parsed (within a memory budget: the rest are parsed again) while this process builds
the project index, then lint them with its facts: every file is linted once.

The runner uses them when more than one job is wanted, only where forking is safe (Linux, this process single-threaded): a helper starts in about a millisecond
with the engine already imported, and talks to this process over two pipes, in pickles. This process lints a
share itself. A helper that dies (killed, out of memory, a crash in C code) loses no file: the runner lints its
files one at a time in workers of their own, as after a pool's worker died.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import replace

from . import file_pass


def can_fork() -> bool:
    # The pool's rule (file_pass.pool_context): macOS system libraries are not fork-safe, and a fork copies locks
    # that other threads may hold.
    return sys.platform.startswith("linux") and threading.active_count() == 1


class Helper:
    """One forked process holding ``share`` (paths) parsed: ``first_pass``, then ``send`` the facts, ``linted``."""

    _pipes: list = []  # this process's ends of every live helper's pipes (a new helper closes its copies)

    def __init__(self, share: list[str], settings, known: dict[str, bytes], budget: int | None = None):
        self.share = share
        down_r, down_w = os.pipe()  # to the helper
        up_r, up_w = os.pipe()  # from the helper
        pid = os.fork()
        if pid == 0:  # the helper
            for f in Helper._pipes:
                os.close(f.fileno())
            os.close(down_w)
            os.close(up_r)
            _serve(share, settings, known, budget, down_r, up_w)  # never returns
        os.close(down_r)
        os.close(up_w)
        self.pid = pid
        self._down = os.fdopen(down_w, "wb")
        self._up = os.fdopen(up_r, "rb")
        Helper._pipes += [self._down, self._up]

    def first_pass(self) -> list | None:
        """The share's results, each held file's ``held`` this helper; None if the helper died."""
        results = self._receive()
        for r in results or ():
            if r.held is not None:
                r.held = self
        return results

    def send(self, facts: dict[str, tuple]) -> None:
        """The facts (path -> facts) to lint the held files with; the helper starts at once."""
        import pickle

        try:
            pickle.dump(facts, self._down, protocol=pickle.HIGHEST_PROTOCOL)
            self._down.close()
        except OSError:  # a broken pipe: it died, which ``linted`` says
            pass

    def linted(self) -> dict | None:
        """path -> the held file's result, linted; None if the helper died."""
        results = self._receive()
        return None if results is None else {r.path: r for r in results}

    def _receive(self):
        import pickle

        try:
            return pickle.load(self._up)
        except Exception:  # end of file, or a message cut short: it died
            return None

    def stop(self) -> None:
        """End the helper (at once, if it is still working) and reap it."""
        for f in (self._down, self._up):
            Helper._pipes.remove(f)
            try:
                f.close()
            except OSError:
                pass
        import signal  # (here: a run without helpers never loads it)

        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _serve(share: list[str], settings, known: dict[str, bytes], budget: int | None, down_r: int, up_w: int) -> None:
    import pickle
    import signal

    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the process group: the parent stops us
        with os.fdopen(down_r, "rb") as down, os.fdopen(up_w, "wb") as up:
            # trees kept for ``budget`` bytes of sources, the rest parsed again to lint (file_pass.hold_share)
            results = file_pass.hold_share(share, settings, known, budget)
            sent = [replace(r, held=True) if r.held is not None else r for r in results]
            pickle.dump(sent, up, protocol=pickle.HIGHEST_PROTOCOL)
            up.flush()
            facts = pickle.load(down)
            file_pass.keep_linted_trees()  # this process ends with os._exit: freeing them is wasted work
            held = [r for r in results if r.held is not None]
            for r in held:
                file_pass.lint_held(r, settings, facts[r.path])
            pickle.dump(held, up, protocol=pickle.HIGHEST_PROTOCOL)
        code = 0
    finally:
        os._exit(code)  # never back into the parent's code (its atexit handlers, its buffered output)
