"""Compile sites that real code puts between the compile call and the code it compiles.

- factories: ``torch.compile(GPT.from_name("x"))``, ``model = build_model(cfg)``: the classes a function or
  classmethod returns (``return cls(...)``, ``return Net(...)``, ``m = Net(...); return m``);
- wrappers: ``def setup(model): return torch.compile(model)`` compiles whatever its callers pass, so each call
  ``setup(GPT(cfg))`` (or of a name bound to an instance) is a compile site, also through wrappers of wrappers;
- the library default's test: which classes are ``nn.Module`` subclasses.

Each works on the project index (duck-typed: ``modules``, ``resolve``, ``tree_of``) from the facts the
summaries took from the syntax tree; only a wrapper's callers are parsed again, when there is a wrapper.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

_NOT_MODULE_ROOTS = frozenset({"abc", "typing", "typing_extensions", "enum", "dataclasses", "collections",
                               "object", "Exception", "ABC", "Protocol", "NamedTuple", "Generic"})
_WRAPPER_DEPTH = 3  # a wrapper of a wrapper of a wrapper


def _absolute(index, module: str, ref: str) -> str:
    """``ref`` as an absolute dotted name (imports applied), whether or not it is in the project."""
    imports = index.modules[module]["imports"]
    head, _, tail = ref.partition(".")
    if head in imports:
        return imports[head] + ("." + tail if tail else "")
    return ref


# Bases from other libraries that are nn.Modules by name (`LightningModule`, `BaseModule`, `PreTrainedModel`)
_MODULE_SUFFIXES = ("Module", "PreTrainedModel")
# Calls in a class's methods that only an nn.Module makes.
_MODULE_CALLS = frozenset({"s:register_buffer", "s:register_parameter", "s:add_module", "s:register_module",
                           "f:nn.Parameter", "f:torch.nn.Parameter", "f:Parameter", "f:nn.parameter.Parameter"})


def is_module_class(index, module: str, cls: str, depth: int = 0) -> bool:
    """Does ``cls`` derive from ``torch.nn.Module``? Bases in the project are followed; a base from torch
    answers by being under ``torch.nn``; one from another library is a module only where something says
    so: its name (``LightningModule``, ``PreTrainedModel``) or the class itself (it holds ``torch.nn``
    layers, registers buffers or parameters). An attention backend's ``AttentionImpl`` with a ``forward``
    is no module."""
    memo = getattr(index, "_memo", None)  # the index's answers to pure questions (None: a duck-typed index)
    if memo is None:
        return _is_module_class(index, module, cls, depth)
    key = ("module class", module, cls, depth)
    got = memo.get(key)
    if got is None:
        got = memo[key] = _is_module_class(index, module, cls, depth)
    return got


def _is_module_class(index, module: str, cls: str, depth: int) -> bool:
    info = index.modules.get(module, {}).get("classes", {}).get(cls.rsplit(".", 1)[-1])
    if info is None or depth > 8:
        return False
    unknown = False
    for base in info[0]:
        where = index.resolve(module, base)
        if where is not None and where[1].rsplit(".", 1)[-1] in index.modules[where[0]]["classes"]:
            if is_module_class(index, where[0], where[1], depth + 1):
                return True
            continue
        origin = _absolute(index, module, base)
        if origin.startswith("torch."):
            if origin.startswith("torch.nn.") and not origin.startswith("torch.nn.functional"):
                return True
            continue  # torch.autograd.Function has a forward too, and is no module
        if origin.split(".")[0] not in _NOT_MODULE_ROOTS and where is None:
            if origin.rsplit(".", 1)[-1].endswith(_MODULE_SUFFIXES):
                return True
            unknown = True
    return unknown and _acts_as_module(index, module, cls)


def _acts_as_module(index, module: str, cls: str) -> bool:
    """Does the class's own code say it is an nn.Module: a ``torch.nn`` layer held in ``self.<attr>``, a
    registered buffer or parameter?"""
    s = index.modules[module]
    info = s["classes"].get(cls.rsplit(".", 1)[-1])
    for refs in info[1].values():
        for ref in refs:
            if _absolute(index, module, ref).startswith("torch.nn."):
                return True
    prefix = cls + "."
    for qual, rec in s["functions"].items():
        if qual.startswith(prefix) and "." not in qual[len(prefix):] and len(rec) > 2:
            if any(c in _MODULE_CALLS for c in rec[2]):
                return True
    return False


# --- data pipelines --------------------------------------------------------------------------------
# Calls that chain data transforms (torchvision, albumentations, kornia, monai): what they hold runs in a loader.
_PIPELINES = frozenset({"Compose", "RandomApply", "RandomChoice", "RandomOrder", "OneOf", "SomeOf",
                        "AugmentationSequential", "ImageSequential", "VideoSequential"})
_PIPELINE_TEXT = re.compile("|".join(sorted(_PIPELINES)))
# Folders and files where data-loader code lives.
_DATA_PARTS = frozenset({"transforms", "transform", "augmentation", "augmentations", "augment", "augmenters",
                         "data", "datasets", "dataset", "dataloader", "dataloaders", "preprocessing", "preprocess"})
_TRANSFORM_NAMES = ("Transform", "Transforms")
# Folders, files and class names that are augmentation by themselves (a model is never named so).
_AUGMENT_PARTS = ("augment",)
_AUGMENT_NAMES = ("Augmentation", "Augment", "Augmenter")


def composed_classes(tree, text: str) -> list[str]:
    """Class references instantiated inside a transform pipeline call (``Compose([RandomFlip(), ...])``)."""
    # (here, not at the top: `import analyzer.cli` imports this module, and importing rules.walks loads every rule,
    # ~40 ms a fully cached run does not pay; test_a_fully_cached_run_does_not_load_the_engine)
    from rules.walks import line_roots, lines_with, nodes

    from ..static.module_index import dotted_name

    if not _PIPELINE_TEXT.search(text):
        return []  # (one pass of the text: most files name no pipeline, and nine `in` tests took twice as long)
    named = [name for name in _PIPELINES if name in text]
    # only the statements on the lines that name a pipeline (a call's name is on one of them; the answer is a set,
    # so the order the calls are met in is no fact), or the whole file where the text may spell a name otherwise
    found = [lines_with(text, name) for name in named]
    roots = [tree] if None in found else line_roots(tree, sorted({line for lines in found for line in lines}))
    out = set()
    for node in (n for root in roots for n in nodes(root)):
        if isinstance(node, ast.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in _PIPELINES:
            for inner in ast.walk(node):
                if inner is not node and isinstance(inner, ast.Call):
                    name = dotted_name(inner.func)
                    if name and name.rsplit(".", 1)[-1][:1].isupper():
                        out.add(name)
    return sorted(out)


def data_pipeline(index, module: str, cls: str, composed) -> str:
    """Why a module class is data-loader code rather than a model (the library default leaves it out), or "".
    Evidence: the project puts it in a ``Compose([...])``; it lives in an augmentation folder or file or is
    named as one (``augment/``, ``Augmenter``); its forward runs ``backward`` (a training step, a
    gradient-caching loss); or it lives in a data folder or file (``transforms/``, ``data/``) or is named as a
    transform (``RandomFlipTransform``) and its forward draws Python's ``random`` (or numpy's: a model draws
    from torch, in the graph)."""
    if (module, cls) in composed:
        return "in a Compose([...])"
    parts = set(module.lower().split("."))
    if any(p.startswith(_AUGMENT_PARTS) for p in parts) or cls.endswith(_AUGMENT_NAMES):
        return "an augmentation"  # speechbrain's augment/, albumentations' augmentations/, an `Augmenter`
    rec = index.modules[module]["functions"].get(f"{cls}.forward")
    calls = rec[2] if rec is not None and len(rec) > 2 else []
    if _runs_backward(index, (module, f"{cls}.forward")):
        return "runs backward in its forward"  # a training step, an engine, a gradient-caching loss: not a model
    in_data = bool(parts & _DATA_PARTS) or any(p.endswith(("transforms", "augmentation", "augmentations"))
                                               for p in parts)
    if not in_data and not (cls.endswith(_TRANSFORM_NAMES) or cls.startswith(("Random", "Rand"))):
        return ""  # (neither a data module nor named as a transform: what it draws says nothing)
    imports = index.modules[module]["imports"]
    draws_python_random = any(
        c.startswith("f:") and c[2:].split(".")[0] in imports
        and _absolute(index, module, c[2:]).startswith(("random.", "numpy.random."))
        for c in calls)
    if not draws_python_random:
        return ""
    if in_data:
        return "draws Python's random in a data module"
    return "draws Python's random, named as a transform"


# What only a training step calls: backward (on a name, ``t.backward()``; on a value of a stated class,
# ``loss: Tensor`` -> ``t:torch.Tensor:backward``; ``torch.autograd.backward``) and clearing gradients.
_TRAINING_CALLS = ("backward", "zero_grad")
# The attribute a training engine keeps its torch.optim optimizer in (accelerate's MegatronEngine.forward runs
# the step and logs self.optimizer.get_loss_scale()): a model's forward never reads an optimizer.
_OPTIMIZER_ATTRS = frozenset({"optimizer", "optimizers", "optim"})


def trains(call: str) -> bool:
    """Is this recorded call (calls.py's spelling) a backward pass or an optimizer's zero_grad?"""
    kind, _, name = call.partition(":")
    if kind in ("s", "f", "p") and "." not in name:
        return False  # self.backward(...), backward(...): a method or function of the project's, not autograd
    return name.replace(":", ".").rsplit(".", 1)[-1] in _TRAINING_CALLS


def _trains_itself(rec) -> bool:
    """Does this function itself call backward or zero_grad, or read the optimizer it holds?"""
    calls = rec[2]
    # (a call that trains ends in one of the two names: a search of the joined text rules most functions out)
    if calls:
        joined = "\n".join(calls)  # (joined once, not once per name)
        if any(w in joined for w in _TRAINING_CALLS) and any(map(trains, calls)):
            return True
    return bool(_OPTIMIZER_ATTRS.intersection(rec[3] if len(rec) > 3 else ()))


def _training_step(index, where):
    """What the backward walk asks of a function (once per build, see _runs_backward): None for an
    autograd.Function's ``backward`` (a kernel's recomputation: no training step, and not followed), else (does it
    train itself, the names it calls on ``self`` that some class has a method of)."""
    if where[1].endswith(".backward"):
        return None
    rec = index.modules[where[0]]["functions"].get(where[1])
    if rec is None:
        return False, []
    names = index._method_names  # (a self.<name>() call of no class's method name is of a held submodule)
    return _trains_itself(rec), [c[2:] for c in rec[2] if c.startswith("s:") and "." not in c and c[2:] in names]


def _runs_backward(index, forward, depth: int = 3) -> bool:
    """Does ``forward``, or what it calls (``depth`` calls deep), call ``.backward()`` or ``zero_grad()``, or read
    the optimizer it holds? Sentence-transformers' cached losses reach ``loss.backward()`` through
    ``self.forward_cached`` -> ``self.calculate_loss``. A ``self.name()`` call anywhere on the way is the method of
    ``forward``'s class (the concrete class's override of a base's step).

    Asked of every module class's forward under the library default: what each function says (trains, calls on
    self) is taken once per build (``_training_step``), as what it reaches is (``_reached_once``); the walk per
    forward is then set lookups."""
    module, owner = forward[0], forward[1].rsplit(".", 1)[0]
    steps = index._memo.setdefault("training steps", {})  # function -> _training_step's answer
    seen = {forward}
    frontier = [forward]
    for level in range(depth + 1):
        nxt = []
        for where in frontier:
            step = steps.get(where, steps)
            if step is steps:
                step = steps[where] = _training_step(index, where)
            if step is None:
                continue  # an autograd.Function's backward (a kernel's recomputation) is no training step
            if step[0]:
                return True
            if level == depth:
                continue  # (what it reaches is past the depth asked)
            for got in index._reached_once(*where):
                if got not in seen:
                    seen.add(got)
                    nxt.append(got)
            for name in step[1]:  # self.calculate_loss() in a base class: the concrete class's override
                got = index._method(module, owner, name)
                if got and got not in seen:
                    seen.add(got)
                    nxt.append(got)
        frontier = nxt
    return False


def returned_classes(index, module: str, qual: str, depth: int = 0, position: int | None = None) -> list[tuple[str, str]]:
    """(module, class) of what a factory function or classmethod returns (its summary's ``returns``), and
    (module, "factory.inner") for a nested function it returns (``def make_op(): def op(x): ...; return op``);
    with ``position``, only the nested function at that place of a returned tuple (``step, state = make()``)."""
    if depth > 3:
        return []
    rec = index.modules[module]["functions"].get(qual)
    if rec is None or len(rec) < 5:
        return []
    out = []
    owner = qual.rsplit(".", 1)[0] if "." in qual else None
    for ref in rec[4]:
        if ref.startswith("def:"):
            name, _, at = ref[4:].partition("@")
            if (position is None and not at) or (at and position == int(at)):
                out.append((module, f"{qual}.{name}"))
            continue
        if position is not None:
            continue  # what a class or another factory returns sits at no known place of the tuple
        if ref in ("cls", "self.__class__") and owner:
            ref = owner
        where = index.resolve(module, ref)
        if where is None:
            continue
        s = index.modules[where[0]]
        if where[1].rsplit(".", 1)[-1] in s["classes"]:
            out.append(where)
        elif where[1] in s["functions"] and where != (module, qual):
            out.extend(returned_classes(index, where[0], where[1], depth + 1))
    return out


# --- wrappers --------------------------------------------------------------------------------------
def _function_node(index, module: str, qual: str):
    """The FunctionDef of ``qual`` in its file's tree (parsed again on demand), or None."""
    s = index.modules[module]
    rec = s["functions"].get(qual)
    tree = index.tree_of(s["path"]) if rec else None
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == rec[0] and node.name == qual.rsplit(".", 1)[-1]:
            return node
    return None


def _params(index, module: str, qual: str) -> list[str]:
    """Parameter names of a function (self/cls left out)."""
    fn = _function_node(index, module, qual)
    if fn is None:
        return []
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if "." in qual and names and names[0] in ("self", "cls"):
        names = names[1:]
    return names


def _annotated_class(index, module: str, qual: str, param: str) -> str | None:
    """The project class a parameter's annotation names (``model: Llama3Model``), else None (none, or torch's
    own: ``nn.Module`` says nothing of which module)."""
    from .calls import annotation_classes

    fn = _function_node(index, module, qual)
    if fn is None:
        return None
    args = fn.args
    ann = next((a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg == param), None)
    for c in annotation_classes(ann) if ann is not None else ():
        where = index.resolve(module, c)
        if where is not None and index._class_info(*where) is not None:
            return c
    return None


def _enclosing(index, module: str, line: int) -> str | None:
    best, best_start = None, -1
    for qual, span in index.modules[module]["functions"].items():
        if span[0] < line <= span[1] and span[0] > best_start:
            best, best_start = qual, span[0]
    return best


def _callers(index, wmod: str, wqual: str):
    """(module, test of a call's callee) for every module that can call the wrapper: the callee's dotted
    name is a local alias of it, ``module_alias.name``, or (a method) any ``obj.name``."""
    name = wqual.rsplit(".", 1)[-1]
    if name == "__init__":  # `Detector(net)` calls Detector.__init__(self, net): the class's callers
        wqual = wqual.rsplit(".", 1)[0]
        name = wqual.rsplit(".", 1)[-1]
    for mod, s in sorted(index.modules.items()):
        if "." in wqual:
            owner = wqual.rsplit(".", 1)[0]
            if mod == wmod or any(index.resolve(mod, local) == (wmod, owner) for local in s["imports"]):
                yield mod, (lambda d, n=name: d is not None and d.rsplit(".", 1)[-1] == n and "." in d)
            continue
        names = {name} if mod == wmod else {local for local in s["imports"] if index.resolve(mod, local) == (wmod, wqual)}
        names |= {f"{local}.{name}" for local, origin in s["imports"].items() if origin == wmod}
        if names:
            yield mod, names.__contains__


def _call_argument(call: ast.Call, position: int, name: str):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    positional = []
    for a in call.args:
        if isinstance(a, ast.Starred):
            break  # *args: positions past it are unknown
        positional.append(a)
    return positional[position] if 0 <= position < len(positional) else None


def through_wrappers(index, wrappers):
    """((module, qualname), Compiled, the caller's path) for what each wrapper's callers pass it: ``setup(GPT(cfg))`` compiles
    GPT.forward; a caller that passes its own parameter on is a wrapper too. Calls are found in the callers'
    syntax trees (a comment or a string that names the wrapper is no call)."""
    if not wrappers:
        return []
    from ..static.module_index import dotted_name

    found = []
    seen = set()
    frontier = list(wrappers)
    for _ in range(_WRAPPER_DEPTH):
        nxt = []
        for wmod, wqual, position, param, how, attrs in frontier:
            if (wmod, wqual, position, attrs) in seen:
                continue
            seen.add((wmod, wqual, position, attrs))
            short = wqual.rsplit(".", 2)[-2] if wqual.endswith(".__init__") else wqual.rsplit(".", 1)[-1]
            for mod, is_callee in _callers(index, wmod, wqual):
                s = index.modules[mod]
                if not any(short in line for line in index.lines_of(s["path"])):
                    continue  # (a text test first: most modules never name it, and need no parse)
                tree = index.tree_of(s["path"])
                if tree is None:
                    continue
                calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and is_callee(dotted_name(n.func))]
                for call in sorted(calls, key=lambda n: (n.lineno, n.col_offset)):
                    line = call.lineno
                    if mod == wmod and _enclosing(index, mod, line) == wqual:
                        continue  # its own body
                    arg = _call_argument(call, position, param)
                    if arg is None:
                        continue
                    text = ast.unparse(arg)
                    callee = dotted_name(call.func)
                    method = "." in wqual and not wqual.endswith(".__init__")
                    label = f"{callee.rsplit('.', 1)[-1] if method else callee}({text if len(text) < 40 else '...'})"
                    inner = how.how.split(" at ")[0].replace("compiled by ", "")
                    where_how = replace(how, how=f"compiled by `{label}` at {index.rel(s['path'])}:{line} (through {inner})")
                    for target in _argument_targets(index, mod, arg, line, tree):
                        if target[0] == "wrapper":
                            nxt.append((mod, target[1], target[2], target[3], how, attrs))
                            continue
                        if attrs:  # the wrapper compiles `param.layers`'s items: follow them from what is passed
                            target = _with_attributes(target, attrs)
                            if target is None:
                                continue
                        found.extend((where, where_how, s["path"]) for where, _ in index.compiled_by(mod, *target))
            if wqual.endswith(".__init__"):
                nxt.extend((*sub, how, attrs) for sub in _subclass_constructors(index, wmod, wqual[: -len(".__init__")],
                                                                               position, param))
        frontier = nxt
    return found


