"""The pieces of `run --observe` that need no program run: torch's guard reasons in words and their user lines,
the hooks put back after a run, a backend wrapper that dynamo reads like the backend it holds."""
from __future__ import annotations

import pytest

from analyzer.run.observe.where import break_reason_line, guard_in_words, split_recompile_reason

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("guard, words", [
    ("G['scale'] == 2.0", "global `scale` was 2.0 when compiled, now it differs"),
    ("self.k == 7", "`self.k` was 7 when compiled, now it differs"),
    ("tensor 'x' size mismatch at index 0. expected 4, actual 5", "the size of `x` at dim 0 was 4 when compiled, now 5"),
    ("tensor 'x' dtype mismatch. expected Float, actual Double", "the dtype of `x` was Float when compiled, now Double"),
    ("___check_type_id(args[0], 9452), type=<class 'M'>", "`args[0]` is not of the type it had when compiled"),
    ("GLOBAL_STATE changed: grad_mode", "torch's global state changed since compiled (grad_mode)"),
    ("n <= 2", "the guard `n <= 2` no longer holds"),
])
def test_guards_in_words(guard, words):
    assert guard_in_words(guard) == words


def test_a_recompile_reason_gives_its_guard_and_the_guards_user_line():
    # as torch 2.13 writes CompilationMetrics.recompile_reason (guards.py, get_guard_fail_reason_helper)
    reason = ("0/1: G['scale'] == 2.0                                             # y = x * scale  # mp/obs/p.py:4 in f\n"
              "User stack trace:\n  File \"/tmp/obs/p.py\", line 4, in f\n    y = x * scale")
    assert split_recompile_reason(reason) == ("G['scale'] == 2.0", ("/tmp/obs/p.py", 4))
    hint = "0/7: s.k == 7  # return s.k  # p.py:9 in forward (HINT: torch.compile considers integer attributes ...)"
    assert split_recompile_reason(hint)[0] == "s.k == 7"


def test_break_reasons_in_one_line():
    assert break_reason_line("generic_jump TensorVariable()").startswith("data-dependent branch")
    assert break_reason_line("Failed to trace builtin operator\n  Explanation: ...") == "Failed to trace builtin operator"


def test_the_hooks_are_put_back_and_the_wrapper_reads_as_its_backend():
    import torch._dynamo
    from torch._dynamo.callback import callback_handler

    from analyzer.run.observe import Observer, observing
    from analyzer.run.observe.hooks import ObservedBackend

    original = torch._dynamo.optimize
    starts = len(callback_handler.start_callbacks)
    with observing(Observer()) as obs:
        assert torch._dynamo.optimize is not original
        wrapped = ObservedBackend(torch._TorchCompileInductorWrapper("default", None, None), obs)
        assert wrapped.compiler_name == "inductor" and callable(wrapped.get_compiler_config)
        assert wrapped == ObservedBackend(torch._TorchCompileInductorWrapper("default", None, None), obs)
    assert torch._dynamo.optimize is original
    assert len(callback_handler.start_callbacks) == starts
