"""torch's Python meta kernels without importing torch._dynamo.

Many meta kernels torch runs for meta tensors are its Python references (torch._refs, registered from
torch._decomp's tables), and the elementwise ones are wrapped by `torch._disable_dynamo`. The first call
of such a wrapper imports torch._dynamo (with sympy and parts of inductor: about 1 s, most of a first
jit call in a fresh process) only to build a wrapper that switches dynamo's frame callback off while
the kernel runs, and caches that wrapper on the kernel (attribute `__dynamo_disable`).

Only torch._dynamo installs such a callback, so until it is imported there is none to switch off. We
pre-fill that cache with a wrapper that does the same switch with the C function dynamo itself uses
(torch._C._dynamo.eval_frame.set_eval_frame, no import needed), and take every pre-filled entry back the
moment anything starts importing torch._dynamo; from then on torch builds its own wrappers, exactly as
shipped. The kernels, and so every metadata result, are the same functions either way.
"""
from __future__ import annotations

import sys
import types

import torch

_CACHE_ATTR = "__dynamo_disable"  # torch._compile._disable_dynamo caches its dynamo wrapper here
_installed: list = []  # kernels whose cache holds one of our wrappers
installed = False  # install() ran (whether or not it had anything to do)


def _wrapper(fn):
    from torch._C._dynamo.eval_frame import set_eval_frame

    def call(*args, **kwargs):
        prior = set_eval_frame(None)  # what torch._dynamo.disable's wrapper does around the call
        try:
            return fn(*args, **kwargs)
        finally:
            set_eval_frame(prior)

    call._thunder_lint_lazy_dynamo = True
    return call


def _disable_dynamo_kernels():
    """The functions torch wrapped with `torch._disable_dynamo` among the meta kernels (the decomposition
    tables torch registered them from) and torch._refs' namespaces, found through `__wrapped__` chains."""
    import torch._compile
    import torch._decomp

    inner_code = torch._compile._disable_dynamo(lambda: None).__code__
    fn_cell = inner_code.co_freevars.index("fn")
    rec_cell = inner_code.co_freevars.index("recursive")
    roots = [v for table in torch._decomp.global_decomposition_table.values() for v in table.values()]
    for name in ("torch._refs", "torch._refs.nn.functional", "torch._refs.special", "torch._refs.linalg",
                 "torch._refs.fft"):
        module = sys.modules.get(name)
        if module is not None:
            roots.extend(v for v in vars(module).values() if callable(v))
    # Wrappers reach what they wrap through `__wrapped__` or, where a decorator replaced that, a closure cell.
    function = types.FunctionType
    seen, found, todo = set(), [], [f for f in roots if type(f) is function]
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        cells = f.__closure__
        if f.__code__ is inner_code and cells[rec_cell].cell_contents is True:
            found.append(cells[fn_cell].cell_contents)
        for cell in cells or ():
            try:
                v = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if type(v) is function:
                todo.append(v)
        wrapped = getattr(f, "__wrapped__", None)
        if type(wrapped) is function:
            todo.append(wrapped)
    return found


class _RestoreOnDynamoImport:
    """A sys.meta_path entry that only watches: when torch._dynamo starts to be imported it removes our
    wrappers (and itself), then lets the ordinary finders import it."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch._dynamo":
            restore()
        return None


_hook = _RestoreOnDynamoImport()


def install() -> None:
    """Once per process, before the first meta kernel runs; nothing to do once torch._dynamo is loaded."""
    global installed
    if installed:
        return
    installed = True
    if "torch._dynamo" in sys.modules or not hasattr(torch._C, "_dynamo"):
        return
    try:
        kernels = _disable_dynamo_kernels()
    except (AttributeError, ImportError, ValueError, TypeError):  # another torch's internals: keep torch's own path
        return
    for fn in kernels:
        if getattr(fn, _CACHE_ATTR, None) is None:
            setattr(fn, _CACHE_ATTR, _wrapper(fn))
            _installed.append(fn)
    sys.meta_path.insert(0, _hook)


def restore() -> None:
    """Give torch its own behaviour back: each kernel builds its dynamo wrapper on its next call."""
    while _installed:
        fn = _installed.pop()
        if getattr(getattr(fn, _CACHE_ATTR, None), "_thunder_lint_lazy_dynamo", False):
            delattr(fn, _CACHE_ATTR)
    if _hook in sys.meta_path:  # a new list: the import system may be iterating the old one (see find_spec)
        sys.meta_path = [f for f in sys.meta_path if f is not _hook]


def active() -> bool:
    return bool(_installed)
