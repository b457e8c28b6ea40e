"""What the project summary records of a function's calls (analyzer/project/calls.py), spelled exactly: the index
resolves these strings across modules, and the summaries are cached and compared, so a faster walk must spell
every one as before (each case below is one of the shapes its inline handling takes apart)."""

from __future__ import annotations

import ast

from analyzer.project.calls import function_facts

FORWARD = '''
class Net:
    def forward(self, x, model: GPT, v: int = 0):
        y = self.a.b.c(x)
        y = self.attn.forward(y) + self.proj(y)
        z = super().forward(y)
        self.layers[0].norm()
        torch.compiler.disable(self.log)(x)
        checkpoint(self._fwd, x, use_reentrant=self.flag)
        model(x)
        model.generate()
        w: int = 0
        w()
        block = Block(4).to("cpu")
        block.attn(x)
        "".join(x)
        make(x)(y)
        if isinstance(self.cache, KVCache):
            pass
        if isinstance(m, (Net, other.Head)):
            m.step()
        return block
'''


def facts(code: str, compiling_checks: bool = False):
    fn = next(n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.FunctionDef))
    return function_facts(fn, compiling_checks)


def test_each_call_shape_is_spelled_as_the_index_reads_it():
    calls, attrs, narrowed, returns = facts(FORWARD)
    assert calls == [
        "f:Block", "f:checkpoint", "f:isinstance", "f:make",
        "f:self.a.b.c",  # three attributes deep on self: a dotted call, `a` read
        "f:super", "f:torch.compiler.disable",
        "p:forward", "s:_fwd",  # a method passed as an argument is called
        "s:attn.forward", "s:cache", "s:proj",
        "t:Block:attn",  # `block = Block(4).to("cpu")`: a Block still
        "t:GPT:forward", "t:GPT:generate",  # the parameter's annotation
        "t:Net:step", "t:int:forward", "t:other.Head:step",
    ]
    # every self.<attr> read, stored or passed (`self.log` too: the disable call runs it eagerly, it is no call)
    assert attrs == ["_fwd", "a", "attn", "cache", "flag", "layers", "log", "proj"]
    assert narrowed == {"cache": ["KVCache"]}
    assert returns == ["Block"]


def test_an_eager_branch_and_a_disabled_nested_function_are_left_out():
    code = '''
def step(self, x):
    if not torch.compiler.is_compiling():
        log_stats(self.stats)
    @torch.compiler.disable
    def helper():
        return debug_dump(x)
    return self.net(x)
'''
    calls, attrs, _, _ = facts(code, compiling_checks=True)
    assert calls == ["f:torch.compiler.is_compiling", "s:net"]
    assert attrs == ["net"]
    # without the checks asked for, the eager branch counts (its file names no check: the caller says so)
    calls, _, _, _ = facts(code, compiling_checks=False)
    assert "f:log_stats" in calls and "f:debug_dump" not in calls


def test_held_classes_reads_the_stores_function_facts_did_not_walk():
    """held_classes skips a method (other than __init__) whose function_facts walk saw no store into self.<attr>;
    one that left a block unwalked (an eager-only branch, a disabled nested function) is read in full."""
    from analyzer.project.submodules import held_classes

    code = '''
class Model:
    def __init__(self):
        self.blocks = [Block(), Block()]

    def setup_caches(self):
        if not torch.compiler.is_compiling():
            self.kv_cache = KVCache()

    def reset(self):
        @torch.compiler.disable
        def clear():
            self.scratch = Buffer()
        clear()

    def forward(self, x):
        return self.blocks[0](x)
'''
    cls = ast.parse(code).body[0]
    for fn in cls.body:
        function_facts(fn, compiling_checks=True)
    assert held_classes(cls) == {"blocks": ["Block"], "kv_cache": ["KVCache"], "scratch": ["Buffer"]}


def test_a_match_with_class_and_mapping_patterns_is_walked():
    """`case Cls(attr=p)` and `case {**rest}` hold strings where nodes are elsewhere: the walk took them for nodes
    and raised, so the file was not linted at all (sglang 0.5.23, bench/precision_round4.md)."""
    code = ("def step(self, msg):\n    match msg:\n        case Req(rid=rid, body=b):\n            self.send(rid)\n"
            "        case {'k': v, **rest}:\n            helper(v)\n")
    assert facts(code)[0] == ["f:helper", "s:send"]
