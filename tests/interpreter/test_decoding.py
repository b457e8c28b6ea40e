"""Exception-table parsing, opcode registration per version, and the stack-effect self-check."""
import dis
import importlib
import sys
import types

import pytest

from compiler.interpreter import Interpreter, InterpreterError, run
from compiler.interpreter.decode import code_info
from compiler.interpreter.exception_table import ExceptionTableError, find_handler, parse_exception_table
from compiler.interpreter.registry import HANDLERS, REGISTERED

_STDLIB = ["json.decoder", "json.encoder", "argparse", "textwrap", "dataclasses", "contextlib", "difflib",
           "fractions", "collections", "functools", "inspect", "enum", "typing", "statistics", "shlex"]


def _code_objects():
    seen = []
    todo = []
    for name in _STDLIB:
        mod = importlib.import_module(name)
        with open(mod.__file__, encoding="utf-8") as f:
            todo.append(compile(f.read(), mod.__file__, "exec"))
    while todo:
        code = todo.pop()
        seen.append(code)
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return seen


CODES = _code_objects()


def test_exception_table_matches_dis_on_stdlib_code():
    compared = 0
    for code in CODES:
        mine = [(e.start, e.end, e.target, e.depth, e.lasti) for e in parse_exception_table(code.co_exceptiontable)]
        oracle = [(e.start, e.end, e.target, e.depth, e.lasti) for e in dis._parse_exception_table(code)]
        assert mine == oracle, code.co_qualname
        compared += len(mine)
    assert compared > 300  # the sample really exercises the parser


def test_exception_table_rejects_truncated_and_unmarked_bytes():
    def f():
        try:
            return 1
        except ValueError:
            return 2
    table = f.__code__.co_exceptiontable
    assert table
    with pytest.raises(ExceptionTableError, match="ends inside"):
        parse_exception_table(table[:2])
    with pytest.raises(ExceptionTableError, match="start marker"):
        parse_exception_table(bytes([table[0] & 0x7F]) + table[1:])


def test_find_handler_is_the_innermost_range():
    def f(x):
        try:
            try:
                x = 1 / x
            except ZeroDivisionError:
                x = 0
        except Exception:
            x = -1
        return x
    entries = parse_exception_table(f.__code__.co_exceptiontable)
    division = next(i for i in dis.get_instructions(f) if i.opname == "BINARY_OP")
    inner = find_handler(entries, division.offset)
    assert inner is not None
    handler = [i for i in dis.get_instructions(f) if i.offset == inner.target][0]
    assert handler.opname == "PUSH_EXC_INFO"
    assert find_handler(entries, 10_000) is None


def test_every_registered_opname_exists_in_its_versions():
    # Registration itself asserts this for the running version; here: nothing is registered for no version.
    assert all(versions for _, versions in REGISTERED)
    for name in HANDLERS:
        assert name in dis.opmap


# Opcodes the interpreter refuses on purpose (InterpreterError): async code, module/class-body
# namespace ops (class bodies run natively through __build_class__).
UNSUPPORTED = {"GET_AWAITABLE", "GET_AITER", "GET_ANEXT", "END_ASYNC_FOR", "BEFORE_ASYNC_WITH", "ASYNC_GEN_WRAP",
               "LOAD_NAME", "STORE_NAME", "DELETE_NAME",
               "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF", "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_LOCALS",
               "SETUP_ANNOTATIONS", "IMPORT_STAR", "RETURN_GENERATOR_ASYNC", "GET_AWAITABLE"}


def test_opcodes_used_by_stdlib_functions_are_handled():
    used = {i.opname for code in CODES for i in dis.get_instructions(code)}
    missing = sorted(used - set(HANDLERS) - UNSUPPORTED)
    assert not missing, f"opcodes without a handler on {sys.version_info[:2]}: {missing}"


