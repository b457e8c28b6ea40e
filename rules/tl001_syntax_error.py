"""TL001 syntax-error: the file could not be parsed, so nothing else in it was checked."""

from .base import RuleInfo

INFO = RuleInfo(
    code="TL001",
    name="syntax-error",
    severity="error",
    summary="The file is not valid Python (or too deeply nested to parse); no other rule could run on it.",
    docs="""\
## What it does
Reports a file that Python's parser rejects: a syntax error, a null byte in the source, or nesting so
deep that the parser (or the analysis after it) runs out of recursion depth or memory.

## Why is this bad?
A file that does not parse cannot be checked: every other rule is silent on it, so a clean report would
be misleading. The finding points at the position the parser gave up at.

## Example
```python
def forward(self, x:
    return x
```

## Use instead
```python
def forward(self, x):
    return x
```

## Fix safety
There is no automatic fix.

## References
- [Python language reference: lexical analysis](https://docs.python.org/3/reference/lexical_analysis.html)
""",
    valid=["x = 1\n"],
    invalid=["def f(:\n    pass\n", "x = " + "(" * 1000 + ")" * 1000 + "\n"],
)
