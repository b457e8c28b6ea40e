"""Running the user's program as `python script.py args` or `python -m module args` would.

sys.argv, sys.path[0] (the script's folder, or the current folder for -m) and __main__ are python's; stdin
and stdout are the program's own. What ended the program is returned, never raised: a normal end, SystemExit
(with its code), an exception (with a traceback summary of the user's frames), Ctrl-C, or a StopRun.
"""
from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import dataclass

from .collector import StopRun

_HERE = os.path.dirname(os.path.abspath(__file__))
_ANALYZER_DIR = os.path.dirname(_HERE) + os.sep


@dataclass
class Outcome:
    kind: str  # "ok" | "exit" | "error" | "interrupted" | "stopped"
    exit_code: int = 0  # the program's own status (SystemExit's code; 1 for an uncaught exception)
    summary: str = ""  # one paragraph for the report: what ended the program and where
    traceback: str = ""  # python's traceback text, user frames only

    @property
    def failed(self) -> bool:
        return self.kind == "error" or (self.kind == "exit" and self.exit_code != 0)


def main_file(target: str, module: bool) -> str | None:
    """The file that runs as __main__ (for -m: the module's, or its package's __main__.py)."""
    if not module:
        return os.path.abspath(target)
    import importlib.util

    try:
        spec = importlib.util.find_spec(target)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(target + ".__main__")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin and os.path.exists(spec.origin) else None


def run(target: str, args: list[str], *, module: bool) -> Outcome:
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    sys.argv = [target, *args]
    if module:
        path0 = os.getcwd()
    else:
        path0 = os.path.dirname(os.path.abspath(target))
    if sys.path:
        sys.path[0] = path0
    else:
        sys.path.append(path0)
    if module and main_file(target, True) is None:  # as `python -m nosuch`: one line, status 1
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
        print(f"{sys.executable}: No module named {target}", file=sys.stderr)
        return Outcome("error", 1, f"no module named {target}")
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None or code == 0:
            return Outcome("exit", 0, "")
        if isinstance(code, int):
            return Outcome("exit", code, f"the program exited with status {code}")
        print(code, file=sys.stderr)  # python prints a non-int exit value and exits 1
        return Outcome("exit", 1, f"the program exited: {code}")
    except StopRun as e:
        return Outcome("stopped", 0, f"the program was stopped: {e}")
    except KeyboardInterrupt:
        return Outcome("interrupted", 130, "the program was interrupted (KeyboardInterrupt)")
    except BaseException as e:  # noqa: BLE001  (the program's own failure, reported)
        text = "".join(_user_traceback(e).format())
        sys.stderr.write(text)  # what python would have printed
        return Outcome("error", 1, _summary(e), text)
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
    return Outcome("ok")


def _user_traceback(e: BaseException) -> traceback.TracebackException:
    """The exception's traceback without the frames of runpy and thunder-lint that start it."""
    tb = e.__traceback__
    while tb is not None and (tb.tb_frame.f_code.co_filename.startswith(_ANALYZER_DIR)
                              or os.path.basename(tb.tb_frame.f_code.co_filename) in ("runpy.py", "<frozen runpy>")):
        tb = tb.tb_next
    return traceback.TracebackException(type(e), e, tb or e.__traceback__)


def _summary(e: BaseException) -> str:
    from ..dynamic.user_code import is_user_file

    frames = [f for f in _user_traceback(e).stack if is_user_file(f.filename)] or _user_traceback(e).stack
    where = f" at {frames[-1].filename}:{frames[-1].lineno} (in {frames[-1].name})" if frames else ""
    last = "".join(traceback.format_exception_only(type(e), e)).strip().splitlines()
    return f"the program failed{where}: {last[-1] if last else type(e).__name__}"


def flush_streams() -> None:
    """The program's output out before the report (a closed or broken stream is the program's business)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
