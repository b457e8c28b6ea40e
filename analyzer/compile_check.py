"""A sound, cheap proof that compiling a parsed tree cannot raise SyntaxError.

CPython raises some SyntaxErrors only after parsing: in the symbol table (symtable.c), the code generator
(compile.c) and the __future__ check (future.c). ``may_fail_to_compile`` answers False only when none of the
constructs that can raise one is present; any doubt answers True, and the caller compiles (which gives the
exact error). Covered, for CPython 3.11-3.13:

- ``return`` outside a function, or returning a bare starred value; ``break``/``continue`` outside a loop
  (a loop's ``else`` and a nested def/class are outside it);
- ``yield``/``yield from`` outside a plain function, inside a comprehension, in an annotation, with a bare
  starred value; ``await``/``async`` anything (text: flagged wherever the word is);
- ``global``/``nonlocal`` after a statement that names (uses, binds, imports) one of its names, naming a
  parameter, a dunder, or a name annotated or declared the other way anywhere in the file; either in a class
  body; ``nonlocal`` outside a def, or for a name no enclosing def surely binds (a parameter, or an
  assignment, def, class or import in its body);
- duplicate parameters (def and lambda), a keyword argument repeated in a call or a class header;
- starred assignment targets CPython rejects (alone, two in one sequence, 256+ names before one; in
  assignments, for, with; any star in a comprehension's target) and bare starred values;
- ``__debug__`` anywhere in the text (after NFKC normalisation when the text is not ASCII);
- ``from __future__`` not at the start of the module or naming an unknown feature; ``import *`` below
  module level; a bare ``except:`` before the last handler; ``except*``; ``match`` (its patterns have
  their own errors); PEP 695 type parameters and ``type`` statements; any statement type unknown here;
- walrus in a comprehension or an annotation;
- more than 20 statically nested blocks (loops, ``with`` items, ``try``), each counted with a margin.

Everything here is one walk over statements (never into expressions) plus scans of the text with patterns
that start with a literal (scanned at C speed); expressions are walked only inside the statements whose
lines the scans point at (a ``lambda``, ``yield``, ``:=``, a ``for`` whose target is not plain, one keyword
name given twice where one call may hold both; lines inside a docstring hold no code), found by a second
walk that enters only the statements holding such a line. Measured on the transformers sources: 98% of the
files proven fine, the check costs under half of what compiling every tree did (bench/compile_check.py).
"""

from __future__ import annotations

import ast
import re
import unicodedata
from itertools import accumulate

__all__ = ["may_fail_to_compile"]

# Words whose constructs are rare and have many errors: any file mentioning one is compiled.
_RARE_WORDS = ("await", "async", "__debug__")

# A keyword argument's name and its `=` on different lines (a comment or a newline between): the `=` then
# starts its line. The same-line scan below cannot pair such names, so such a file is compiled.
_EQ_STARTS_LINE = re.compile(r"\n[ \t\f]*=(?!=)")

# A keyword argument: `(` or `,`, then (spaces, or a line break after which anything may precede) a name
# (any run of identifier-ish characters: ASCII letters, digits, `_`, anything non-ASCII), spaces, a single
# `=`. Matched in the REVERSED text so that the pattern starts with the literal `=` (a scan of the forward
# text for a name first is ~20x slower). `(?<!=)` / `(?!=)` exclude `==`; `<=`, `>=`, `!=`, `:=`, `+=` never
# put a name character next to the `=`; `x: int = 1`, `self.x = 1` put no `(` or `,` before the name, and a
# statement `x = 1` follows a line that ends a statement.
_NAME_CHAR = r"[^\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]"
_KEYWORD_REVERSED = re.compile(
    r"=(?<!==)(?!=)[ \t\f]*+(" + _NAME_CHAR + r"++)"
    # before the name: `,` or `(` on its line; or, when the name starts its line, a previous non-blank line
    # ending in `,`, `(` or a backslash, or holding a `#` (a comment may follow the `,`)
    r"(?=[ \t\f]*+(?:[,(]|\n(?:[ \t\f]*+\n)*+(?:[ \t\f]*+[,(\\]|[^\n]*#)))"
)

