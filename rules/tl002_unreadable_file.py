"""TL002 unreadable-file: emitted by the CLI when a file cannot be read as UTF-8 text."""

from .base import RuleInfo

INFO = RuleInfo(
    code="TL002",
    name="unreadable-file",
    severity="error",
    summary="The file could not be read as UTF-8 source text (binary, wrong encoding, or unreadable).",
    docs="""\
## What it does
Reports a file that was selected for linting but could not be read: it is not valid UTF-8, it looks
binary, or the operating system refused to read it (permissions, a broken link).

## Why is this bad?
A file that cannot be read cannot be checked, so every other rule is silent on it. The report says so
instead of skipping it quietly.

## Example
A `model.py` saved in Latin-1 with a `é` in a comment, or a compiled `.so` renamed to `.py`.

## Use instead
Save source files as UTF-8 (PEP 3120), and exclude binary files from the paths you lint.

## Fix safety
There is no automatic fix.

## References
- [PEP 3120: Using UTF-8 as the default source encoding](https://peps.python.org/pep-3120/)
""",
)
