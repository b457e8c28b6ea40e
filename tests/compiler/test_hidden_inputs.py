"""Globals, closure cells and module attributes reachable from the jitted code are guarded (seed 132)."""
import torch

import compiler

SCALE = 2.0
OFFSET = torch.ones(3)


def _helper(x):
    return x * SCALE  # reached through a global function: guarded too


def uses_globals(x):
    return _helper(x) + OFFSET


def test_rebinding_a_global_number_or_tensor_retraces():
    global SCALE, OFFSET
    jf = compiler.jit(uses_globals)
    x = torch.randn(3)
    old = (SCALE, OFFSET)
    try:
        torch.testing.assert_close(jf(x), uses_globals(x))
        SCALE = 5.0
        torch.testing.assert_close(jf(x), uses_globals(x))
        OFFSET = torch.zeros(3)
        torch.testing.assert_close(jf(x), uses_globals(x))
        assert compiler.cache_misses(jf) == 3
        jf(x)
        assert compiler.cache_hits(jf) == 1
    finally:
        SCALE, OFFSET = old


def test_rebinding_a_global_function_retraces():
    global _helper
    jf = compiler.jit(uses_globals)
    x = torch.randn(3)
    original = _helper
    try:
        jf(x)
        _helper = lambda x: x - 100  # noqa: E731
        torch.testing.assert_close(jf(x), uses_globals(x))
    finally:
        _helper = original


def test_closure_cells_are_guarded():
    k = 1

    def fn(x):
        return x + k

    jf = compiler.jit(fn)
    x = torch.zeros(2)
    torch.testing.assert_close(jf(x), torch.full((2,), 1.0))
    k = 4  # noqa: F841 - rebinding the cell fn reads
    torch.testing.assert_close(jf(x), torch.full((2,), 4.0))


def test_module_attributes_are_guarded():
    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.scale = 2.0

        def forward(self, x):
            return self.lin(x) * self.scale

    m = Scaled()
    jm = compiler.jit(m)
    x = torch.randn(3, 2)
    jm(x)
    m.scale = 3.0
    torch.testing.assert_close(jm(x), m(x))
    (prologue,) = compiler.last_prologue_traces(jm)
    assert ".scale != 3.0" in str(prologue)


CONFIG = {"scale": 2.0, "shifts": [1.0, 2.0]}


class Settings:
    def __init__(self):
        self.bias = 1.0


SETTINGS = Settings()


def uses_config(x):
    return x * CONFIG["scale"] + CONFIG["shifts"][1] + SETTINGS.bias


def test_items_of_global_containers_and_objects_are_guarded():
    jf = compiler.jit(uses_config)
    x = torch.zeros(2)
    try:
        torch.testing.assert_close(jf(x), uses_config(x))
        CONFIG["scale"] = 3.0
        torch.testing.assert_close(jf(x), uses_config(x))
        CONFIG["shifts"][1] = 10.0
        torch.testing.assert_close(jf(x), uses_config(x))
        SETTINGS.bias = -1.0
        torch.testing.assert_close(jf(x), uses_config(x))
        assert compiler.cache_misses(jf) == 4
    finally:
        CONFIG.update(scale=2.0, shifts=[1.0, 2.0])
        SETTINGS.bias = 1.0


def test_swapped_submodule_retraces():
    m = torch.nn.Sequential(torch.nn.Linear(2, 2))
    jm = compiler.jit(m)
    x = torch.randn(1, 2)
    jm(x)
    m[0] = torch.nn.Linear(2, 2)
    torch.testing.assert_close(jm(x), m(x))
    assert compiler.cache_misses(jm) == 2


def test_attributes_of_the_users_imported_modules_are_guarded(tmp_path, monkeypatch):
    (tmp_path / "user_settings_mod.py").write_text("SCALE = 2.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import user_settings_mod as cfg

    def fn(x):
        return x * cfg.SCALE

    jf = compiler.jit(fn)
    x = torch.ones(2)
    torch.testing.assert_close(jf(x), x * 2)
    cfg.SCALE = 5.0
    torch.testing.assert_close(jf(x), x * 5)
    assert compiler.cache_misses(jf) == 2


def test_jitted_bound_methods_see_their_objects_state():
    class Scaler:
        def __init__(self):
            self.factor = 2.0

        def apply(self, x):
            return x * self.factor

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.scale = 1.0

        def forward(self, x):
            return self.lin(x) * self.scale

    s = Scaler()
    jf = compiler.jit(s.apply)
    x = torch.ones(2)
    jf(x)
    s.factor = 3.0
    torch.testing.assert_close(jf(x), x * 3)

    net = Net()
    jm = compiler.jit(net.forward)
    y = torch.randn(1, 2)
    jm(y)
    net.scale = 4.0
    with torch.no_grad():
        net.lin.weight.zero_()
    torch.testing.assert_close(jm(y), net(y))
    assert len(compiler.last_traces(jm)[-1].args) == 3  # x, weight, bias: parameters are inputs
