"""torch's Python meta kernels without importing sympy.

After lazy_dynamo, what is left of a first jit call in a fresh process is mostly imports: torch's Python
meta kernels (torch._refs, torch._prims_common) do function-local imports of
torch.fx.experimental.symbolic_shapes (for small helpers such as guard_or_false) and of sympy (for an
isinstance check), and symbolic_shapes imports sympy: about 470 modules, 0.6-0.8 s of CPU.

Until one of the two modules is really needed we put its module object in sys.modules unexecuted, as
importlib.util.LazyLoader does, and execute it in place the moment anything needs more than this: the
helpers below, asked for by a function-local import in torch's own code, and `sympy.Basic` asked for by
elementwise_dtypes' isinstance check. Every other attribute runs the module first, in the same module
object, and importing a submodule of sympy runs sympy first (a sys.meta_path entry), so nobody can tell it
ran late. Nothing is deferred that was imported before the first meta kernel runs.

Why the answers are the same: each helper here does what symbolic_shapes' function of that name does for
plain Python bools and ints (its code for them never touches module state) and calls the real function for
anything else; no object is an instance of sympy.Basic while sympy has not been executed (its classes do not
exist yet), and after that the check is the real one.
"""
from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import operator
import sys
import threading
import types

import torch

SYMPY = "sympy"
SHAPES = "torch.fx.experimental.symbolic_shapes"

_lock = threading.RLock()
_running: set = set()
installed = False  # install() ran (whether or not it deferred anything)


class _Deferred(types.ModuleType):
    """A module object whose code has not run yet: any attribute it lacks runs it first."""

    def __getattr__(self, name):
        d = self.__dict__
        if name == "__path__":  # `from m import x` asks; sympy's is in __dict__, symbolic_shapes is no package
            raise AttributeError(name)
        quick = _QUICK.get(d["__name__"])
        if quick is not None:
            found = quick(name, sys._getframe(1))
            if found is not None:
                return found
        run(self, name)
        return types.ModuleType.__getattribute__(self, name)

    def __dir__(self):  # dir() lists what the module defines: run it first
        run(self, "__dir__")
        return types.ModuleType.__dir__(self)


def run(module, wanted: str = "") -> None:
    """Execute a deferred module in place (once; other threads wait; a failure leaves it out of sys.modules
    like any failed import)."""
    with _lock:
        if type(module) is not _Deferred:
            return
        name = module.__dict__["__name__"]
        if name in _running:  # its own code reads an attribute it has not defined yet: as a partial module
            raise AttributeError(f"partially initialized module {name!r} has no attribute {wanted!r}")
        _running.add(name)
        spec = module.__dict__["__spec__"]
        spec._initializing = True
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        finally:
            spec._initializing = False
            _running.discard(name)
            module.__class__ = types.ModuleType  # ran (or failed, as a half-initialized module does)


def pending() -> list[str]:
    return [n for n in (SYMPY, SHAPES) if type(sys.modules.get(n)) is _Deferred]


# --- what a deferred module answers without running -------------------------------------------------------

def _real(name):
    module = sys.modules[SHAPES]
    run(module)
    return getattr(module, name)


def expect_true(a, skip=0):
    if type(a) is bool:
        return a
    return _real("expect_true")(a, skip + 1)  # it looks `skip + 1` frames up for the user's line


def guard_or_false(a):
    return a if type(a) is bool else _real("guard_or_false")(a)


def guard_or_true(a):
    return a if type(a) is bool else _real("guard_or_true")(a)


def guard_size_oblivious(expr):
    # torch's is_contiguous imports it without calling it; a call is the real one, deprecation warning and all
    # (the warning then names this line instead of the caller's).
    return _real("guard_size_oblivious")(expr)


def guarding_hint_or_throw(a):
    return a if type(a) in (bool, int) else _real("guarding_hint_or_throw")(a)


def has_guarding_hint(a):
    return True if type(a) in (bool, int, float) else _real("has_guarding_hint")(a)


def is_nested_int(s):
    return False if not isinstance(s, torch.SymInt) else _real("is_nested_int")(s)


def sym_and(x, *others):
    if type(x) is bool and all(type(y) is bool for y in others):
        return functools.reduce(operator.and_, others, x)
    return _real("sym_and")(x, *others)


