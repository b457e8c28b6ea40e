"""Seeding and RNG state changes inside a jitted function, recorded in the trace in eager's order.

Random ops draw from a generator when the computation runs, so a `manual_seed(s)` or `set_state(t)` the
user's code makes while tracing must happen at the same place in the computation, on every call: each
becomes an EFFECT symbol (kept in order, never merged or removed, a fusion barrier). While tracing nothing
is seeded (only meta ops run), so no generator's state changes until the computation runs. `get_state()`
becomes a symbol that reads the state at that point of the computation (what `torch.random.fork_rng` and
`freeze_rng_state` save and put back).

Generators: the default CPU generator; a generator passed as an argument (an `OpaqueProxy` input, fetched
by the prologue on every call, so its state advances as the caller's would); a generator created inside
(`torch.Generator(device)`: a creation symbol in the trace, so every call makes a fresh one, as eager
does; while tracing, ops see a stand-in whose state is never used). `seed()` draws a nondeterministic seed
when the computation runs; its value is not known while tracing, so using it in Python is refused
(`UnknownSeed`). What would be read as a constant while tracing (`initial_seed()`, offsets,
`clone_state()`, graph-safe states) is refused.
"""
from __future__ import annotations

import operator

import torch

from ..core.symbols import Symbol, Tag

_GEN = torch._C.Generator


def _none(sym, args, kwargs):
    return None


def _state_meta(symbol, args, kwargs):
    from ..meta.functions import new_proxy

    g = args[0].value if args else torch.default_generator  # (an OpaqueProxy: its real generator or stand-in)
    with torch._C.DisableTorchFunction():
        size = g.get_state().numel()
    return new_proxy(torch.empty(size, dtype=torch.uint8, device="meta"), torch.device("cpu"))


def _new_generator_meta(symbol, args, kwargs):
    from ..core.proxies import OpaqueProxy
    from ..core.context import current_state

    state = current_state()
    with torch._C.DisableTorchFunction():
        standin = torch.Generator(*args, **kwargs)  # eager's errors (a bad device) happen here too
    p = OpaqueProxy(state.trace.new_name("g"), standin, "a torch.Generator created inside the function")
    state.opaque[id(standin)] = p  # ops take the real object; recording maps it to the proxy
    state.created_generators.append(standin)
    return p


# torch.manual_seed seeds every device's generators (its Python body, lazily for CUDA, reads stacks and
# files: interpreting it would make the trace single-use), so the call itself is the recorded op.
TORCH_MANUAL_SEED = Symbol("torch.manual_seed", torch.manual_seed, Tag.EFFECT, meta=_none)
TORCH_SEED = Symbol("torch.seed", torch.seed, Tag.EFFECT, meta=_none)
MANUAL_SEED = Symbol("torch.default_generator.manual_seed", torch.default_generator.manual_seed, Tag.EFFECT,
                     meta=_none)
GET_STATE = Symbol("torch.default_generator.get_state", torch.default_generator.get_state, Tag.EFFECT,
                   meta=_state_meta)
SET_STATE = Symbol("torch.default_generator.set_state", torch.default_generator.set_state, Tag.EFFECT, meta=_none)
SEED = Symbol("torch.default_generator.seed", torch.default_generator.seed, Tag.EFFECT, meta=_none)
# The same on a generator that is a value of the trace (an argument or created inside): `g0` is its proxy.
NEW_GENERATOR = Symbol("torch.Generator", torch.Generator, Tag.EFFECT | Tag.CREATION, meta=_new_generator_meta)
GEN_MANUAL_SEED = Symbol("torch._C.Generator.manual_seed", _GEN.manual_seed, Tag.EFFECT, meta=_none)
GEN_GET_STATE = Symbol("torch._C.Generator.get_state", _GEN.get_state, Tag.EFFECT, meta=_state_meta)
GEN_SET_STATE = Symbol("torch._C.Generator.set_state", _GEN.set_state, Tag.EFFECT, meta=_none)
GEN_SEED = Symbol("torch._C.Generator.seed", _GEN.seed, Tag.EFFECT, meta=_none)


