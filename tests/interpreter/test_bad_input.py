"""Bad input gets the same error as native Python (or a clear InterpreterError), never a crash or hang."""
import asyncio

import pytest

from compiler.interpreter import InterpreterError, events, interpret, run


def _native_error(fn, *args, **kwargs):
    with pytest.raises(BaseException) as info:
        fn(*args, **kwargs)
    return info.value


@pytest.mark.parametrize("target,args,kwargs", [
    (5, (), {}),
    (None, (1,), {}),
    (lambda a, b: a, (1,), {}),
    (lambda a: a, (1, 2), {}),
    (lambda *, k: k, (), {"j": 1}),
    (len, (1, 2), {}),
])
def test_same_error_as_native(target, args, kwargs):
    native = _native_error(target, *args, **kwargs)
    with pytest.raises(type(native)) as mine:
        interpret(target, *args, **kwargs)
    assert str(mine.value) == str(native)


def test_native_callables_at_top_level_are_opaque_calls():
    traced = run(sorted, ([3, 1, 2],))
    assert traced.value == [1, 2, 3]
    traced = run(divmod, (7, 2))
    assert traced.value == (3, 1)


def test_coroutine_functions_are_called_natively_and_reported():
    async def co(x):
        return x * 2

    def f():
        return asyncio.run(co(21))

    traced = run(f)
    assert traced.value == 42
    assert any(e.kind == events.OPAQUE_CALL for e in traced.events)


def test_interpreter_error_carries_location_and_construct():
    err = InterpreterError("unsupported bytecode X", filename="m.py", lineno=3, construct="X")
    assert str(err) == "m.py:3: unsupported bytecode X"
    assert (err.filename, err.lineno, err.construct) == ("m.py", 3, "X")
    assert isinstance(err, RuntimeError)


def test_exception_from_interpreted_code_keeps_type_message_and_attributes():
    class Custom(Exception):
        def __init__(self, code):
            super().__init__(f"failed with {code}")
            self.code = code

    def f():
        raise Custom(17)

    with pytest.raises(Custom) as info:
        interpret(f)
    assert str(info.value) == "failed with 17" and info.value.code == 17


def test_keyboard_interrupt_like_base_exceptions_propagate():
    class Stop(BaseException):
        pass

    def f():
        raise Stop("halt")

    with pytest.raises(Stop, match="halt"):
        interpret(f)


def test_generator_returned_to_caller_is_driven_lazily_by_the_interpreter():
    log = []

    def gen():
        log.append("started")
        yield 1

    g = interpret(gen)
    assert log == []  # nothing runs until the caller iterates, as natively
    assert list(g) == [1] and log == ["started"]


class _Refusal(RuntimeError):
    """An embedder's exception the interpreted program must not catch (as compiler refusals are)."""


def test_an_uncatchable_exception_runs_finally_blocks_and_exits_but_no_except_clause_takes_it():
    import contextlib

    from compiler.interpreter import Interpreter

    log = []

    class Suppressing:
        def __enter__(self):
            log.append("enter")

        def __exit__(self, *exc):
            log.append("exit")
            return True  # would swallow any exception

    def refuse(kind):
        raise kind("refused")

    def prog(kind):
        with Suppressing():
            try:
                with contextlib.suppress(RuntimeError):
                    try:
                        try:
                            refuse(kind)
                        except:  # noqa: E722
                            log.append("bare except")
                            raise
                    except RuntimeError:
                        log.append("except RuntimeError")
                        raise
            finally:
                log.append("finally")
        return "returned"

    interp = Interpreter()
    interp.uncatchable = (InterpreterError, _Refusal)
    with pytest.raises(_Refusal, match="refused"):
        interp.call(None, prog, (_Refusal,), {}, [None], {})
    assert log == ["enter", "finally", "exit"]
    log.clear()  # an ordinary exception: every clause takes it, as natively
    value, _ = interp.call(None, prog, (RuntimeError,), {}, [None], {})
    assert value == "returned" and log == ["enter", "bare except", "except RuntimeError", "finally", "exit"]
