"""compiling_checks_in: the per-function shortcut before looking for eager-only blocks (`if not is_compiling():`).
A function it says "no" for must have no such block; one that has a block must get "yes"."""

import ast
from pathlib import Path

from analyzer.static.context import FileContext
from analyzer.static.source import SourceFile
from rules._torch_api import compiling_check_lines, compiling_checks_in, eager_only_spans

REPO = Path(__file__).resolve().parents[2]

SOURCE = '''
import torch

def plain(x):
    return x + 1

def guarded(x):
    if not torch.compiler.is_compiling():
        print("eager")
    return x

def early(x):
    if torch._dynamo.is_compiling():
        return x * 2
    print("eager only")
    return x

@decorated(torch.jit.is_scripting)
def named_in_decorator(x):
    return x

class M:
    def forward(self, x):
        def inner(y):
            if is_torchdynamo_compiling():
                return y
            return y + 1
        return inner(x)

    def other(self, x):
        return x
'''


def _check(text):
    tree = ast.parse(text)
    ctx = FileContext(SourceFile(text, "m.py"), tree)
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    answers = {}
    for f in funcs:
        has_block = bool(eager_only_spans(f))
        says = compiling_checks_in(ctx, f)
        assert says or not has_block, f.name  # "no" only where there is certainly no block
        answers[f.name] = (says, has_block)
    return answers


def test_functions_with_blocks_are_asked_about_and_the_others_skipped():
    answers = _check(SOURCE)
    assert answers["guarded"] == (True, True)
    assert answers["early"] == (True, True)
    assert answers["inner"] == (True, True) and answers["forward"][0]  # (its lines hold inner's check)
    assert answers["plain"] == (False, False) and answers["other"] == (False, False)
    assert answers["named_in_decorator"] == (True, False)  # a line names a check: asked (and none found)


def test_real_sources():
    for path in sorted(REPO.glob("rules/*.py")) + sorted(REPO.glob("tests/static/jit_programs/*.py")):
        _check(path.read_text())


def test_a_text_that_may_spell_a_name_otherwise_has_no_line_list():
    # (callers ask mentions_compiling_checks of the whole text first, as they did before this shortcut)
    assert compiling_check_lines("def f():\n    if ｉs_compiling():\n        pass\n") is None  # fullwidth i
    assert compiling_check_lines("def f():\n    if is_compiling():\n        pass\n") == [2]
