"""Replacing the program's jit entry points with the collector's jit, for the length of a `with` block.

    torch.compile(fn | module, **options)  and  @torch.compile / @torch.compile(mode=...)
    nn.Module.compile(**options)           (torch sets module._compiled_call_impl; so do we)
    compiler.jit, analyzer.jit             (analysis callers that bring their own frontend= pass through)
    thunder.jit                            (patched when `thunder` is imported, through an import hook)

Calls made by torch, by the compiler or by the analyzer themselves (our inductor executor calls
torch.compile per fusion region) keep the original: only the program's own calls are replaced. Options of
the replaced entry points (backend=, mode=, fullgraph=, ...) do not apply: the compiler's defaults do.
"""
from __future__ import annotations

import contextlib
import importlib.abc
import os
import sys

import torch

import compiler

from .. import dynamic
from .collector import Collector

_ANALYZER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_OURS = (_ANALYZER_DIR, os.path.dirname(os.path.abspath(compiler.__file__)) + os.sep,
         os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)


def _called_by_machinery(depth: int = 2) -> bool:
    caller = sys._getframe(depth).f_code.co_filename
    return os.path.abspath(caller).startswith(_OURS)


@contextlib.contextmanager
def intercepting(collector: Collector):
    """Every jit entry point the program calls goes to ``collector.jit`` while the block runs."""
    original_compile = torch.compile
    original_module_compile = torch.nn.Module.compile
    original_compiler_jit = compiler.jit
    original_analyzer_jit = dynamic.jit
    import analyzer

    def torch_compile(model=None, **options):
        if _called_by_machinery():
            return original_compile(model, **options)
        if options.get("disable"):  # torch.compile(disable=True) returns the function as it is
            return model if model is not None else (lambda fn: fn)
        if model is None:  # @torch.compile(mode=...): a decorator
            return lambda fn: collector.jit(fn)
        return collector.jit(model)

    def module_compile(self, *args, **kwargs):
        if kwargs.get("disable"):
            return None
        self._compiled_call_impl = collector.jit(self._call_impl)

    def compiler_jit(fn_or_module, **options):
        if options.get("frontend") is not None or _called_by_machinery():
            return original_compiler_jit(fn_or_module, **options)
        keep = {k: v for k, v in options.items() if k in ("cache", "executors", "passes")}
        return collector.jit(fn_or_module, **keep)

    def analyzer_jit(fn, *, sharp_edges="allow", rules=None, **options):
        if _called_by_machinery():
            return original_analyzer_jit(fn, sharp_edges=sharp_edges, rules=rules, **options)
        keep = {k: v for k, v in options.items() if k in ("cache", "executors", "passes")}
        return collector.jit(fn, **keep)

    def thunder_jit(fn, *args, **options):
        return collector.jit(fn)

    torch_compile.__wrapped__ = original_compile
    torch.compile = torch_compile
    torch.nn.Module.compile = module_compile
    compiler.jit = compiler_jit
    dynamic.jit = analyzer_jit
    analyzer_had_jit = "jit" in vars(analyzer)
    saved_analyzer_jit = vars(analyzer).get("jit")
    analyzer.jit = analyzer_jit
    hook = _ThunderHook(thunder_jit)
    sys.meta_path.insert(0, hook)
    thunder_before = sys.modules.get("thunder")
    saved_thunder_jit = getattr(thunder_before, "jit", None)
    if thunder_before is not None:
        hook.patch(thunder_before)
    try:
        yield collector
    finally:
        torch.compile = original_compile
        torch.nn.Module.compile = original_module_compile
        compiler.jit = original_compiler_jit
        dynamic.jit = original_analyzer_jit
        if analyzer_had_jit:
            analyzer.jit = saved_analyzer_jit
        else:
            vars(analyzer).pop("jit", None)
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(hook)
        thunder = sys.modules.get("thunder")
        if thunder is not None and getattr(thunder, "jit", None) is thunder_jit:
            if thunder is thunder_before and saved_thunder_jit is not None:
                thunder.jit = saved_thunder_jit
            elif hook.saved is not None:
                thunder.jit = hook.saved


class _ThunderHook(importlib.abc.MetaPathFinder):
    """Finds `thunder` with the other finders, then replaces `thunder.jit` right after the module runs, so
    `import thunder; thunder.jit(...)` and `from thunder import jit` both get the collector's jit."""

    def __init__(self, replacement):
        self.replacement = replacement
        self.saved = None
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "thunder" or self._busy:
            return None
        self._busy = True
        try:
            import importlib.util

            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return None
        loader, hook = spec.loader, self

        class _Patching(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                hook.patch(module)

        spec.loader = _Patching()
        return spec

    def patch(self, module) -> None:
        if hasattr(module, "jit") and module.jit is not self.replacement:
            self.saved = module.jit
        module.jit = self.replacement
