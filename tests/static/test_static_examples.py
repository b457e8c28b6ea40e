"""The bundled example project (examples/) that the README's main command lints."""

import ast
from pathlib import Path

from analyzer.static import fix_source, lint_source

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))


def test_examples_hold_every_hazard_class():
    found = set()
    for path in EXAMPLES:
        found |= {d.code for d in lint_source(path.read_text(), str(path))}
    assert {"TL101", "TL102", "TL103", "TL201", "TL203", "TL204", "TL301", "TL302"} <= found
    assert "TL001" not in found


def test_examples_have_clean_code_too():
    # the NumPy helpers, the fresh-temporary helper and the eager evaluation loop stay quiet
    quiet = {"normalize_boxes": "data_utils.py", "make_position_ids": "data_utils.py", "evaluate": "train_step.py"}
    for func, file in quiet.items():
        path = next(p for p in EXAMPLES if p.name == file)
        text = path.read_text()
        node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == func)
        lines = range(node.lineno, node.end_lineno + 1)
        assert not [d for d in lint_source(text) if d.line in lines], func


def test_unsafe_fixes_apply_cleanly_and_twice_is_a_no_op():
    for path in EXAMPLES:
        text = path.read_text()
        once = fix_source(text, str(path), unsafe=True)
        ast.parse(once.text)
        assert "TL101" not in {d.code for d in once.remaining}
        assert fix_source(once.text, str(path), unsafe=True).text == once.text
