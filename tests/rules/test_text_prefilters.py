"""The text pre-filters were rewritten so that the regex engine can skip characters in C (each branch starts with a
literal or a set, never with `\\b` or a look-behind); they must answer exactly as the plain spellings do."""

import re
from pathlib import Path

import pytest

from analyzer.static.prefilter import JIT_TEXT
from rules.tl101_reshape_inplace import INPLACE_TEXT

REPO = Path(__file__).resolve().parents[2]
PLAIN_INPLACE = re.compile(r"[a-z0-9]_\s*\(|[-+*/%@&|^]=|<<=|>>=|\]\s*=[^=]|\bout\s*=|\binplace\s*=\s*True")
PLAIN_JIT = re.compile(r"\b(?:jit|compile)\b")
PLAIN_STORE = re.compile(r"(?<!\bself)\.\s*(\w+)\s*(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)")

TRICKY = ["x.add_(1)", "x.add_ (1)", "_(", "a_(", "A_(", "x += 1", "x <<= 2", "a[0] = 1", "a[0] == 1", "a[0]\n= 1",
          "out=y", "layout = 1", "_out = 1", "f(out =y)", "inplace=True", "not_inplace=True", "inplace = True",
          "jit", "torch.jit.script", "ajit", "jit_", "compile", "recompile(", "torch.compile(m)", "écompile",
          "self.x = 1", "myself.x = 1", "other.x += 1", "self .x = 1", "a.b == c", "x.y //= 2", "obj.\n  attr = 3",
          "", "=", "]", "o", "i", "my_jit(f)", "amy_jit", "_private(x)", "a_private", "é", "aé", "9lives", "x9lives",
          "trace_fn\ntrace_fn"]


def _texts():
    sources = sorted(REPO.glob("rules/*.py"))[:30] + sorted(REPO.glob("examples/**/*.py"))
    return TRICKY + [p.read_text() for p in sources] + [line for p in sources[:5] for line in p.read_text().splitlines()]


@pytest.mark.parametrize("text", _texts(), ids=range(len(_texts())))
def test_rewritten_patterns_answer_as_the_plain_ones(text):
    assert bool(INPLACE_TEXT.search(text)) == bool(PLAIN_INPLACE.search(text))
    assert bool(JIT_TEXT.search(text)) == bool(PLAIN_JIT.search(text))
    from rules import tl205_module_state

    store = re.compile(r"\.(?<!\bself\.)\s*+(\w++)\s*+(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)")
    assert [(m.start(), m.group(1)) for m in store.finditer(text)] == \
        [(m.start(), m.group(1)) for m in PLAIN_STORE.finditer(text)]
    assert store.pattern in Path(tl205_module_state.__file__).read_text()  # the pattern TL205 uses
    calls = re.compile(r"\.\s*+(\w++)\s*+\(")
    assert [(m.start(), m.group(1)) for m in calls.finditer(text)] == \
        [(m.start(), m.group(1)) for m in re.finditer(r"\.\s*(\w+)\s*\(", text)]
    assert calls.pattern in Path(tl205_module_state.__file__).read_text()


@pytest.mark.parametrize("text", _texts(), ids=range(len(_texts())))
def test_jit_call_pattern_matches_where_the_plain_one_does(text):
    from analyzer.static.jitted import _call_text_pattern

    class Matcher:
        bare = {"torch.compile", "my_jit", "_private", "é", ""}
        dotted = {"lib.trace_fn", "x.9lives"}

    names = {"jit", "compile", "partial"} | {n.rsplit(".", 1)[-1] for n in Matcher.bare | Matcher.dotted}
    plain = re.compile(r"\b(?:%s)\b" % "|".join(sorted(map(re.escape, names))))
    fast = _call_text_pattern(Matcher)
    assert [m.start() for m in fast.finditer(text)] == [m.start() for m in plain.finditer(text)]