# Text that points at expression-level constructs: the statements holding these lines are walked.
_SUSPECT = tuple(re.compile(p) for p in (r"lambda(?!\w)", r"yield(?!\w)", r":="))

# A `for` whose target is plain holds no starred target: up to the first `in` word after it, no `*`, no `[`
# (subscripts), no `(` after a name or `)` (calls) and no `#` (comments). Only a subscript, a call or a comment
# could hide an `in` inside a target, so that first `in` is the target's own; other characters (prose: a
# docstring's "for the ... in") pass, as they cannot be part of a plain target. Any other `for` points at
# its line.
_FOR = re.compile(r"for(?!\w)")
_IN = re.compile(r"in(?!\w)(?<!\win)")
_NOT_PLAIN = re.compile(r"[*\[#]|(?<=[\w)\]])\(")

_FUTURE_FEATURES = frozenset({"nested_scopes", "generators", "division", "absolute_import", "with_statement",
                              "print_function", "unicode_literals", "generator_stop", "annotations"})

# Upper bounds on the blocks CPython's compiler pushes for one construct (3.11-3.13: a loop pushes 1, a
# `with` item 1, a try up to 3); the sum along a path is compared with CO_MAXBLOCKS (20) less a margin of 2
# (a generator's own block in 3.12+, a return's value kept while a finally body runs).
_LOOP_WEIGHT, _WITH_WEIGHT, _TRY_WEIGHT, _MAX_WEIGHT = 2, 2, 4, 18

_MODULE, _CLASS, _FUNC = 0, 1, 2

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_STATEMENT_LISTS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def may_fail_to_compile(tree: ast.Module, text: str) -> bool:
    """False when ``compile(tree)`` cannot raise SyntaxError (``tree`` parsed from ``text``); True when it might."""
    for word in _RARE_WORDS:
        if word in text:
            return True
    if not text.isascii() and "__debug__" in unicodedata.normalize("NFKC", text):
        return True  # an identifier spelled with compatibility characters
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # the parser counts a lone \r as a line end
    if _EQ_STARTS_LINE.search(text):
        return True
    if len(text) > 10_000 and len(text) < 25 * text.count("="):
        return True  # keyword-dense data (an `=` every 25 characters; source code has one every 40-100+): pairing
        # the keywords would cost more than compiling (~4 us a keyword against ~2 us a call)
    if "__future__" in text and _future_may_fail(tree.body):
        return True
    n_lines = text.count("\n") + 2
    # reach[line]: the last line of any multi-line statement (a compound one: up to its first body line)
    # starting at or before `line`; two lines share a statement iff the later one is at most the earlier's reach
    reach = [0] * n_lines
    strings: list[tuple[int, int, int]] = []
    if _statements_may_fail(tree.body, reach, strings):
        return True
    marked = _marked_lines(text, n_lines, reach, strings)
    if marked is None:
        return False
    return _marked_statements_may_fail(tree.body, list(accumulate(marked)))