def _with_attributes(target: tuple, attrs: tuple) -> tuple | None:
    """The target for ``<passed>.a.b`` given the target of what is passed."""
    if target[0] == "chain":
        return ("chain", target[1], target[2], list(target[3]) + list(attrs))
    if target[0] in ("instance", "ref"):  # an instance, a factory's product, or a class named by an annotation
        return ("chain", "instance", target[1], list(attrs))
    return None


def _subclass_constructors(index, module: str, cls: str, position: int, param: str) -> list[tuple]:
    """A constructor that compiles its argument is one of its subclasses' too: (module, "Sub.__init__", position,
    parameter) for a subclass that inherits it, or whose own ``__init__`` passes a parameter of its own on through
    ``super().__init__(model)`` (or ``Base.__init__(self, model)``)."""
    from ..static.module_index import dotted_name

    out = []
    for mod, s in sorted(index.modules.items()):
        for sub, info in sorted(s["classes"].items()):
            if not any(index.resolve(mod, base) == (module, cls) for base in info[0]):
                continue
            if f"{sub}.__init__" not in s["functions"]:
                out.append((mod, f"{sub}.__init__", position, param))  # inherited: Sub(net) is Base.__init__(net)
                continue
            fn = _function_node(index, mod, f"{sub}.__init__")
            params = _params(index, mod, f"{sub}.__init__")
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)) if fn is not None else ():
                callee = call.func
                if not (isinstance(callee, ast.Attribute) and callee.attr == "__init__"):
                    continue
                owner = dotted_name(callee.value)
                explicit = owner is not None and index.resolve(mod, owner) == (module, cls)
                through_super = isinstance(callee.value, ast.Call) and dotted_name(callee.value.func) == "super"
                if not (explicit or through_super):
                    continue
                shifted = ast.Call(func=call.func, args=call.args[1:] if explicit else call.args, keywords=call.keywords)
                arg = _call_argument(shifted, position, param)
                if isinstance(arg, ast.Name) and arg.id in params:
                    out.append((mod, f"{sub}.__init__", params.index(arg.id), arg.id))
    return out


