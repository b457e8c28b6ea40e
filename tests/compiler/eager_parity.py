"""A small harness for the eager-parity tests (test_guards_on_read_state.py, test_effects_every_call.py,
test_values_as_eager.py, test_crashes_and_hangs.py, test_fewer_refusals.py, test_dynamo_programs.py): one jitted
function called several times, each call against eager on identical fresh arguments: the same result (values,
dtypes, shapes, structure), the same exception type, and arguments left as eager left them (values, shapes,
strides)."""
from __future__ import annotations

import torch

import compiler
from test_differential import assert_same

CACHES = ("constant values", "symbolic values", "no caching")


def run(fn, args):
    """(result, exception)."""
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001 - eager's exception is part of the behaviour compared
        return None, e


def assert_args_like_eager(args, eager_args, where: str) -> None:
    for i, (a, e) in enumerate(zip(args, eager_args)):
        if isinstance(e, torch.Tensor):
            assert (a.shape, a.stride(), a.dtype) == (e.shape, e.stride(), e.dtype), \
                f"{where}: argument {i} is {tuple(a.shape)}/{a.stride()}/{a.dtype}, eager's {tuple(e.shape)}/" \
                f"{e.stride()}/{e.dtype}"
            assert_same(a.detach(), e.detach(), where=f"{where}: argument {i} after the call")


def check_calls(fn, calls, cache: str = "constant values", jfn=None, **jit_options):
    """`calls`: makers of fresh argument tuples, one per call (each called twice: eager's and the jit's copy).
    Returns the jitted function."""
    jfn = jfn if jfn is not None else compiler.jit(fn, cache=cache, **jit_options)
    for i, make in enumerate(calls):
        where = f"call {i} [{cache}]"
        eager_args, args = make(), make()
        expected, eager_error = run(fn, eager_args)
        actual, error = run(jfn, args)
        if eager_error is not None:
            assert error is not None, f"{where}: eager raised {eager_error!r}, compiled returned {actual!r}"
            assert type(error) is type(eager_error), f"{where}: eager raised {eager_error!r}, compiled {error!r}"
        else:
            if error is not None:
                raise AssertionError(f"{where}: compiled raised {error!r}") from error
            assert_same(actual, expected, where=f"{where}: result")
        assert_args_like_eager(args, eager_args, where)
    return jfn