def test_fast_local_layout_matches_dis_names():
    for code in CODES[:400]:
        info = code_info(code)
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_DEREF", "STORE_DEREF", "MAKE_CELL",
                              "DELETE_DEREF", "LOAD_CLOSURE", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR"):
                assert info.names[ins.arg] == ins.argval, (code.co_qualname, ins)


def test_stack_effect_check_catches_a_wrong_handler():
    def f(a, b):
        return (a, b)

    interp = Interpreter(check_stack=True)
    good = interp.opcode_handlers[dis.opmap["BUILD_TUPLE"]]

    def leaky_build_tuple(interp_, frame, instr):
        good(interp_, frame, instr)
        frame.push(None, None)  # one value too many

    interp.opcode_handlers[dis.opmap["BUILD_TUPLE"]] = leaky_build_tuple
    with pytest.raises(InterpreterError, match=r"stack effect of BUILD_TUPLE .* was 0, dis.stack_effect says -1"):
        interp.call(None, f, (1, 2), {}, [None, None], {})
    # without the check the same wrong handler silently returns a wrong value: why tests turn it on
    unchecked = Interpreter(check_stack=False)
    unchecked.opcode_handlers[dis.opmap["BUILD_TUPLE"]] = leaky_build_tuple
    assert unchecked.call(None, f, (1, 2), {}, [None, None], {})[0] != (1, 2)


def test_unsupported_construct_names_opcode_and_user_line():
    # (a module body run as a function: its namespace ops are refused; every construct a function's own code can
    # hold has a handler, except* too, and async code runs natively)
    code = compile("import os\n\n\nr = 'handled'\n", "user_model.py", "exec")
    with pytest.raises(InterpreterError) as info:
        run(types.FunctionType(code, {"__builtins__": __builtins__}))
    message = str(info.value)
    assert message.startswith("user_model.py:1: ")  # `import os` stores a name: the first refused op
    assert "STORE_NAME" in message
    assert info.value.lineno == 1


def test_interpreter_error_is_not_swallowed_by_user_except():
    src = ("def main(body):\n"
           "    try:\n"
           "        body()\n"
           "    except Exception:\n"
           "        return 'user code swallowed the interpreter error'\n")
    ns = {}
    exec(compile(src, "m.py", "exec"), ns)
    body = types.FunctionType(compile("x = 1\n", "m_body.py", "exec"), {"__builtins__": __builtins__})
    with pytest.raises(InterpreterError):
        run(ns["main"], (body,))


def test_except_star_runs_as_native():
    src = ("def main(x):\n"
           "    try:\n"
           "        raise ExceptionGroup('g', [ValueError(1), TypeError(2)])\n"
           "    except* ValueError:\n"
           "        x = x + 1\n"
           "    except* TypeError:\n"
           "        x = x * 10\n"
           "    return x\n")
    ns = {}
    exec(compile(src, "m.py", "exec"), ns)
    assert run(ns["main"], (1,)).value == ns["main"](1) == 20


def test_stack_check_is_on_in_tests_by_default(monkeypatch):
    from compiler.interpreter import _check_stack_default
    assert _check_stack_default()  # tests/interpreter/conftest.py sets THUNDER_LINT_CHECK_STACK=1
    monkeypatch.setenv("THUNDER_LINT_CHECK_STACK", "0")
    assert not _check_stack_default()


def test_interpreter_imports_and_runs_without_torch():
    import os
    import subprocess
    import textwrap
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = textwrap.dedent(f"""
        import sys, types
        sys.modules["torch"] = None  # any `import torch` now fails
        package = types.ModuleType("compiler")
        package.__path__ = [{os.path.join(root, "compiler")!r}]
        sys.modules["compiler"] = package
        from compiler.interpreter import interpret
        def f(n):
            return [i * i for i in range(n)]
        assert interpret(f, 4) == [0, 1, 4, 9]
        assert not any(m == "torch" or m.startswith("torch.") for m, v in sys.modules.items() if v is not None)
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