def _refusal(what: str):
    from ..core.errors import UnsupportedOpError
    from ..core.source import user_location

    loc = user_location(3)
    return UnsupportedOpError(f"{what} inside a jitted function is not supported"
                              f"{f' at {loc.describe()}' if loc else ''}")


class UnknownSeed:
    """What `seed()` returns while tracing: the seed is drawn when the computation runs, on every call, so
    Python code that uses its value (prints, computes with or returns it) would bake in one draw: refused."""

    __slots__ = ()

    def __repr__(self):
        return "<seed drawn when the computation runs>"


def raise_seed_use(*args, **kwargs):
    raise _refusal("using the value returned by Generator.seed() / torch.seed() (it is drawn anew on each call; "
                   "draw the seed outside and pass it in)")


for _name in ("__index__", "__int__", "__float__", "__bool__", "__str__", "__format__", "__hash__", "__eq__",
              "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__add__", "__radd__", "__sub__", "__rsub__",
              "__mul__", "__rmul__", "__mod__", "__rmod__", "__floordiv__", "__rfloordiv__", "__truediv__",
              "__rtruediv__", "__pow__", "__rpow__", "__and__", "__rand__", "__or__", "__ror__", "__xor__",
              "__rxor__", "__lshift__", "__rshift__", "__neg__", "__abs__", "__invert__", "__reduce__",
              "__reduce_ex__", "__copy__", "__deepcopy__"):
    setattr(UnknownSeed, _name, raise_seed_use)
UNKNOWN_SEED = UnknownSeed()


def _seed_value(seed):
    from ..core.errors import UnsupportedInputError

    if isinstance(seed, UnknownSeed):
        raise_seed_use()
    try:
        return operator.index(seed)  # eager accepts ints only (a traced int answers its value)
    except TypeError:
        raise UnsupportedInputError(f"manual_seed with a {type(seed).__name__} seed inside a jitted function") from None


def _traced_generator(g) -> bool:
    """The default generator is a global of torch; any other must be a value of the trace (an argument or
    made inside): recording normalizes it to its proxy, or refuses a generator read from a global."""
    return g is not torch.default_generator


def lookasides() -> dict:
    """Generator methods, torch.manual_seed/seed and torch.Generator -> replacements for the interpreting
    front end."""

    def manual_seed(g, seed):
        if _traced_generator(g):
            GEN_MANUAL_SEED(g, _seed_value(seed))
        else:
            MANUAL_SEED(_seed_value(seed))
        return g

    def get_state(g):
        return GEN_GET_STATE(g) if _traced_generator(g) else GET_STATE()

    def set_state(g, state):
        if isinstance(state, UnknownSeed):
            raise_seed_use()
        if _traced_generator(g):
            GEN_SET_STATE(g, state)
        else:
            SET_STATE(state)
        return g

    def seed(g):
        if _traced_generator(g):
            GEN_SEED(g)
        else:
            SEED()
        return UNKNOWN_SEED

    def torch_seed():
        TORCH_SEED()
        return UNKNOWN_SEED

    def torch_manual_seed(seed):
        TORCH_MANUAL_SEED(_seed_value(seed))
        return torch.default_generator

    def new_generator(*args, **kwargs):
        return NEW_GENERATOR(*args, **kwargs).value

    def constant_read(method):
        def read(g, *args, **kwargs):
            raise _refusal(f"torch.Generator.{method.__name__} (a value of the generator that the trace would "
                           "keep as a constant; read it outside the jitted function)")
        return read

    table = {_GEN.manual_seed: manual_seed, _GEN.get_state: get_state, _GEN.set_state: set_state, _GEN.seed: seed,
             torch.manual_seed: torch_manual_seed, torch.seed: torch_seed, torch.Generator: new_generator}
    for name in ("initial_seed", "get_offset", "set_offset", "clone_state", "graphsafe_get_state",
                 "graphsafe_set_state"):
        m = getattr(_GEN, name, None)
        if m is not None:
            table[m] = constant_read(m)
    return table