def _argument_targets(index, module: str, expr, line: int, tree=None, depth: int = 0) -> list[tuple]:
    """What one argument passes: ("instance", ref) for ``Net(...)``/a name bound to one in the call's own
    scope (never a same-named variable of another function), ("ref", f) for a function, ("wrapper", ...) for
    a parameter of the calling function."""
    from ..static.module_index import dotted_name, strip_self_returning

    expr = strip_self_returning(expr)
    if isinstance(expr, ast.Call):
        name = dotted_name(expr.func)
        return [("instance", name)] if name else []
    if isinstance(expr, ast.Attribute) and expr.attr == "forward":
        return _argument_targets(index, module, expr.value, line, tree, depth)
    if isinstance(expr, ast.Name):
        around = _enclosing(index, module, line)
        if around is not None:
            params = _params(index, module, around)
            if expr.id in params:
                cls = _annotated_class(index, module, around, expr.id)
                # def parallelize(model: Llama3Model): apply_compile(model): the annotation says what, and so do
                # parallelize's own callers (a subclass, maybe)
                annotated = [("chain", "class", cls, [])] if cls else []
                return annotated + [("wrapper", around, params.index(expr.id), expr.id)]
        if tree is not None and depth < 3:
            scope = _function_node(index, module, around) if around is not None else tree
            for value in reversed(_bound_before(scope or tree, expr.id, line)):
                got = _argument_targets(index, module, value, line, tree, depth + 1)
                if got:
                    return got
            if scope is not tree and scope is not None:
                for value in reversed(_bound_before(tree, expr.id, 1 << 30)):  # a module global
                    got = _argument_targets(index, module, value, line, tree, depth + 1)
                    if got:
                        return got
            return [("ref", expr.id)]
        callees = index.modules[module].get("instances", {}).get(expr.id)
        if callees:
            return [("instance", c) for c in callees]
        return [("ref", expr.id)]
    return []


def _bound_before(scope, name: str, line: int) -> list:
    """Values ``name = ...`` binds in ``scope``'s own statements before ``line``, in order."""
    from .calls import scope_statements

    out = []
    for s in scope_statements(scope):
        if s.lineno >= line:
            continue
        if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets):
            out.append(s.value)
        elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == name and s.value:
            out.append(s.value)
    return sorted(out, key=lambda v: (v.lineno, v.col_offset))
