"""The example programs of the bug reports in ../shared/seeds/, each found with the right code (or, where the
report argues it is no sharp edge, not found)."""

from analyzer.static import lint_source


def codes(src, **kw):
    return [(d.code, d.line) for d in lint_source(src, "seed.py", **kw)]


# 132: "I think we can all agree that this is a sharp edge if we jit foo"
def test_132_global_read_is_tl201():
    src = "import thunder\nx = 5\ndef foo():\n      return x\njfoo = thunder.jit(foo)\n"
    assert codes(src) == [("TL201", 4)]


# 132: a closure over a variable the jitted function itself captured is not a sharp edge
def test_132_closure_over_jitted_functions_own_argument_is_quiet():
    src = "import thunder\ndef foo(x):\n    def bar():\n        return x\n    return bar()\njfoo = thunder.jit(foo)\n"
    assert codes(src) == []


# 132: nonlocal + del of a variable that belongs to the jitted function: state it owns, not a hidden input
def test_132_nonlocal_del_inside_jitted_function_is_quiet_but_jitting_bar_is_tl203():
    body = (
        "import thunder\ndef foo():\n  a = 5\n\n  def bar():\n    nonlocal a\n    del a\n\n  bar()\n\n  return a\n"
    )
    assert codes(body + "jfoo = thunder.jit(foo)\n") == []
    jit_bar = body.replace("  bar()\n", "  thunder.jit(bar)()\n")
    assert codes(jit_bar) == [("TL203", 7)]


SEED_132_FORMER = '''import thunder
def outer():
  lst = None
  def inner():
    nonlocal lst
    if lst is None: # CONTROL FLOW CHANGES BASED ON NONLOCAL INPUT
      lst = []
    lst.append("#")
    return lst
  tj = thunder.jit(inner) # Loads the function from co_consts
  tj() # Returns ['#']
  return tj() # Returns ['#', '#']

thunder.jit(outer)() # Returns ['#', '#']
'''

SEED_132_LATTER = '''import thunder
global_lst = []
def unrelated():
  lst = None
  def inner():
    nonlocal lst
    if lst is None: # CONTROL FLOW CHANGES BASED ON NONLOCAL INPUT
      lst = global_lst
    lst.append("#")
    return lst
  return inner

def foo():
  inner_fn = unrelated() # Encounters the function with nonlocals as result of a LOAD_GLOBAL
  lst1 = inner_fn()
  print(lst1) # ['#']
  lst2 = inner_fn()
  print(lst2) # ['#', '#']
  print(lst1 is global_lst) # True
  print(lst2 is global_lst) # True

thunder.jit(foo)()
'''


def test_132_former_case_nonlocal_write_of_captured_variable_is_tl203():
    # inner is jitted and writes `lst`, which belongs to outer; outer itself (also jitted) is clean
    assert codes(SEED_132_FORMER) == [("TL203", 7)]


def test_132_latter_case_prints_and_mutable_global():
    found = codes(SEED_132_LATTER)
    assert ("TL201", 19) in found  # global_lst is a mutable list read by the jitted foo
    assert [line for code, line in found if code == "TL204"] == [16, 18, 19, 20]
    assert {c for c, _ in found} == {"TL201", "TL204"}


SEED_262 = '''import thunder
import torch

def foo(flag):
    if flag > 5:
        return torch.ones(1)
    return torch.zeros(1)

jfoo = thunder.jit(foo, cache=thunder.CACHE_OPTIONS.SYMBOLIC_VALUES)

# Currently, output is incorrect.
print(jfoo(6))  # tensor([1.])
print(jfoo(0))  # tensor([1.])
'''


def test_262_branch_on_symbolic_scalar_is_tl301():
    assert codes(SEED_262) == [("TL301", 5)]


def test_262_same_program_with_constant_values_is_quiet():
    assert codes(SEED_262.replace(", cache=thunder.CACHE_OPTIONS.SYMBOLIC_VALUES", "")) == []


SEED_1193 = '''import torch
import thunder
from functools import partial

@partial(thunder.jit, disable_inplace_copy_check=True)
def f(q, k, v, mask, idx, src):
    q.index_copy_(2, idx, src)
    k.index_copy_(2, idx, src)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, mask)
'''


def test_1193_inplace_write_back_then_read_is_tl103():
    assert codes(SEED_1193) == [("TL103", 7), ("TL103", 8)]


SEED_957 = '''import torch
import thunder

@thunder.jit
def f(a):
    b = a.reshape(-1)
    b.add_(1)
    return a
'''


def test_957_reshape_then_inplace_is_tl101_with_both_fixes():
    ds = [d for d in lint_source(SEED_957) if d.code == "TL101"]
    assert [(d.line, d.column) for d in ds] == [(7, 5)]
    titles = [f.title for f in ds[0].fixes]
    assert titles[0].startswith("Make the aliasing explicit")  # `a` is read after the write
    assert titles[1].startswith("Make the copy explicit")
