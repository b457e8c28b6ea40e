"""The object every rule's static check receives: one parsed file and the facts derived from it.

Facts are computed lazily and shared: the module index (statements only) for every file, function facts
only for functions a rule asks about, scopes only for jitted functions. Rules read these and never walk
the whole tree themselves.
"""

from __future__ import annotations

import ast
import bisect
from functools import cached_property
from itertools import accumulate, repeat
from operator import add

from . import prefilter
from .flow import FunctionFacts, build_facts
from .jitted import JitTarget, find_jitted
from .module_index import FunctionInfo, ModuleIndex, build_module_index
from .scopes import Scope, build_scopes
from .source import SourceFile


class FileContext:
    def __init__(
        self,
        source: SourceFile,
        tree: ast.Module,
        jit_decorators: tuple[str, ...] = (),
        compiled_elsewhere: tuple = (),
        target: str = "any",
    ):
        self.source = source
        self.tree = tree
        self.jit_decorators = tuple(jit_decorators)
        # (qualname, compiler, symbolic, how, assumed, entry[, per_call_self]) from the project index: functions of this
        # file that other files (or `assume-compiled`) compile
        self.compiled_elsewhere = tuple(compiled_elsewhere)
        self.target = target
        # torch._dynamo settings the project turns on (name -> "path:line"), from the project index; None: no index
        # (a file linted alone: rules/dynamo_settings.py reads the file's own)
        self.settings: dict[str, str] | None = None
        self._facts: dict[int, FunctionFacts] = {}
        self._scopes: dict[int, Scope] = {}

    @cached_property
    def index(self) -> ModuleIndex:
        return build_module_index(self.tree)

    @cached_property
    def jitted(self) -> list[JitTarget]:
        targets = self._local_jitted()
        if self.compiled_elsewhere:
            by_qualname = {}
            for info in self.index.functions:
                by_qualname.setdefault(info.qualname, info)
            have = {id(t.info.node) for t in targets}
            for qual, compiler, symbolic, how, assumed, *entry in self.compiled_elsewhere:
                info = by_qualname.get(qual)
                if info is not None and id(info.node) not in have:
                    have.add(id(info.node))
                    # "reached": called by compiled code, not named by the compile call (its arguments are the
                    # caller's values, not necessarily the compiled function's inputs)
                    kind = "project" if not entry or entry[0] else "reached"
                    targets.append(JitTarget(info, symbolic, kind, compiler=compiler, elsewhere=how, assumed=assumed,
                                             per_call_self=len(entry) > 1 and bool(entry[1])))
        if self.target != "any":
            for t in targets:
                t.compiler = self.target
        return targets

    def _local_jitted(self) -> list[JitTarget]:
        text = self.source.text
        if not any(d.rsplit(".", 1)[-1] in text for d in self.jit_decorators):
            # a substring test first: most files mention neither word, and `in` is far cheaper than \b regex
            if ("jit" not in text and "compile" not in text) or not prefilter.JIT_TEXT.search(text):
                return []
        return find_jitted(text, self.index, self.jit_decorators)

    def facts(self, func) -> FunctionFacts:
        key = id(func)
        f = self._facts.get(key)
        if f is None:
            f = self._facts[key] = build_facts(func)
        return f

    def function_scope(self, info: FunctionInfo) -> Scope:
        """The scope of ``info``'s function, inside the scope tree of its outermost enclosing function."""
        key = id(info.node)
        if key in self._scopes:
            return self._scopes[key]
        outer = next((p for p in info.parents if not isinstance(p, ast.ClassDef)), info.node)
        root = build_scopes(outer)
        for s in root.walk():
            if s.kind in ("function", "lambda", "class"):
                self._scopes.setdefault(id(s.node), s)
        return self._scopes[key]

    def functions_with_lines(self, *line_sets: list[int]) -> list[FunctionInfo]:
        """Functions whose span holds at least one line from every set."""
        out = []
        if len(line_sets) == 1:  # (what every caller asks: one bisection per function, inline)
            lines = line_sets[0]
            if not lines:
                return out
            count, left = len(lines), bisect.bisect_left
            for info in self.index.functions:
                n = info.node
                i = left(lines, n.lineno)
                if i < count and lines[i] <= n.end_lineno:
                    out.append(info)
            return out
        for info in self.index.functions:
            n = info.node
            if all(prefilter.any_in_range(lines, n.lineno, n.end_lineno) for lines in line_sets):
                out.append(info)
        return out

    def module_code_matches(self, lines: list[int], pattern) -> bool:
        """Does top-level code (outside every def and class) hold one of ``lines``, with ``pattern`` in the file?"""
        defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        covered = []
        for stmt in self.tree.body:
            if isinstance(stmt, defs):
                start = stmt.decorator_list[0].lineno if stmt.decorator_list else stmt.lineno
                covered.append((start, stmt.end_lineno))
        for line in lines:
            i = bisect.bisect_right(covered, (line, 1 << 30)) - 1
            if i < 0 or not covered[i][0] <= line <= covered[i][1]:
                return bool(pattern.search(self.source.text))
        return False

    def functions_matching(self, lines: list[int], pattern) -> list[FunctionInfo]:
        """Functions holding one of ``lines`` whose own text also matches ``pattern`` (which must not anchor at the
        start of a text: no ``\\A``, no ``^`` without ``re.M``).

        The second test reads only the text of functions that passed the first, which is much cheaper than
        running a slow pattern over the whole file.
        """
        out = []
        found = self.functions_with_lines(lines)
        if not found:
            return out
        # Each function's lines are searched in place, in the text with \n line ends, from the start of its first
        # line to the end of its last (`endpos`: the search ends there as if the text did): no string built per
        # function. (A look-behind at its first character sees the \n before it where the lines joined alone
        # would have nothing: the same for the patterns here.)
        text, starts = self._line_starts()
        for info in found:
            n = info.node
            start = n.decorator_list[0].lineno if n.decorator_list else n.lineno
            if pattern.search(text, starts[start - 1], starts[n.end_lineno] - 1):
                out.append(info)
        return out

    def _line_starts(self) -> tuple[str, list[int]]:
        """The text with \n line ends (as ``source.lines`` splits it) and where each line starts in it, with one
        more entry, one past the text's end (so that ``starts[k] - 1`` ends line k)."""
        got = self.__dict__.get("_starts")
        if got is None:
            lines = self.source.lines
            text = self.source.text if "\r" not in self.source.text else "\n".join(lines)
            starts = [0]
            starts.extend(accumulate(map(add, map(len, lines), repeat(1))))  # (each line's length + 1, summed in C)
            got = self.__dict__["_starts"] = (text, starts)
        return got

    def text_lines(self, pattern) -> list[int]:
        return prefilter.matching_lines(pattern, self.source.text)

    def resolve(self, expr) -> str | None:
        return self.index.resolve(expr)

    def segment(self, node) -> str:
        return self.source.segment(node)