def _statements_may_fail(module_body: list, reach: list, strings: list) -> bool:
    """The statement-level errors, in one pass over every statement; fills ``reach``, and ``strings`` with the
    (first line, last line, column) of each string statement spanning lines (docstrings: prose, no code)."""
    global_names: set[str] = set()
    nonlocal_names: set[str] = set()
    annotated: set[str] = set()
    # (statements, scope kind, owning def or class, inside a loop, nesting weight, the scope's own body?,
    # the enclosing defs)
    stack = [(module_body, _MODULE, None, False, 0, True, ())]
    while stack:
        body, scope, owner, loop, weight, own, defs = stack.pop()
        for s in body:
            t = type(s)
            if t is ast.Expr:
                value = s.value
                if type(value) is ast.Starred:
                    return True
                if type(value) is ast.Constant and s.end_lineno != s.lineno:
                    strings.append((s.lineno, s.end_lineno, s.col_offset))
            elif t is ast.Assign:
                if type(s.value) is ast.Starred:
                    return True
                for target in s.targets:
                    if type(target) is not ast.Name and _starred_in_target(target):
                        return True
            elif t is ast.If:
                stack.append((s.body, scope, owner, loop, weight, False, defs))
                if s.orelse:
                    stack.append((s.orelse, scope, owner, loop, weight, False, defs))
            elif t is ast.Return:
                if scope != _FUNC or type(s.value) is ast.Starred:
                    return True
            elif t is ast.FunctionDef:
                if getattr(s, "type_params", None) or _duplicate_parameters(s.args):
                    return True
                stack.append((s.body, _FUNC, s, False, 0, True, defs + (s,)))
            elif t is ast.ImportFrom:
                if s.module == "__future__" and s.level == 0 and not (scope == _MODULE and own):
                    return True  # a nested one (the module's own are checked by _future_may_fail)
                if scope != _MODULE and s.names[0].name == "*":
                    return True
            elif t is ast.AnnAssign:
                if type(s.value) is ast.Starred:
                    return True
                if type(s.target) is ast.Name:
                    annotated.add(s.target.id)
            elif t is ast.For or t is ast.While:
                if t is ast.For and (type(s.iter) is ast.Starred or _starred_in_target(s.target)):
                    return True
                inner = weight + _LOOP_WEIGHT
                if inner > _MAX_WEIGHT:
                    return True
                stack.append((s.body, scope, owner, True, inner, False, defs))
                if s.orelse:
                    stack.append((s.orelse, scope, owner, loop, weight, False, defs))
            elif t is ast.Import or t is ast.Raise or t is ast.Assert or t is ast.Delete or t is ast.Pass:
                pass
            elif t is ast.AugAssign:
                if type(s.value) is ast.Starred:
                    return True
            elif t is ast.Try:
                handlers = s.handlers
                for i, h in enumerate(handlers):
                    if h.type is None and i != len(handlers) - 1:
                        return True  # default 'except:' must be last
                inner = weight + _TRY_WEIGHT
                if inner > _MAX_WEIGHT:
                    return True
                stack.append((s.body, scope, owner, loop, inner, False, defs))
                for h in handlers:
                    stack.append((h.body, scope, owner, loop, inner, False, defs))
                    if h.type is not None and h.type.end_lineno > reach[h.lineno]:
                        reach[h.lineno] = h.type.end_lineno  # an `except` clause's lines, like a header's
                if s.orelse:
                    stack.append((s.orelse, scope, owner, loop, inner, False, defs))
                if s.finalbody:
                    stack.append((s.finalbody, scope, owner, loop, inner, False, defs))
            elif t is ast.ClassDef:
                if getattr(s, "type_params", None):
                    return True
                if len(s.keywords) > 1:
                    names = [k.arg for k in s.keywords if k.arg is not None]
                    if len(set(names)) != len(names):
                        return True
                stack.append((s.body, _CLASS, s, False, 0, True, defs))
            elif t is ast.With:
                for item in s.items:
                    if item.optional_vars is not None and _starred_in_target(item.optional_vars):
                        return True
                inner = weight + _WITH_WEIGHT * len(s.items)
                if inner > _MAX_WEIGHT:
                    return True
                stack.append((s.body, scope, owner, loop, inner, False, defs))
            elif t is ast.Break or t is ast.Continue:
                if not loop:
                    return True
            elif t is ast.Global or t is ast.Nonlocal:
                if scope == _CLASS or (t is ast.Nonlocal and scope != _FUNC):
                    return True
                leading = own
                if own:
                    # at the start of its scope's body (after a docstring, pass, other declarations): nothing can
                    # have used or bound the names before, but the parameters
                    for before in body:
                        if before is s:
                            break
                        tb = type(before)
                        if tb is not ast.Global and tb is not ast.Nonlocal and tb is not ast.Pass \
                                and not (tb is ast.Expr and type(before.value) is ast.Constant):
                            leading = False
                            break
                if not leading and _named_before(owner if owner is not None else module_body, s):
                    return True
                params = _parameter_names(owner.args) if owner is not None else ()
                for name in s.names:
                    if name in params or name.startswith("__"):
                        return True
                if t is ast.Global:
                    global_names.update(s.names)
                else:
                    nonlocal_names.update(s.names)
                    for name in s.names:
                        if not any(_binds(d, name) for d in defs[:-1]):
                            return True  # no binding for nonlocal (as far as this cheap look can tell)
            else:
                # Match, TryStar, TypeAlias, the async statements (the text scan excluded them already), and
                # whatever a newer Python adds: compile
                return True
            # the statement's lines (a compound one: up to its first body line, or its header's last line for
            # a def or class: a docstring's first line is no part of it)
            end = s.end_lineno
            start = s.lineno
            if t is ast.FunctionDef or t is ast.ClassDef:
                if end != start:
                    end = _def_header_end(s) if t is ast.FunctionDef else _class_header_end(s)
                if s.decorator_list:
                    start = s.decorator_list[0].lineno
            elif end != start:
                body_of = getattr(s, "body", None)
                if body_of is not None:
                    end = body_of[0].lineno
            if end > start and end > reach[start]:
                reach[start] = end
    if nonlocal_names and (nonlocal_names & annotated or nonlocal_names & global_names):
        return True
    return bool(global_names and global_names & annotated)


