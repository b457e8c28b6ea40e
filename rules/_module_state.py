"""What a class keeps as Python state on ``self``, and who changes it: the facts TL205 reads.

A class's Python state is an attribute with evidence of a Python value: a number, bool or string constant
assigned to it (in any method or the class body), an augmented assignment by a number, an int/float/bool/str
annotation. Tensors (buffers, parameters, ``torch.*`` results) are not Python state, and an attribute with no
evidence either way (``self.eps = eps``) is left alone: that is what keeps configuration quiet.

Who changes it between calls: for a number (a counter, a position, an epoch: values without bound), a method
that is not part of construction (``__init__`` and the methods only it calls) and makes the new value from
the old one (``self.pos += n``), or code outside the class that stores the attribute on some object
(``model.epoch = epoch``, ``setattr(m, "epoch", e)``). A setter (``def set_chunks(self, n): self.chunks = n``)
and a bool or string switch (a compiled graph per value, two at most for a bool) count only when code outside
every class (a script, the training loop) calls or stores them: a setter only the library's own classes call
(``set_grad_checkpointing``, a recipe's setup) is configuration chosen before use.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .statements import NO_BLOCKS
from .walks import preorder, walk
from .dotted import chain_root

# Methods that build the object: what they set is configuration, fixed once the object exists.
CONSTRUCTION = frozenset({"__init__", "__post_init__", "__new__", "__setstate__", "__init_subclass__"})
# Attributes the framework changes between calls on purpose: train()/eval() toggle `training`.
EXPECTED = frozenset({"training"})
_SCALAR_ANNOTATIONS = frozenset({"int", "float", "bool", "str"})
_TENSOR_ANNOTATIONS = frozenset({"Tensor", "Parameter", "Buffer"})
_TENSOR_FACTORIES = frozenset({"Parameter", "Buffer", "tensor", "zeros", "ones", "empty", "full", "randn", "rand",
                               "arange", "zeros_like", "ones_like", "empty_like", "full_like", "as_tensor", "cat",
                               "stack"})
_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class Store:
    method: str  # the method that stores it ("" for the class body)
    node: ast.AST  # the Attribute target (or the setattr call)
    value: ast.AST | None
    aug: bool
    restore: bool = False  # `self.x = saved` where `saved = self.x` earlier in the method: back to the old value


@dataclass
class ClassState:
    node: ast.ClassDef
    methods: dict[str, ast.AST] = field(default_factory=dict)
    python: set[str] = field(default_factory=set)  # attributes with evidence of a Python value
    numbers: set[str] = field(default_factory=set)  # of those, the ints and floats (unbounded values)
    tensors: set[str] = field(default_factory=set)  # buffers, parameters, tensors
    buffers: set[str] = field(default_factory=set)  # registered with register_buffer
    stores: dict[str, list[Store]] = field(default_factory=dict)  # attribute -> stores through `self`
    held: dict[str, str] = field(default_factory=dict)  # attribute -> class name of `self.attr = Cls(...)`
    self_calls: dict[str, set[str]] = field(default_factory=dict)  # method -> methods it calls as self.m()
    construction: set[str] = field(default_factory=set)  # __init__ and the methods only construction calls
    saved: dict[str, dict[str, str]] = field(default_factory=dict)  # method -> {`tmp` of `tmp = self.x`: "x"}
    slots: set[str] = field(default_factory=set)  # set to None at construction: filled later (`self.lora_layer = None`)

    def writers(self, attr: str) -> list[Store]:
        return self.stores.get(attr, [])


def self_name(func) -> str | None:
    """The first parameter of a method (``self``), None for a static method or no parameter."""
    if any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list):
        return None
    args = func.args.posonlyargs + func.args.args
    return args[0].arg if args else None


def is_self_attr(node, me: str | None) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == me


def python_value(value) -> bool:
    """Evidence that ``value`` is a Python number, bool or string (not None: a lazily filled slot is anything)."""
    if isinstance(value, ast.Constant):
        return value.value is not None and not isinstance(value.value, bytes)
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return True
    if isinstance(value, ast.UnaryOp) and isinstance(value.operand, ast.Constant):
        return python_value(value.operand)
    return False


def tensor_value(value) -> bool:
    """A tensor factory (``torch.zeros(...)``, ``nn.Parameter(...)``), or an expression with a ``torch.*`` / ``F.*``
    call in it (``1 - torch.mean(skip)``): a tensor, not a Python number."""
    if isinstance(value, ast.Call):
        f = value.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name in _TENSOR_FACTORIES:
            return True
    for node in preorder(value, _CALLS):
        if isinstance(node.func, ast.Attribute):
            root = chain_root(node.func)
            if isinstance(root, ast.Name) and root.id in ("torch", "F"):
                return True
    return False


def progressive(store: "Store", attr: str) -> bool:
    """``self.pos += n``, ``self.step = self.step + 1``: a new value from the old one on every call (a counter,
    a position), unlike a setter that stores what it is given."""
    if store.aug:
        return True
    return store.value is not None and any(
        isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.value, ast.Name) for n in ast.walk(store.value))


def _annotation_name(ann) -> str:
    if isinstance(ann, ast.Attribute):
        return ann.attr
    if isinstance(ann, ast.Name):
        return ann.id
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return ann.value.rsplit(".", 1)[-1]
    return ""


_CALLS = frozenset({ast.Call})
_OUTSIDE_KINDS = frozenset({ast.Assign, ast.AugAssign, ast.Call})


def fast_walk(node):
    """``ast.walk`` without its generic field iteration, depth first, the last child first (``walks.preorder`` lists
    the same nodes in this order, less the singletons: what TL205 walks with)."""
    stack = [node]
    AST = ast.AST
    while stack:
        n = stack.pop()
        yield n
        for name in n._fields:
            v = getattr(n, name, None)
            if type(v) is list:
                stack.extend(x for x in v if isinstance(x, AST))
            elif isinstance(v, AST):
                stack.append(v)


_STMT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def class_state(cls: ast.ClassDef, classes: dict) -> ClassState:
    state = ClassState(cls)
    for stmt in cls.body:
        if isinstance(stmt, _FUNC):
            state.methods[stmt.name] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):  # class-level defaults: `counter = 0`
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    _note_value(state, t.id, stmt.value, getattr(stmt, "annotation", None))
    for name, func in state.methods.items():
        me = self_name(func)
        calls = state.self_calls.setdefault(name, set())
        if me is None:
            continue
        saved = state.saved.setdefault(name, {})
        stores = []
        # The method's statements (nested blocks, nested functions too) and the calls that are a statement's whole
        # value (`self._setup()`, `x = self.helper(x)`, `return self.step(x)`): what a class's state needs, without
        # visiting every expression of every method (the compiled ones are walked in full).
        stack = func.body[::-1]
        while stack:
            node = stack.pop()
            t = type(node)
            if t is ast.Assign or t is ast.AugAssign or t is ast.AnnAssign:
                targets = node.targets if t is ast.Assign else [node.target]
                if t is ast.Assign and len(targets) == 1 and type(targets[0]) is ast.Name and is_self_attr(node.value, me):
                    saved[targets[0].id] = node.value.attr  # `tmp = self.x`: put back later, no change
                for target in targets:
                    if type(target) is ast.Attribute:  # (a plain `self.x = v`: its only leaf)
                        if is_self_attr(target, me):
                            stores.append((node, target, len(targets) == 1))
                        continue
                    for leaf in _leaves(target):
                        if is_self_attr(leaf, me):
                            stores.append((node, leaf, leaf is target and len(targets) == 1))
            if t not in NO_BLOCKS:  # (most of a method's statements hold no statement list)
                for field_name in _STMT_LISTS:
                    block = getattr(node, field_name, None)
                    if type(block) is list:
                        stack.extend(block[::-1])
            node = getattr(node, "value", None)
            if type(node) is ast.Call and type(node.func) is ast.Attribute:
                f = node.func
                if type(f.value) is ast.Name and f.value.id == me:
                    if f.attr in ("register_buffer", "register_parameter") and node.args:
                        first = node.args[0]
                        if isinstance(first, ast.Constant) and isinstance(first.value, str):
                            state.tensors.add(first.value)
                            if f.attr == "register_buffer":
                                state.buffers.add(first.value)
                    else:
                        calls.add(f.attr)
        for node, leaf, single in stores:
            attr = leaf.attr
            aug = type(node) is ast.AugAssign
            restore = isinstance(node.value, ast.Name) and saved.get(node.value.id) == attr
            state.stores.setdefault(attr, []).append(Store(name, leaf, node.value, aug, restore))
            value = node.value if single else None
            if aug and isinstance(node.value, ast.Constant) and isinstance(node.value.value, (int, float)):
                state.python.add(attr)
                state.numbers.add(attr)
            _note_value(state, attr, value, getattr(node, "annotation", None))
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in classes:
                state.held[attr] = value.func.id
    state.python -= state.tensors
    state.numbers &= state.python
    state.construction = _construction(state)
    state.slots = {attr for attr, stores in state.stores.items() if attr not in state.python and attr not in state.tensors
                   and any(st.method in state.construction and isinstance(st.value, ast.Constant) and st.value.value is None
                           for st in stores)}
    return state


def saved_names(func, me: str) -> dict[str, str]:
    """Local names bound to an attribute of ``self`` (``tmp = self.x``): name -> attribute."""
    out = {}
    for node in walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if is_self_attr(node.value, me):
                out[node.targets[0].id] = node.value.attr
    return out


def _note_value(state: ClassState, attr: str, value, annotation) -> None:
    ann = _annotation_name(annotation) if annotation is not None else ""
    if ann in _TENSOR_ANNOTATIONS or (value is not None and tensor_value(value)):
        state.tensors.add(attr)
    elif ann in _SCALAR_ANNOTATIONS or (value is not None and python_value(value)):
        state.python.add(attr)
        if ann in ("int", "float") or _number(value):
            state.numbers.add(attr)


def _number(value) -> bool:
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        value = value.operand
    return isinstance(value, ast.Constant) and type(value.value) in (int, float)


def _leaves(target):
    if isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            yield from _leaves(e)
    elif isinstance(target, ast.Starred):
        yield from _leaves(target.value)
    else:
        yield target


def _construction(state: ClassState) -> set[str]:
    """``__init__`` and the methods it calls (transitively) that no other method calls."""
    roots = [m for m in state.methods if m in CONSTRUCTION]
    reached = set(roots)
    frontier = list(roots)
    while frontier:
        m = frontier.pop()
        for callee in state.self_calls.get(m, ()):
            if callee in state.methods and callee not in reached:
                reached.add(callee)
                frontier.append(callee)
    called_elsewhere = set()
    for m, callees in state.self_calls.items():
        if m not in reached:
            called_elsewhere |= callees
    return {m for m in reached if m in CONSTRUCTION or m not in called_elsewhere}


@dataclass
class Outside:
    """What code outside a class's own methods does to objects, by attribute or method name, with where it runs:
    "free" (module-level code or a plain function: a script, the training loop), "class" (a method of some
    class: a parent module's setter) or "construction" (an ``__init__``: configuration)."""

    # attribute -> (node, where, value) of `x.attr = v` (v None for an augmented assignment), setattr(x, "attr", v)
    stores: dict[str, list[tuple[ast.AST, str, ast.AST | None]]] = field(default_factory=dict)
    calls: dict[str, list[tuple[ast.AST, str]]] = field(default_factory=dict)  # x.m(...), x not `self`


def outside_code(tree: ast.Module, lines=None) -> Outside:
    """``lines``: only statements holding one of these lines are walked (those a text search found)."""
    out = Outside()

    def holds(stmt) -> bool:
        return lines is None or any(stmt.lineno <= n <= (stmt.end_lineno or stmt.lineno) for n in lines)

    work = [(stmt, "free") for stmt in tree.body if holds(stmt)]
    while work:
        stmt, where = work.pop()
        if isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if not holds(item):
                    continue
                if isinstance(item, _FUNC):
                    work.append((item, "construction" if item.name in CONSTRUCTION else "class"))
                else:
                    work.append((item, "class"))
            continue
        for node in preorder(stmt, _OUTSIDE_KINDS):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for leaf in _leaves(t):
                        if isinstance(leaf, ast.Attribute) and not _on_self(leaf):
                            value = node.value if isinstance(node, ast.Assign) and leaf is t else None
                            out.stores.setdefault(leaf.attr, []).append((leaf, where, value))
            elif isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Name) and f.id == "setattr" and len(node.args) >= 2:
                    name = node.args[1]
                    if isinstance(name, ast.Constant) and isinstance(name.value, str):
                        value = node.args[2] if len(node.args) > 2 else None
                        out.stores.setdefault(name.value, []).append((node, where, value))
                elif isinstance(f, ast.Attribute) and not _on_self(f):
                    out.calls.setdefault(f.attr, []).append((node, where))
    return out


def _on_self(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id == "self"
