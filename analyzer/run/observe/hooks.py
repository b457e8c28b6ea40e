"""Watching the program's own torch.compile, for the length of a `with` block.

torch.compile (and nn.Module.compile, which calls it) builds its backend from backend=/mode=/options= and hands
it to ``torch._dynamo.optimize``; that call is where the backend is wrapped, so every option the program chose
is applied by torch as usual. The wrapper (ObservedBackend) is transparent: dynamo reads the backend's
attributes (compiler_name, get_compiler_config, reset, ...) on it and compares it by the backend it holds.
It sees each graph before the backend does and returns the backend's compiled function wrapped to count calls
(and, with --verify, to compare them with eager). Compile start/end callbacks (torch._dynamo.callback) make the
observer take torch's records of the compile that just ran.
"""
from __future__ import annotations

import contextlib

from .observer import Observer


class ObservedBackend:
    def __init__(self, inner, observer: Observer, name: str | None = None):
        # dynamo reads the backend's own attributes (compiler_name, get_compiler_config, reset, ...): copied here,
        # since a __getattr__ on a backend crashes torch 2.13's C frame evaluator (a segfault, seen here).
        for attr in dir(inner):
            if not attr.startswith(("__", "_torchdynamo")):
                try:
                    setattr(self, attr, getattr(inner, attr))
                except (AttributeError, TypeError):
                    pass
        self._tl_inner = inner
        self._tl_observer = observer
        if name is not None:
            self.compiler_name = name

    def __call__(self, gm, example_inputs, **kwargs):
        graph = self._tl_observer.compiled_graph(gm, self._tl_inner)
        compiled = self._tl_inner(gm, example_inputs, **kwargs)
        return self._tl_observer.wrap(compiled, graph)

    def __eq__(self, other):
        inner = other._tl_inner if isinstance(other, ObservedBackend) else other
        return self._tl_inner == inner

    def __hash__(self):
        return hash(self._tl_inner)


def _wrap(backend, observer: Observer):
    if isinstance(backend, ObservedBackend) or backend is None:
        return backend
    if isinstance(backend, str):
        from torch._dynamo.backends.registry import lookup_backend

        return ObservedBackend(lookup_backend(backend), observer, name=backend)
    return ObservedBackend(backend, observer)


@contextlib.contextmanager
def observing(observer: Observer):
    import torch._dynamo
    from torch._dynamo.callback import callback_handler

    original = torch._dynamo.optimize

    def optimize(*args, **kwargs):
        if args:
            args = (_wrap(args[0], observer), *args[1:])
        else:
            kwargs["backend"] = _wrap(kwargs.get("backend", "inductor"), observer)
        return original(*args, **kwargs)

    def on_compile(_args):
        observer.poll()

    optimize.__wrapped__ = original
    observer.baseline()
    torch._dynamo.optimize = optimize
    callback_handler.register_start_callback(on_compile)
    callback_handler.register_end_callback(on_compile)
    try:
        yield observer
    finally:
        torch._dynamo.optimize = original
        callback_handler.remove_start_callback(on_compile)
        callback_handler.remove_end_callback(on_compile)
        observer.poll()