def sym_or(x, *others):
    if type(x) is bool and all(type(y) is bool for y in others):
        return functools.reduce(operator.or_, others, x)
    return _real("sym_or")(x, *others)


def _plain_ints(v):
    return isinstance(v, (tuple, list)) and all(type(i) is int for i in v)


def sym_eq(x, y):
    if _plain_ints(x) and _plain_ints(y):
        if len(x) != len(y):
            return False
        return functools.reduce(operator.and_, (a == b for a, b in zip(x, y)), True)
    if type(x) is int and type(y) is int:
        return x == y
    return _real("sym_eq")(x, y)


_HELPERS = {f.__name__: f for f in (expect_true, guard_or_false, guard_or_true, guard_size_oblivious,
                                    guarding_hint_or_throw, has_guarding_hint, is_nested_int, sym_and, sym_or,
                                    sym_eq)}


def _shapes_quick(name, caller):
    # Only torch's own function-local imports get them: a module-level import (torch._dynamo's, a user's)
    # runs the real module, so nothing keeps one of these functions for long.
    g = caller.f_globals.get("__name__", "")
    if (g == "torch" or g.startswith("torch.")) and caller.f_code.co_name != "<module>":
        return _HELPERS.get(name)
    return None


class _NoBasicYet(type):
    """isinstance(x, sympy.Basic) while sympy has not run: False (no sympy class exists); the real check
    once it has."""

    def __instancecheck__(cls, obj):
        module = sys.modules.get(SYMPY)
        return module is not None and type(module) is not _Deferred and isinstance(obj, module.Basic)

    def __subclasscheck__(cls, sub):
        module = sys.modules.get(SYMPY)
        return module is not None and type(module) is not _Deferred and issubclass(sub, module.Basic)


class _Basic(metaclass=_NoBasicYet):
    pass


_elementwise_dtypes_code = None


def _sympy_quick(name, caller):
    if name == "Basic" and caller.f_code is _elementwise_dtypes_code:
        return _Basic
    return None


_QUICK = {SHAPES: _shapes_quick, SYMPY: _sympy_quick}


class _Submodules:
    """A sys.meta_path entry for `import sympy.core` (or any submodule) while sympy is deferred: run sympy
    first. Its code imports that submodule itself, and the import system, having asked the finders, would
    then load it a second time over the first; so we hand it the module sympy loaded (the same object,
    its own __spec__ back on it)."""

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(SYMPY + "."):
            return None
        package = sys.modules.get(SYMPY)
        if SYMPY in _running:  # sympy's own imports while it runs
            return None
        if type(package) is not _Deferred:  # it ran: from now on its submodules import as usual
            _leave_meta_path(self)
            return None
        run(package)
        _leave_meta_path(self)
        loaded = sys.modules.pop(name, None)
        if loaded is None:
            return None
        return importlib.machinery.ModuleSpec(name, _Loaded(loaded))


class _Loaded:
    def __init__(self, module):
        self.module, self.spec = module, module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        module.__spec__ = self.spec  # the import system set our spec on it: put its own back


_submodules = _Submodules()


def _leave_meta_path(finder) -> None:
    # A new list: the import system may be iterating the old one right now (removing from it would make
    # it skip the next finder).
    sys.meta_path = [f for f in sys.meta_path if f is not finder]


# --- install ------------------------------------------------------------------------------------------------

def _defer(name: str, parent=None, attr=None) -> bool:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return False
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _Deferred
    sys.modules[name] = module
    if parent is not None:
        setattr(parent, attr, module)  # what the import system sets after importing a submodule
    return True


def install() -> None:
    """Once per process, before the first meta kernel runs. Defers only modules nobody has imported yet."""
    global installed, _elementwise_dtypes_code
    if installed:
        return
    installed = True
    with _lock:
        try:
            import torch._prims_common as prims_common
            import torch.fx.experimental as experimental

            code = prims_common.elementwise_dtypes.__code__
        except (ImportError, AttributeError):  # another torch's layout: keep its own path
            return
        if not any(m == SYMPY or m.startswith(SYMPY + ".") for m in sys.modules):
            _elementwise_dtypes_code = code
            if _defer(SYMPY):
                sys.meta_path.insert(0, _submodules)
        if SHAPES not in sys.modules:
            _defer(SHAPES, experimental, "symbolic_shapes")