def _named_before(scope, declaration) -> bool:
    """Does any name that ``declaration`` (a global or nonlocal statement) declares occur as a name, parameter,
    import, def, class or handler name anywhere in ``scope`` (a def, or the module's statements), nested
    scopes included, before it? (If not, CPython cannot find it used or bound before the declaration.)"""
    names = set(declaration.names)
    here = (declaration.lineno, declaration.col_offset)
    roots = scope if isinstance(scope, list) else [scope]
    for root in roots:
        for n in ast.walk(root):
            t = type(n)
            if t is ast.Name:
                name = n.id
            elif t is ast.arg:
                name = n.arg
            elif t is ast.alias:
                name = (n.asname or n.name).partition(".")[0]
            elif t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.ClassDef or t is ast.ExceptHandler:
                name = n.name
            else:
                continue
            if name in names and (n.lineno, n.col_offset) < here:
                return True
    return False


def _binds(func, name: str) -> bool:
    """Does def ``func`` surely bind ``name`` locally: a parameter, or a plain assignment, def, class or import
    among its body's own statements?"""
    if name in _parameter_names(func.args):
        return True
    for s in func.body:
        t = type(s)
        if t is ast.Assign:
            if any(type(target) is ast.Name and target.id == name for target in s.targets):
                return True
        elif t is ast.FunctionDef or t is ast.ClassDef:
            if s.name == name:
                return True
        elif t is ast.Import or t is ast.ImportFrom:
            if any((a.asname or a.name).partition(".")[0] == name for a in s.names if a.name != "*"):
                return True
    return False


