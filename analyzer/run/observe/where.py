"""Where in the user's code an observed event belongs, from what torch hands over.

torch gives three kinds of location: FrameSummary lists (a graph break's ``user_stack``), the ``stack_trace``
text of an FX node (a formatted traceback, as torch.fx writes it), and a recompile reason whose "User stack
trace:" part is the failed guard's own user stack, formatted by torch._dynamo.guards. The innermost frame in a
user file is the user's line: a break inside a helper is reported in the helper, where the fix goes.
"""
from __future__ import annotations

import re

from ...dynamic.user_code import is_user_file

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def torch_file(path: str) -> bool:
    """Whether the file is torch's own (its frames are machinery, never where a finding goes)."""
    import os

    import torch

    return os.path.abspath(path).startswith(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)


def innermost_user_frame(frames) -> tuple[str, int] | None:
    """(file, line) of the innermost user frame of a list of traceback.FrameSummary; in a library's model (no user
    frame: transformers' code, say), the innermost frame outside torch; else None."""
    frames = [fs for fs in frames or () if fs.filename and fs.lineno]
    for fs in reversed(frames):
        if is_user_file(fs.filename):
            return fs.filename, fs.lineno
    for fs in reversed(frames):
        if not torch_file(fs.filename) and not fs.filename.startswith("<"):
            return fs.filename, fs.lineno
    return None


def frames_of_text(text: str | None) -> list[tuple[str, int, str]]:
    """(file, line, function) of each frame of a formatted traceback (an FX node's stack_trace)."""
    return [(m.group(1), int(m.group(2)), m.group(3)) for m in _FRAME.finditer(text or "")]


def user_line_of_text(text: str | None) -> tuple[str, int] | None:
    """As innermost_user_frame, for a formatted stack."""
    frames = frames_of_text(text)
    for path, line, _ in reversed(frames):
        if is_user_file(path):
            return path, line
    for path, line, _ in reversed(frames):
        if not torch_file(path) and not path.startswith("<"):
            return path, line
    return None


# --- recompile reasons -----------------------------------------------------------------------------------
_COMPILE_ID = re.compile(r"^\s*\[?\d+/\d+\]?:\s*")
_HINT = re.compile(r"\s*\(HINT:.*", re.S)


def split_recompile_reason(reason: str) -> tuple[str, tuple[str, int] | None]:
    """(the failed guard, as torch printed it without the compile id and comments; the guard's user line)."""
    head, _, stack = reason.partition("\nUser stack trace:\n")
    first = _COMPILE_ID.sub("", head.splitlines()[0] if head.strip() else "")
    guard = _HINT.sub("", first).split("  #")[0].strip()  # "s.k == 7    # return ... # file:9 in f (HINT...)"
    return guard, user_line_of_text(stack)


_SOURCE = re.compile(r"\b([GL])\['([^']+)'\]")
_WORDS = (
    (re.compile(r"^___check_obj_id\(([^,]+), \d+\).*$"), r"`\1` is not the object it was when compiled"),
    (re.compile(r"^___check_type_id\(([^,]+), \d+\).*$"), r"`\1` is not of the type it had when compiled"),
    (re.compile(r"^tensor '(.+)' size mismatch at index (\d+)\. expected (\d+), actual (\d+)$"),
     r"the size of `\1` at dim \2 was \3 when compiled, now \4"),
    (re.compile(r"^tensor '(.+)' stride mismatch at index (\d+)\. expected (\d+), actual (\d+)$"),
     r"the stride of `\1` at dim \2 was \3 when compiled, now \4"),
    (re.compile(r"^tensor '(.+)' (\w+) mismatch\. expected (.+), actual (.+)$"),
     r"the \2 of `\1` was \3 when compiled, now \4"),
    (re.compile(r"^len\((.+)\) == (\d+)$"), r"`len(\1)` was \2 when compiled, now it differs"),
    (re.compile(r"^(.+?) == (.+)$"), r"`\1` was \2 when compiled, now it differs"),
)


def guard_in_words(guard: str) -> str:
    """The failed guard as a sentence: `G['scale'] == 2.0` -> "global `scale` was 2.0 when compiled, ..."."""
    if guard.startswith("BACKEND_MATCH"):
        return "the function was compiled again with another backend"
    if guard.startswith("GLOBAL_STATE changed:"):
        return f"torch's global state changed since compiled ({guard.split(':', 1)[1].strip()})"
    glob = "G['" in guard and "L['" not in guard
    plain = _SOURCE.sub(lambda m: m.group(2), guard)
    for pattern, words in _WORDS:
        if pattern.match(plain):
            return ("global " if glob and not plain.startswith("tensor") else "") + pattern.sub(words, plain)
    return f"the guard `{plain}` no longer holds"


def break_reason_line(reason: str) -> str:
    """dynamo's reason for a graph break in one line (its first line names the kind: gb_type)."""
    first = (reason or "").strip().splitlines()[0] if (reason or "").strip() else "unknown"
    if first.startswith(("generic_jump", "Data-dependent branching")):
        return "data-dependent branch: Python control flow on a tensor's value"
    if first.startswith("step_unsupported"):
        return "an instruction dynamo cannot trace"
    return first.rstrip(".:")
