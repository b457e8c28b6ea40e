"""ANSI colour for the human formats (full, concise) on a terminal, after the conventions tools share:
``NO_COLOR`` (any non-empty value) turns it off, ``FORCE_COLOR`` (non-empty, not ``0``) turns it on even into a
pipe (CI logs render it), and otherwise only a terminal gets colour. Files (`--output-file`) never do."""

from __future__ import annotations

import os
import re

BOLD, RED, YELLOW, CYAN, BLUE, DIM, RESET = "\x1b[1m", "\x1b[31m", "\x1b[33m", "\x1b[36m", "\x1b[34m", "\x1b[2m", "\x1b[0m"
# `path:line:col: TL101 ` (a notebook's `nb.ipynb:cell 3:5:1:` too) at the start of a finding's first line
_HEADER = re.compile(r"^(?P<where>[^\s].*?:(?:cell \d+:)?\d+:\d+:) (?P<code>TL\d{3})(?P<rest>.*)$")
_LABEL = re.compile(r"^(?P<indent>\s*)= (?P<kind>note|help):")


def wanted(stream, environ=None) -> bool:
    env = os.environ if environ is None else environ
    force = env.get("FORCE_COLOR", "")
    if force and force != "0":
        return True
    if env.get("NO_COLOR", ""):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False


def colourize(text: str) -> str:
    out = []
    for line in text.split("\n"):
        m = _HEADER.match(line)
        if m:
            line = f"{BOLD}{m['where']}{RESET} {BOLD}{RED}{m['code']}{RESET}{m['rest']}"
        else:
            m = _LABEL.match(line)
            if m:
                colour = CYAN if m["kind"] == "help" else BLUE
                line = f"{m['indent']}{colour}= {m['kind']}:{RESET}{line[m.end():]}"
            elif line.startswith(("Found ", "All checks passed!")):
                line = f"{BOLD}{line}{RESET}"
        out.append(line)
    return "\n".join(out)