def _marked_lines(text: str, n_lines: int, reach: list, strings: list) -> bytearray | None:
    """Lines that may hold an expression-level error (None when there are none). Lines inside a string that
    spans lines (its lines but the last, the first only when the string starts it) hold no code: skipped."""
    marked = bytearray(n_lines)
    inside = bytearray(n_lines)
    first_col = {}
    for first, last_line, col in strings:
        if last_line - first > 1:
            inside[first + 1 : last_line] = b"\x01" * (last_line - first - 1)
        first_col[first] = col

    def in_string(line: int, position: int) -> bool:
        if inside[line]:
            return True
        col = first_col.get(line)
        if col is None:
            return False
        line_start = text.rfind("\n", 0, position) + 1
        return text[line_start : line_start + col].strip() == "" and position >= line_start + col

    found = False
    for pattern in _SUSPECT:
        line, last = 1, 0
        for m in pattern.finditer(text):
            start = m.start()
            line += text.count("\n", last, start)
            last = start
            if not in_string(line, start):
                marked[line] = 1
                found = True
    find_in, not_plain = _IN.search, _NOT_PLAIN.search
    line, last = 1, 0
    for m in _FOR.finditer(text):
        start = m.start()
        line += text.count("\n", last, start)
        last = start
        if inside[line]:
            continue  # prose inside a docstring (a third of the `for`s of a documented library): no code
        end = m.end()
        target_end = find_in(text, end, end + 500)  # bounded: no `in` near (a long target) counts as not plain
        if target_end is None or not_plain(text, end, target_end.start()) is not None:
            line_start = text.rfind("\n", 0, start) + 1
            if "#" in text[line_start:start]:
                line_end = text.find("\n", start)
                whole = text[line_start:line_end] if line_end >= 0 else text[line_start:]
                if "'" not in whole and '"' not in whole:
                    continue  # in a comment (or a string's line that holds no code: no quote ends it there)
            if not in_string(line, start):
                marked[line] = 1
                found = True

    # A keyword name given twice in one call: two `name=` of one name on one line or within one statement,
    # where one call may hold both. Consecutive occurrences of each name suffice (two in a statement have
    # every occurrence between them in it too).
    reach = list(accumulate(reach, max))
    reversed_text = text[::-1]
    ascii_text = text.isascii()
    size = len(text)
    line_from_end, last = 0, 0
    seen: dict[str, tuple[int, int]] = {}  # name -> (line, position of its `=`) of its next occurrence
    for m in _KEYWORD_REVERSED.finditer(reversed_text):
        start = m.start()
        line_from_end += reversed_text.count("\n", last, start)
        last = start
        name = m.group(1)
        if not ascii_text and not name.isascii():
            name = unicodedata.normalize("NFKC", name[::-1])
        line = n_lines - 1 - line_from_end
        here = size - 1 - start
        later = seen.get(name)
        seen[name] = (line, here)
        if later is not None and (later[0] == line or reach[line] >= later[0]) \
                and _may_share_a_call(text, here, later[1]) and not in_string(line, here):
            marked[line] = 1
            found = True
    return marked if found else None


def _marked_statements_may_fail(module_body: list, hits: list) -> bool:
    """The expression-level errors in the statements holding a marked line (``hits``: marked lines up to each
    line), entering only compound statements that hold one."""
    stack = [(module_body, _MODULE)]
    while stack:
        body, scope = stack.pop()
        for s in body:
            start = s.lineno
            t = type(s)
            if (t is ast.FunctionDef or t is ast.ClassDef) and s.decorator_list:
                start = s.decorator_list[0].lineno
            if hits[s.end_lineno] == hits[start - 1]:
                continue
            if t is ast.Expr and type(s.value) is ast.Constant:
                continue
            compound = getattr(s, "body", None) is not None
            if _unit_may_fail(s, scope, compound):
                return True
            if compound:
                inner = _FUNC if t is ast.FunctionDef else _CLASS if t is ast.ClassDef else scope
                stack.append((s.body, inner))
                for field in ("orelse", "finalbody"):
                    more = getattr(s, field, None)
                    if more:
                        stack.append((more, scope))
                for h in getattr(s, "handlers", ()):
                    if hits[h.end_lineno] != hits[h.lineno - 1]:
                        if h.type is not None and _unit_may_fail(h, scope, True):
                            return True
                        stack.append((h.body, scope))
    return False


def _def_header_end(s) -> int:
    """The last line of a def's header expressions (its body may start on that line or later: a docstring's
    first line is no part of the header)."""
    a = s.args
    end = s.lineno
    for node in (s.returns, a.kwarg, a.vararg, a.kwonlyargs[-1] if a.kwonlyargs else None,
                 a.kw_defaults[-1] if a.kw_defaults else None, a.args[-1] if a.args else None,
                 a.defaults[-1] if a.defaults else None, a.posonlyargs[-1] if a.posonlyargs else None):
        if node is not None and node.end_lineno > end:
            end = node.end_lineno
    return end


def _class_header_end(s) -> int:
    end = s.lineno
    for node in (s.bases[-1] if s.bases else None, s.keywords[-1] if s.keywords else None):
        if node is not None and node.end_lineno > end:
            end = node.end_lineno
    return end


def _future_may_fail(body: list) -> bool:
    """``from __future__`` after anything but a docstring (a str constant, first) and other __future__ imports, or
    naming a feature this module does not know (braces, barry_as_FLUFL, a newer Python's)."""
    at_start = True
    for i, s in enumerate(body):
        if type(s) is ast.ImportFrom and s.module == "__future__" and s.level == 0:
            if not at_start:
                return True
            for alias in s.names:
                if alias.name not in _FUTURE_FEATURES:
                    return True
        elif i == 0 and type(s) is ast.Expr and type(s.value) is ast.Constant and type(s.value.value) is str:
            continue
        else:
            at_start = False
    return False


