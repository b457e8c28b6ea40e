"""Seeding and RNG state changes inside a jitted function, recorded in the trace in eager's order.

Random ops draw from the default generator when the computation runs, so a `manual_seed(s)` or
`set_rng_state(t)` the user's code makes while tracing must happen at the same place in the computation,
on every call: each becomes an EFFECT symbol (kept in order, never merged or removed, a fusion barrier).
While tracing nothing is seeded (only meta ops run), so the caller's RNG state is untouched until the
computation runs. `get_rng_state()` becomes a symbol that reads the state at that point of the computation
(what `torch.random.fork_rng` and `freeze_rng_state` save and put back).

Only the default CPU generator is recorded; a generator passed in or created inside keeps the clear
refusal (its state would need an input of its own), as do `seed()` (a nondeterministic seed) and
`graphsafe_set_state`.
"""
from __future__ import annotations

import operator

import torch

from .symbols import Symbol, Tag


def _state_meta(symbol, args, kwargs):
    from .meta import _new_proxy

    with torch._C.DisableTorchFunction():
        size = torch.default_generator.get_state().numel()
        return _new_proxy(torch.empty(size, dtype=torch.uint8, device="meta"), torch.device("cpu"))


# torch.manual_seed seeds every device's generators (its Python body, lazily for CUDA, reads stacks and
# files: interpreting it would make the trace single-use), so the call itself is the recorded op.
TORCH_MANUAL_SEED = Symbol("torch.manual_seed", torch.manual_seed, Tag.EFFECT, meta=lambda sym, args, kwargs: None)
MANUAL_SEED = Symbol("torch.default_generator.manual_seed", torch.default_generator.manual_seed, Tag.EFFECT,
                     meta=lambda sym, args, kwargs: None)
GET_STATE = Symbol("torch.default_generator.get_state", torch.default_generator.get_state, Tag.EFFECT,
                   meta=_state_meta)
SET_STATE = Symbol("torch.default_generator.set_state", torch.default_generator.set_state, Tag.EFFECT,
                   meta=lambda sym, args, kwargs: None)


def _seed_value(seed):
    from .errors import UnsupportedInputError

    try:
        return operator.index(seed)  # eager accepts ints only (a traced int answers its value)
    except TypeError:
        raise UnsupportedInputError(f"manual_seed with a {type(seed).__name__} seed inside a jitted function") from None


def lookasides(refuse) -> dict:
    """Generator methods -> replacements for the interpreting front end. `refuse(method)` builds the clear
    refusal kept for what is not recorded."""
    gen = torch._C.Generator

    def manual_seed(g, seed):
        if g is not torch.default_generator:
            return refuse(gen.manual_seed)(g, seed)
        MANUAL_SEED(_seed_value(seed))
        return g

    def get_state(g):
        if g is not torch.default_generator:
            with torch._C.DisableTorchFunction():
                return gen.get_state(g)
        return GET_STATE()

    def set_state(g, state):
        if g is not torch.default_generator:
            return refuse(gen.set_state)(g, state)
        SET_STATE(state)
        return g

    def torch_manual_seed(seed):
        TORCH_MANUAL_SEED(_seed_value(seed))
        return torch.default_generator

    return {gen.manual_seed: manual_seed, gen.get_state: get_state, gen.set_state: set_state,
            torch.manual_seed: torch_manual_seed}
