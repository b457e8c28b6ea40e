"""An opt-in file-system audit of the request path (``THUNDER_LINT_AUDIT_FS=1``), for the tests that prove
the service never opens, stats or lists a file because of what a request says.

``sys.addaudithook`` sees ``open``, ``os.listdir``, ``os.scandir``, ``os.rename``... but CPython raises
no audit event for ``stat``/``lstat``/``access``, so those are wrapped in the ``posix`` module itself
(importlib and ``os.path`` call them through it). Once armed, every such call is counted and written
to stderr as one ``thunder-lint fs-audit: EVENT ARGS`` line (stderr is an open descriptor: writing to
it is no file-system call). Workers arm it after their warm-up; the server process once it listens.
"""

from __future__ import annotations

import os
import sys

ENV = "THUNDER_LINT_AUDIT_FS"
MARK = "thunder-lint fs-audit:"

# Audit events that name or change a file-system object.
_EVENTS = frozenset({
    "open", "os.listdir", "os.scandir", "os.walk", "os.fwalk", "glob.glob", "glob.glob/2", "os.chdir",
    "os.chmod", "os.chown", "os.mkdir", "os.remove", "os.rmdir", "os.rename", "os.link", "os.symlink",
    "os.truncate", "os.utime", "os.getxattr", "os.listxattr", "os.setxattr", "os.removexattr",
    "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.rmtree",
    "shutil.move", "tempfile.mkstemp", "tempfile.mkdtemp", "pathlib.Path.glob", "pathlib.Path.rglob",
})
_WRAPPED = ("stat", "lstat", "access", "readlink", "statvfs")

_state = {"armed": False, "installed": False, "count": 0}


def enabled() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


def count() -> int:
    return _state["count"]


def _report(event: str, args) -> None:
    if not _state["armed"]:
        return
    _state["armed"] = False  # writing the report must not report itself
    try:
        _state["count"] += 1
        shown = ", ".join(ascii(a)[:200] for a in args[:2])
        sys.stderr.write(f"{MARK} {event} {shown}\n")
        sys.stderr.flush()
    finally:
        _state["armed"] = True


def _hook(event: str, args) -> None:
    if _state["armed"] and event in _EVENTS:
        _report(event, args)


def _wrap(module, name: str) -> None:
    original = getattr(module, name, None)
    if original is None:
        return

    def audited(*args, **kwargs):
        if _state["armed"]:
            _report(f"os.{name}", args)
        return original(*args, **kwargs)

    audited.__wrapped__ = original
    setattr(module, name, audited)
    if getattr(os, name, None) is original:
        setattr(os, name, audited)


def install() -> None:
    """Install the hook and the wrappers (once per process), unarmed."""
    if _state["installed"]:
        return
    _state["installed"] = True
    import posix

    for name in _WRAPPED:
        _wrap(posix, name)
    sys.addaudithook(_hook)


def arm() -> None:
    """From now on, count: what follows is the request path."""
    install()
    _state["armed"] = True


def arm_if_enabled() -> None:
    if enabled():
        arm()