def _starred_in_target(target) -> bool:
    """Is this assignment target one CPython's compiler rejects (a starred target alone, two stars in one
    sequence, 256 or more names before the star)? A star inside a list or tuple target is fine otherwise."""
    t = type(target)
    if t is not ast.Tuple and t is not ast.List:
        return t is ast.Starred
    stack = [target]
    while stack:
        starred = False
        for i, e in enumerate(stack.pop().elts):
            te = type(e)
            if te is ast.Starred:
                if starred or i >= 255:
                    return True
                starred = True
                e = e.value
                te = type(e)
                if te is ast.Starred:
                    return True
            if te is ast.Tuple or te is ast.List:
                stack.append(e)
    return False


def _parameter_names(a: ast.arguments) -> list[str]:
    names = [p.arg for p in a.args]
    if a.posonlyargs:
        names.extend(p.arg for p in a.posonlyargs)
    if a.kwonlyargs:
        names.extend(p.arg for p in a.kwonlyargs)
    if a.vararg is not None:
        names.append(a.vararg.arg)
    if a.kwarg is not None:
        names.append(a.kwarg.arg)
    return names


def _duplicate_parameters(a: ast.arguments) -> bool:
    if not a.posonlyargs and not a.kwonlyargs and a.vararg is None and a.kwarg is None and len(a.args) < 2:
        return False
    names = _parameter_names(a)
    return len(set(names)) != len(names)


def _may_share_a_call(text: str, first: int, second: int) -> bool:
    """Can the `=` at ``first`` and the one at ``second`` (later) be keywords of one call? Not when the text
    between closes a bracket it did not open (the first call ended); anything with a quote or a comment
    between (a bracket in a string) may."""
    between = text[first + 1 : second]
    if ")" not in between and "]" not in between and "}" not in between:
        return True
    if "'" in between or '"' in between or "#" in between:
        return True
    depth = 0
    for c in _BRACKETS.findall(between):
        if c in "([{":
            depth += 1
        else:
            depth -= 1
            if depth < 0:
                return False
    return True


_BRACKETS = re.compile(r"[()\[\]{}]")


def _unit_may_fail(node, scope: int, header: bool) -> bool:
    """The expression-level errors inside one statement (a compound statement's header only)."""
    if header:
        roots = []
        for field in node._fields:
            if field not in _STATEMENT_LISTS:
                value = getattr(node, field)
                if isinstance(value, list):
                    roots.extend(v for v in value if isinstance(v, ast.AST))
                elif isinstance(value, ast.AST):
                    roots.append(value)
    else:
        roots = [node]
    # a def's or class's header holds annotations (and is evaluated in the enclosing scope)
    annotation = type(node) is ast.AnnAssign or (header and type(node) in (ast.FunctionDef, ast.ClassDef))
    from rules.walks import nodes  # (here: parsing a file that needs no check loads no rule)

    comprehension = assigns_or_yields = False
    for root in roots:
        for n in nodes(root):  # (ast.walk's nodes but the context and operator singletons, listed without a generator)
            t = type(n)
            if t is ast.Call:
                if len(n.keywords) > 1:
                    names = [k.arg for k in n.keywords if k.arg is not None]
                    if len(set(names)) != len(names):
                        return True
            elif t is ast.Lambda:
                if _duplicate_parameters(n.args):
                    return True
            elif t in _COMPREHENSIONS:
                comprehension = True
                for generator in n.generators:
                    if generator.is_async or _starred_in_target(generator.target):
                        return True
            elif t is ast.Yield or t is ast.YieldFrom:
                if scope != _FUNC or annotation or type(n.value) is ast.Starred:
                    return True
                assigns_or_yields = True
            elif t is ast.NamedExpr:
                if annotation:
                    return True
                assigns_or_yields = True
            elif t is ast.Await:
                return True
    return comprehension and assigns_or_yields
