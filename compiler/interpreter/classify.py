"""Which native callables are pure (no event), which are side effects (TL204's list), and the rest opaque."""
from __future__ import annotations

import builtins
import math
import operator
import os
import random
import time

_PURE_BUILTIN_NAMES = (
    "abs all any ascii bin bool bytearray bytes callable chr classmethod complex dict divmod enumerate filter "
    "float format frozenset getattr hasattr hash hex id int isinstance issubclass iter len list map max min next "
    "object oct ord pow property range repr reversed round set setattr delattr slice sorted staticmethod str sum "
    "super tuple type zip").split()
_SIDE_EFFECT_BUILTIN_NAMES = "print open input globals locals vars breakpoint exec eval compile __import__".split()

PURE_IDS = {id(getattr(builtins, n)) for n in _PURE_BUILTIN_NAMES}
PURE_IDS |= {id(v) for m in (math, operator) for v in vars(m).values() if callable(v)}
SIDE_EFFECT_IDS = {id(getattr(builtins, n)) for n in _SIDE_EFFECT_BUILTIN_NAMES}
_PURE_SELF_TYPES = (list, dict, set, frozenset, tuple, str, bytes, bytearray, int, float, complex, bool, range,
                    slice)
_SIDE_EFFECT_MODULES = ("random", "time")
RANDOM_INSTANCE = getattr(random, "_inst", None)


def is_side_effect(fn) -> bool:
    if id(fn) in SIDE_EFFECT_IDS:
        return True
    owner = getattr(fn, "__self__", None)
    if owner is not None and (owner is RANDOM_INSTANCE or owner is time or owner is random):
        return True
    module = getattr(fn, "__module__", None)
    return module in _SIDE_EFFECT_MODULES and getattr(random, getattr(fn, "__name__", ""), None) is fn or (
        module == "time" and getattr(time, getattr(fn, "__name__", ""), None) is fn)


def is_pure(fn) -> bool:
    if id(fn) in PURE_IDS:
        return True
    if isinstance(fn, type) and fn.__module__ == "builtins":
        return True  # int(...), list(...), ValueError(...)
    owner = getattr(fn, "__self__", None)
    return type(owner) in _PURE_SELF_TYPES  # bound methods of builtin containers and scalars


# Modules whose native functions read state from outside the program: their results can differ on every
# call, whatever the arguments.
_OUTSIDE_STATE_MODULES = frozenset(("time", "random", "_random", "os", "posix", "nt", "contextvars", "_contextvars",
                                    "secrets", "uuid", "datetime", "_datetime", "threading", "_thread", "socket",
                                    "numpy.random"))


def reads_outside_state(fn) -> bool:
    """A native callable (or a method of a native object) from a module that reads outside state."""
    owner = getattr(fn, "__self__", None)
    module = getattr(fn, "__module__", None) or (type(owner).__module__ if owner is not None else "") or ""
    parts = module.split(".")
    return parts[0] in _OUTSIDE_STATE_MODULES or ".".join(parts[:2]) in _OUTSIDE_STATE_MODULES


# Python functions that read process state from outside the program (environment variables): run natively
# and reported as opaque calls, so a compiler knows the value came from outside and may change.
RUN_NATIVELY_IDS = {id(f) for f in (os._Environ.__getitem__, os._Environ.__iter__, os._Environ.__len__)}
