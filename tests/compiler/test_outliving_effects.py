"""Python effects on objects that outlive the call, reached through attributes the prologue does not guard
(a hook object's own list, a global object's attribute, a dict held by a module's helper object): a cached
trace would skip them, so such a trace is single-use and every call runs them as eager does
(compiler/frontend/interpreted.py). Containers and objects made inside the call stay cacheable.

Each test runs the same program eagerly and under compiler.jit on fresh copies and compares, after every
call, the outputs and the Python state."""
import collections
import functools
import warnings

import pytest
import torch

import analyzer
import compiler

CALLS = 4


def _linear(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(3, 2)


def _inputs():
    torch.manual_seed(1)
    return [torch.randn(2 + (i % 2), 3) for i in range(CALLS)]  # (two shapes: a miss each, then hits)


def _compare(make, jit=compiler.jit):
    """make() -> (callable, state()); the eager and the jitted copy agree after every call."""
    eager_fn, eager_state = make()
    traced_fn, traced_state = make()
    jitted = jit(traced_fn)
    for i, x in enumerate(_inputs()):
        expected, got = eager_fn(x), jitted(x)
        assert torch.equal(expected, got), i
        assert traced_state() == eager_state(), (i, traced_state(), eager_state())
    return jitted


class Recorder:
    def __init__(self):
        self.log = []
        self.calls = 0

    def forward_hook(self, module, args, out):
        self.log.append((tuple(out.shape), "post"))

    def value_hook(self, module, args, out):
        self.log.append((tuple(out.shape), round(out.sum().item(), 4), "value"))  # (after a data read)

    def pre_hook(self, module, args):
        self.log.append((tuple(args[0].shape), "pre"))
        self.calls += 1

    def backward_hook(self, module, grad_input, grad_output):
        self.log.append((tuple(grad_output[0].shape), round(grad_output[0].sum().item(), 4), "backward"))


@pytest.mark.parametrize("hook", ["forward_hook", "value_hook"])
def test_a_bound_method_forward_hook_appends_on_every_call(hook):
    # (before, forward_hook: the append ran while tracing only; cached calls skipped it: 2 entries after 4
    # calls)
    def make():
        rec, lin = Recorder(), _linear()
        lin.register_forward_hook(getattr(rec, hook))
        return lin, lambda: rec.log
    jitted = _compare(make)
    assert compiler.cache_hits(jitted) == 0  # the trace is single-use: the hook's effect outlives it


def test_the_native_front_end_says_that_it_cannot_repeat_such_effects():
    # it runs the function natively: it cannot see a hook object's append, so a cached call skips it
    from compiler.runtime.cache import NativeFrontendWarning
    from compiler.frontend.native import native_frontend

    rec, lin = Recorder(), _linear()
    lin.register_forward_hook(rec.forward_hook)
    with pytest.warns(NativeFrontendWarning, match="run only while tracing") as caught:
        jitted = compiler.jit(lin, frontend=native_frontend)
    assert caught[0].filename == __file__  # pointed at the user's jit call
    for _ in range(3):
        jitted(torch.ones(2, 3))
    assert len(rec.log) == 1  # what the warning says (eager: 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiler.jit(lin)  # the default front end: no warning


def test_a_bound_method_pre_hook_appends_and_counts_on_every_call():
    def make():
        rec, lin = Recorder(), _linear()
        lin.register_forward_pre_hook(rec.pre_hook)
        return lin, lambda: (rec.log, rec.calls)
    _compare(make)


def test_a_backward_hook_object_sees_every_backward_and_the_trace_is_reused():
    # backward hooks run at backward time (torch calls them, after the trace ran): cache hits stay
    rec_e, lin_e = Recorder(), _linear()
    rec_j, lin_j = Recorder(), _linear()
    lin_e.register_full_backward_hook(rec_e.backward_hook)
    lin_j.register_full_backward_hook(rec_j.backward_hook)
    jitted = compiler.jit(lin_j)
    for i, x in enumerate(_inputs()):
        xe, xj = x.clone().requires_grad_(), x.clone().requires_grad_()
        oe, oj = lin_e(xe), jitted(xj)
        assert torch.equal(oe, oj), i
        oe.sum().backward()
        oj.sum().backward()
        assert torch.equal(xe.grad, xj.grad) and torch.equal(lin_e.weight.grad, lin_j.weight.grad), i
        assert rec_j.log == rec_e.log, i
    assert compiler.cache_hits(jitted) == CALLS - 2


class Stats:
    def __init__(self, preload=0):
        self.seen = list(range(preload))  # (> 64 items: guarded by identity only, not item by item)
        self.shapes = set()
        self.recent = collections.deque(maxlen=3)


STATS = {}  # (one global object per copy: the function reads it through a global)


def _global_user(key):
    def f(x):
        stats = STATS[key]
        stats.seen.append(x.shape[0])
        stats.shapes.add(tuple(x.shape))
        stats.recent.append(x.shape[0] * 10)
        return x * 2
    return f


@pytest.mark.parametrize("preload", [0, 100])
def test_a_plain_function_appending_to_a_global_objects_attributes(preload):
    # (before, preload=100: the list is too long to be guarded item by item, so cached calls skipped the
    # appends)
    keys = iter(("eager", "jitted"))

    def make():
        key = next(keys)
        STATS[key] = Stats(preload)
        return _global_user(key), lambda: (STATS[key].seen, STATS[key].shapes, list(STATS[key].recent))
    _compare(make)


class Config:
    def __init__(self):
        self.calls = 0
        self.last_shape = None
        self.tag = ""


def test_attributes_set_on_an_object_the_function_receives():
    # arbitrary objects are not guardable arguments; one bound as a default argument or by functools.partial
    # reaches the function all the same (before: cached calls left calls/last_shape/tag as the first call set)
    def f(x, cfg):
        cfg.calls = cfg.calls + 1
        cfg.last_shape = tuple(x.shape)
        setattr(cfg, "tag", cfg.tag + "x")
        return x + cfg.calls

    def with_default():
        cfg = Config()

        def g(x, c=cfg):
            return f(x, c)
        return g, lambda: vars(cfg)

    def with_partial():
        cfg = Config()
        return functools.partial(f, cfg=cfg), lambda: vars(cfg)
    _compare(with_default)
    _compare(with_partial)


class Helper:
    def __init__(self):
        self.stats = {f"k{i}": i for i in range(70)}  # (> 64 items: guarded by identity only)
        self.stats["n"] = 0

    def hook(self, module, args, out):
        self.stats["n"] += 1
        self.stats["last"] = tuple(out.shape)


class Holder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = _linear()
        self.helper = Helper()  # (not a module: its dict is reached only through the hook's self)
        self.lin.register_forward_hook(self.helper.hook)

    def forward(self, x):
        return self.lin(x).relu()


def test_a_dict_held_by_a_modules_helper_object_is_updated_by_its_hook_on_every_call():
    def make():
        m = Holder()
        return m, lambda: m.helper.stats
    _compare(make)


@pytest.mark.parametrize("sharp_edges", ["allow", "warn"])
def test_the_same_effects_under_analyzer_jit(sharp_edges):
    def make():
        rec, lin = Recorder(), _linear()
        lin.register_forward_hook(rec.forward_hook)
        lin.register_forward_pre_hook(rec.pre_hook)
        return lin, lambda: (rec.log, rec.calls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _compare(make, jit=lambda fn: analyzer.jit(fn, sharp_edges=sharp_edges))


class LocalState:
    def __init__(self, x):
        self.parts = [x]


def _local_containers(x):
    parts, seen, table, queue = [], set(), {}, collections.deque()
    parts.append(x)
    parts += [x * 2]
    parts.extend([x + 1])
    seen.add(x.shape[0])
    table["a"] = x.sum()
    table.update(b=x.mean())
    del table["b"]
    queue.append(x)
    obj = LocalState(x)  # an object made in the call, written in the call
    obj.parts.append(x * 3)
    obj.count = len(obj.parts)
    setattr(obj, "extra", {"k": [x]})
    obj.extra["k"].append(x)
    rows = [[x] for _ in range(2)]
    rows[0].append(x)
    merged = dict(table)
    merged["c"] = x
    copy = list(parts)
    copy.reverse()
    return sum(parts) + table["a"] + obj.count + len(seen) + len(obj.extra["k"]) + queue.pop() + \
        len(rows[0]) + merged["c"] + copy[0]


class LocalHook:
    def hook(self, module, args, out):
        scratch = {"out": out}  # made and changed inside the call: not an effect
        scratch["twice"] = out * 2
        return scratch["twice"] - out


def test_containers_and_objects_made_inside_the_call_keep_hitting_the_cache():
    jitted = _compare(lambda: (_local_containers, lambda: None))
    assert compiler.cache_hits(jitted) == CALLS - 2

    def make():
        lin = _linear()
        lin.register_forward_hook(LocalHook().hook)
        return lin, lambda: None
    jitted = _compare(make)
    assert compiler.cache_hits(jitted) == CALLS - 2


def test_a_list_or_dict_argument_changed_in_place_is_still_refused_clearly():
    def f(x, log):
        log.append(x.shape[0])
        return x * 2
    with pytest.raises(compiler.CompilerError, match="changes its argument"):
        compiler.jit(f)(torch.ones(2), [])
