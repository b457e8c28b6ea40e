"""Functionalization: the prims trace as pure data flow, for executors that fuse and reorder.

Ops with a decomposition are replaced by their prims; every in-place write becomes a new value:
`prims.copy_(a, v)` makes `v` the value of `a`, any other in-place op runs on a fresh `prims.clone`.
Aliases are tracked from the meta tensors (`_base`, and shared storage for view ops that are no autograd
views, `detach`): a write through a view makes a new value of its base (`prims.scatter_view`, replaying the
view's ops on a copy laid out like the traced base), and a later read of a view of a written base replays the
view's ops on the new value. Writes the caller can observe (inputs: arguments, parameters, buffers, captured
tensors) are written back once at the end with `prims.copy_to_out_(value, out=input)`, in the grad mode of
the last write (under no_grad for a tensor that requires grad: such a write was autograd-free in eager).
Returned tensors that share memory in eager share it in the result: views of a written input are taken again
from the input, and returned views of one intermediate (`c`, `e = c.view(-1)` written into) are taken again
from the intermediate's final value (as AOTAutograd regenerates output aliases), in the grad mode each was
made in; so is a returned view of an intermediate written through it (eager's strides and offset, not the layout
the write's value has).

What the trace cannot show is the caller's storage: two inputs may share memory. The execution plan
(executors/plan.py) checks that at run time and runs the eager-order trace instead when they do. Everything
else this pass cannot express exactly raises `NotFunctional` with the reason, and the plan keeps the
eager-order trace for that function (the reason is in its header):
- ops that change a tensor's metadata in place (`t_`, `squeeze_`, `resize_`, an `out=` that eager resizes);
- in-place writes that autograd records (grad enabled and the written tensor or its new value requires grad:
  eager's version checks and in-place gradient formulas decide what backward saves, returns and raises), and
  autograd-free writes into a tensor that autograd may have saved (read by an op it recorded: `a * w` saves
  `a`, whether or not `a` requires grad), and writes into a tensor that requires grad when it is read again
  with grad enabled, or when a returned view of it is one eager marks (made under no_grad, or by an op returning
  several views);
- writes into memory whose elements overlap (an expanded tensor: eager writes each location once per element
  that refers to it), and in-place ops that read the memory they write through another view, or read their
  target other than element by element (`x.masked_scatter_(m, x)`; ATen's pointwise ops are element by
  element);
- writes while an `as_strided` view exists (its elements are not bounded by the meta tensors), autocast
  switches, state stores before later ops and module backward hooks.
Writes under no_grad (optimizer steps, caches, running statistics) and to tensors outside autograd are
functionalized.
"""
from __future__ import annotations

import functools

import torch

from ..torchlang import prims
from ..core import tree as pytree
from ..core.proxies import TensorProxy
from ..core.symbols import BoundSymbol, Tag
from ..torchlang.recording import SET_GRAD_ENABLED
from .cse import _renamed
from ..core.trace import Trace

# In-place ops that change the tensor object itself (shape, strides, autograd role), not only its values.
METADATA_INPLACE = {"Tensor.transpose_", "Tensor.t_", "Tensor.squeeze_", "Tensor.unsqueeze_", "Tensor.detach_",
                    "Tensor.as_strided_", "Tensor.requires_grad_", "Tensor.resize_", "Tensor.set_"}

# In-place ops that store into their target without reading its values: a later store is no read.
STORES = {"Tensor.__setitem__", "Tensor.copy_", "Tensor.fill_", "Tensor.zero_", "Tensor.index_copy_",
          "Tensor.index_fill_", "Tensor.masked_fill_", "Tensor.index_put_", "Tensor.masked_scatter_"}


class NotFunctional(Exception):
    """This trace has an effect functionalization does not model; run it in eager order instead."""


def _print_scatter_view(bsym, trace):
    base, value, shape, stride, chain = bsym.args
    view = _chain_expr(chain, "b", trace)
    return [f"{bsym.output.name} = prims.scatter_view({base.name}, {value.name}, {shape!r}, {stride!r}, "
            f"lambda b: {view})"]


prims.scatter_view.printer = _print_scatter_view


def _chain_expr(chain, root_expr: str, trace: Trace) -> str:
    """Python expression replaying the view ops of `chain` [(bsym, arg position, output index)] on root_expr."""
    expr = root_expr
    for bsym, pos, idx in chain:
        arg = bsym.flat_args()[pos]
        inner = TensorProxy(expr, arg.meta, arg.device, dynamic=arg.dynamic)
        args, kwargs = _replace_flat(bsym, pos, inner)
        if bsym.symbol.printer is not None:  # tensor properties (x.mT): printed as attribute reads
            expr = f"({expr}).{bsym.symbol.name.split('.')[-1]}"
        else:
            expr = trace.call_expr(BoundSymbol(bsym.symbol, args, kwargs, None), bsym.symbol.name)
        if not isinstance(bsym.output, TensorProxy):
            expr = f"{expr}{_index_path(bsym.output, idx)}"
    return expr


def _index_path(output, idx: int) -> str:
    """Subscript reaching the idx-th flat leaf of a (nested) tuple output."""
    path, count = [], [0]

    def walk(x, prefix):
        if isinstance(x, (tuple, list)):
            for i, item in enumerate(x):
                if walk(item, prefix + [i]):
                    return True
            return False
        if count[0] == idx:
            path.extend(prefix)
            return True
        count[0] += 1
        return False

    walk(output, [])
    return "".join(f"[{i}]" for i in path)


def _map_args(bsym, f):
    """(args, kwargs) of `bsym` with each leaf replaced by f(flat position, leaf)."""
    count = [-1]

    def g(x):
        count[0] += 1
        return f(count[0], x)

    args, kwargs = pytree.tree_map(g, (bsym.args, bsym.kwargs))
    return tuple(args), dict(kwargs)


def _replace_flat(bsym, pos: int, new):
    return _map_args(bsym, lambda i, x: new if i == pos else x)


_VIEW_PRIMS = {prims.reshape, prims.permute, prims.broadcast_to, prims.unsqueeze, prims.squeeze, prims.slice_in_dim}

# prims whose every output element is computed from the elements at its own position (after broadcasting)
ELEMENTWISE = {getattr(prims, n) for n in (
    "abs neg exp log log1p tanh erf sqrt rsqrt sin cos reciprocal sigmoid floor ceil sign logical_not add sub mul div "
    "pow remainder maximum minimum eq ne lt le gt ge logical_and logical_or where convert_element_type full clone "
    "broadcast_to copy_").split()}


@functools.lru_cache(maxsize=None)
def pointwise(name: str) -> bool:
    """Whether the torch op printed as `name` ("torch.add", "Tensor.lerp_") is elementwise: its ATen operator
    carries torch's `pointwise` tag (on some overload; `out=` variants share the family's semantics)."""
    base = name.rsplit(".", 1)[-1]
    base = base[:-1] if base.endswith("_") and not base.startswith("_") else base
    try:
        packet = getattr(torch.ops.aten, base)
        return any(torch.Tag.pointwise in getattr(packet, o).tags for o in packet.overloads())
    except Exception:  # noqa: BLE001 - not an ATen operator (Tensor.__setitem__, a Python function): not known
        return False


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage()._cdata == b.untyped_storage()._cdata


def may_overlap(a: torch.Tensor, b: torch.Tensor, limit: int = 1 << 16) -> bool:
    """Whether two views of one storage may share an element (`x[0] = x[1]` does not: it reads what it does not
    write). Compared element by element up to `limit` elements; beyond that, or across dtypes, assume so."""
    if a.dtype != b.dtype or a.numel() + b.numel() > limit:
        return True
    return bool(torch.isin(_offsets(a), _offsets(b)).any())


def _offsets(m: torch.Tensor) -> torch.Tensor:
    """The storage offset of every element of the (meta) tensor `m`, as a flat CPU tensor."""
    at = torch.tensor([m.storage_offset()])
    for size, stride in zip(m.shape, m.stride()):
        at = (at[:, None] + torch.arange(size) * stride).reshape(-1)
    return at


def overlaps_itself(m: torch.Tensor) -> bool:
    """Whether two elements of `m` may share memory (expanded: a stride 0; or strides that interleave). Sizes
    sorted by stride, each stride must step over everything the smaller ones reach."""
    reach = 0
    for size, stride in sorted(((n, st) for n, st in zip(m.shape, m.stride()) if n > 1), key=lambda d: d[1]):
        if stride <= reach:
            return True
        reach += (size - 1) * stride
    return False


def flatten_to_prims(bsyms) -> list[BoundSymbol]:
    out = []
    for b in bsyms:
        if b.subsymbols and b.symbol.printer is None:
            for s in b.subsymbols:
                if s.location is None:
                    s.location = b.location
            out.extend(flatten_to_prims(b.subsymbols))
        else:
            out.append(b)
    return out


def _inplace_target(bsym):
    target = bsym.kwargs.get("out")
    if target is None and bsym.args:
        target = bsym.args[0]
    return target if isinstance(target, TensorProxy) else None


class _Functionalizer:
    def __init__(self, trace: Trace, analysis: bool = False):
        self.trace = trace
        # analysis: walk only, to learn which inputs are written (through which views) and read again;
        # nothing is executed, so writes autograd records and unattributable memory are noted, not refused
        self.analysis = analysis
        self.facts: list[tuple] = []  # ("write" | "read", root name, the user's op, location), eager order
        self.top = None  # the user's op whose prims are being walked
        self.writers: dict[str, set] = {}  # root name -> ids of the user's ops that wrote it
        self._names = 0
        self.out: list[BoundSymbol] = []
        self.external = {a.name for a in trace.args if isinstance(a, TensorProxy)}
        self.meta_owner: dict[int, TensorProxy] = {}
        self.root: dict[str, str] = {}  # proxy name -> name of the tensor whose memory it is (itself for non-views)
        self.parent: dict[str, tuple] = {}  # view name -> (bsym, flat arg position of its parent, output index)
        self.proxy: dict[str, TensorProxy] = {}
        self.value: dict[str, TensorProxy] = {}  # name -> proxy holding its current value
        self.version: dict[str, int] = {}  # root name -> number of writes so far
        self.value_version: dict[str, int] = {}  # view name -> root version its value was taken at
        self.opaque: set[str] = set()  # shares memory in a way the meta tensors do not describe
        self.grad_mode = torch.is_grad_enabled()  # the caller's (guarded by the prologue)
        self.write_mode: dict[str, bool] = {}
        self.written_order: list[str] = []
        self.input_alias: set[str] = set()  # values that are (views of) the caller's tensors
        self.made_in_mode: dict[str, bool] = {}  # name -> grad mode it was made in (a returned view's autograd role)
        self.made_at: dict[str, int] = {}  # view name -> writes into its root before it was made
        # roots that require grad, written under no_grad: eager keeps their autograd identity (a later read with
        # grad enabled differentiates through them); their new value, made under no_grad, has none
        self.off_graph: set[str] = set()
        # roots that do not require grad, written under no_grad with a value that does (`a.copy_(b)`): eager's
        # tensor holds the values without their autograd history, the trace's value proxy has it
        self.history_dropped: set[str] = set()
        # roots read by an op autograd records (it may save them: `a * w` saves `a` for w's gradient, whether or not `a`
        # requires grad)
        self.read_with_grad: set[str] = set()
        for a in trace.args:
            if isinstance(a, TensorProxy):
                self._know(a)

    # ---- aliases ----
    def _know(self, p: TensorProxy, bsym=None, idx=0) -> None:
        if p.name in self.proxy:
            return
        self.proxy[p.name] = p
        self.value[p.name] = p
        self.made_in_mode[p.name] = self.grad_mode
        base = p.meta._base
        flat = bsym.flat_args() if bsym is not None else []
        # a view op's result that is no autograd view (detach) still shares its argument's memory; one that
        # copied (x[mask], advanced indexing) does not
        same_memory = [i for i, a in enumerate(flat) if isinstance(a, TensorProxy) and _same_storage(a.meta, p.meta)]
        view_tag = bsym is not None and bsym.symbol.tags & Tag.RETURNS_VIEW and same_memory
        if bsym is None or (base is None and not view_tag) or \
                (base is not None and not same_memory and not view_tag and len(bsym.tensor_outputs()) == 1 and
                 not any(_same_storage(q.meta, p.meta) for q in self.proxy.values() if q is not p)):
            # (the last: a view of a buffer the op made for itself and no other tensor of the trace shares, as
            # F.linear of a non-contiguous input returns: new memory, ConvNeXt's blocks)
            self.meta_owner.setdefault(id(p.meta), p)
            self.root[p.name] = p.name
            return
        pos = next((i for i, a in enumerate(flat) if isinstance(a, TensorProxy)
                    and base is not None and (a.meta is base or a.meta._base is base)), None)
        if pos is None:
            pos = same_memory[0] if same_memory else \
                next((i for i, a in enumerate(flat) if isinstance(a, TensorProxy)), None)
            if pos is None or base is not None:  # a view of memory we cannot name
                self.meta_owner.setdefault(id(p.meta), p)
                self.root[p.name] = p.name
                self.opaque.add(p.name)
                return
        parent = flat[pos]
        if "as_strided" in bsym.symbol.name:  # may reach memory of the root outside the parent's elements
            if self.version.get(self.root.get(parent.name, parent.name), 0) and not self.analysis:
                # (a written root's value holds only its elements: the rest of a copy laid out like it is unset)
                raise NotFunctional(f"{bsym.symbol.name} of {parent.name}, whose memory was written before")
            self.opaque.add(p.name)
        self.parent[p.name] = (bsym, pos, idx)
        self.root[p.name] = self.root.get(parent.name, parent.name)
        self.made_at[p.name] = self.version.get(self.root[p.name], 0)
        if parent.name in self.opaque:
            self.opaque.add(p.name)
        self.value_version[p.name] = self.version.get(self.root[p.name], 0)

    def chain(self, name: str) -> list:
        links = []
        while name in self.parent:
            bsym, pos, idx = self.parent[name]
            links.append((bsym, pos, idx))
            name = bsym.flat_args()[pos].name
        return links[::-1]

    # ---- reads and writes ----
    def read(self, p: TensorProxy) -> TensorProxy:
        if p.name not in self.proxy:
            self._know(p)
        root = self.root[p.name]
        if root in self.off_graph and self.grad_mode and not self.analysis:
            raise NotFunctional(f"{root} requires grad and was written under no_grad, then is read with grad "
                                "enabled (eager differentiates through the tensor itself)")
        if root in self.history_dropped and self.grad_mode and not self.analysis:
            raise NotFunctional(f"{root} was written under no_grad with a value that requires grad, then is read "
                                "with grad enabled (eager's tensor has the values, not their autograd history)")
        if p.name == root or self.value_version.get(p.name) == self.version.get(root, 0):
            return self.value[p.name]
        return self._replay(p.name, self.read(self.proxy[root]), version=self.version.get(root, 0))

    def _replay(self, name: str, root_value: TensorProxy, version=None, made=None) -> TensorProxy:
        """Emit the view ops from the root to `name` again, on `root_value`; returns the new view. made: views
        of the chain already taken again (name -> value): the replay starts after the last of them."""
        links, cur, start = self.chain(name), root_value, 0
        for i, (bsym, pos, idx) in enumerate(links if made else ()):
            taken = made.get(pytree.tree_leaves(bsym.output)[idx].name)
            if taken is not None:
                cur, start = taken, i + 1
        for bsym, pos, idx in links[start:]:
            args, kwargs = _map_args(bsym, lambda i, a: cur if i == pos else
                                     (self.read(a) if isinstance(a, TensorProxy) else a))
            outs = pytree.tree_map(lambda o: self._fresh(o) if isinstance(o, TensorProxy) else o, bsym.output)
            self._emit_view_like(BoundSymbol(bsym.symbol, tuple(args), dict(kwargs), outs, location=bsym.location))
            cur = pytree.tree_leaves(outs)[idx]
        if version is not None:
            self.value[name] = cur
            self.value_version[name] = version
        return cur

    def _replay_as_made(self, name: str, root_value: TensorProxy, made=None) -> TensorProxy:
        """A returned view taken again at the end, in the grad mode it was made in (its autograd role)."""
        mode, end = self.made_in_mode.get(name, self.grad_mode), self.grad_mode
        root = self.root[name]
        multi = any(not isinstance(b.output, TensorProxy) for b, _, _ in self.chain(name))  # (split, unbind...)
        if (not mode or multi) and self.proxy[root].requires_grad and \
                self.version.get(root, 0) > self.made_at.get(name, 0):
            # eager's autograd marks a view made under no_grad, or by an op returning several views, of a tensor
            # that requires grad, once its memory is written in place: using it with grad raises. A view taken
            # again would not be marked
            raise NotFunctional(f"returned view {name} of a tensor that requires grad, made "
                                f"{'by an op returning several views' if mode else 'under no_grad'}, is written in "
                                "place afterwards")
        if mode != end:
            self._set_grad(mode)
        view = self._replay(name, root_value, made=made)
        if mode != end:
            self._set_grad(end)
        return view

    def _fresh(self, like: TensorProxy) -> TensorProxy:
        # (dynamic: a size that depends on values stays one, so whatever runs it knows the size is not fixed)
        if self.analysis:  # names of a trace nobody runs: leave the real trace's name counter alone
            self._names += 1
            return TensorProxy(f"_a{self._names}", like.meta, like.device, dynamic=like.dynamic)
        return TensorProxy(self.trace.new_name("f"), like.meta, like.device, dynamic=like.dynamic)

    def write(self, target: TensorProxy, new_value: TensorProxy, location=None) -> None:
        if target.name not in self.proxy:
            self._know(target)
        if self.opaque and not self.analysis:
            # a view whose elements the meta tensors do not bound (as_strided) sees writes to its root, and writes
            # through it reach the root's memory, beyond what a value of the root holds
            raise NotFunctional(f"in-place write while {sorted(self.opaque)[0]} views memory the compiler cannot "
                                "attribute (as_strided)")
        if target.name in self.opaque:
            return
        if not self.analysis and self.grad_mode and (target.requires_grad or new_value.requires_grad):
            # autograd records eager's in-place ops with version checks and in-place gradient formulas
            # (errors included); out-of-place values would differ in what backward saves and raises
            raise NotFunctional(f"in-place write to {target.name} while autograd records it")
        if not self.analysis and self.root[target.name] in self.read_with_grad:
            # (a tensor outside autograd, under no_grad, or through a detached view) eager's backward checks that what
            # autograd saved was not written since (version counters) and raises; the functional trace would
            # differentiate the old value (a region's VJP keeps its inputs, not what eager's ops save)
            raise NotFunctional(f"in-place write to {target.name}, whose memory an op autograd records read before")
        if not self.analysis and (overlaps_itself(target.meta) or
                                  overlaps_itself(self.proxy[self.root[target.name]].meta)):
            # (an expanded tensor: eager writes each memory location once per element that refers to it, in its
            # kernel's order; a value laid out like it cannot even be written back)
            raise NotFunctional(f"in-place write to {target.name}, whose elements share memory")
        root = self.root[target.name]
        if root in self.external:
            self.facts.append(("write", root, self.top, location, target.name != root and self.chain(target.name)))
        self.writers.setdefault(root, set()).add(id(self.top))
        if target.name != root:
            base = self.proxy[root]
            chain = self.chain(target.name)
            new_root = self._fresh(base)
            shape, stride = tuple(base.meta.shape), tuple(base.meta.stride())
            self.out.append(BoundSymbol(prims.scatter_view, (self.read(base), new_value, shape, stride, chain), {},
                                        new_root, location=location))
            self.value[root] = new_root
        else:
            base = self.proxy[root]
            shape, stride = tuple(base.meta.shape), tuple(base.meta.stride())
            if tuple(new_value.meta.stride()) != stride and base.meta.numel() > 1:
                # keep the traced layout: later view ops (`view`, `as_strided`) must see the strides eager sees
                laid_out = self._fresh(base)
                self.out.append(BoundSymbol(prims.scatter_view, (new_value, new_value, shape, stride, []), {},
                                            laid_out, location=location))
                new_value = laid_out
            self.value[root] = new_value
        self.version[root] = self.version.get(root, 0) + 1
        if target.name != root:
            self.value[target.name] = new_value
            self.value_version[target.name] = self.version[root]
        self.write_mode[root] = self.grad_mode
        if self.proxy[root].requires_grad:  # (written under no_grad or through a detached view: autograd-free)
            self.off_graph.add(root)
        elif new_value.requires_grad:
            self.history_dropped.add(root)
        if root not in self.written_order:
            self.written_order.append(root)

    # ---- the walk ----
    def walk(self) -> None:
        for top in self.trace.bsyms:
            self.top = top
            if getattr(top, "changes_metadata", False):  # (recording.py: out= that eager resizes, resize_, t_...)
                raise NotFunctional(f"{top.symbol.name} changes a tensor's shape or strides in place")
            # an unused op kept because it may raise runs as itself: its prims may accept what eager's op refuses
            # (`b - 1` of a bool tensor decomposes into a cast and a subtraction)
            kept = top.kept_to_raise and not top.symbol.tags & Tag.INPLACE and top.symbol.fn is not None
            prims_of_top = [top] if kept else flatten_to_prims([top])
            if top.symbol.tags & Tag.INPLACE and _inplace_target(top) is not None:  # (before its prims read it)
                positional = pointwise(top.symbol.name) or \
                    bool(top.subsymbols) and all(b.symbol in ELEMENTWISE for b in prims_of_top)
                self._check_reads_of_written_memory(top, _inplace_target(top), positional)
            for bsym in prims_of_top:
                if getattr(bsym, "changes_metadata", False):
                    raise NotFunctional(f"{bsym.symbol.name} changes a tensor's shape or strides in place")
                self.step(bsym)

    def run(self) -> Trace:
        self.walk()
        end_mode = self.grad_mode
        writebacks = [r for r in self.written_order if r in self.external]
        sources = {}
        for r in writebacks:  # first every copy a write-back needs, so no write-back reads another's result
            src = self.value[r]
            if self._aliases_input(src):
                fresh = self._fresh(src)
                self.out.append(BoundSymbol(prims.clone, (src,), {}, fresh))
                src = fresh
            sources[r] = src
        for r in writebacks:
            # (a write autograd would record was refused: one into a tensor that requires grad was autograd-free)
            mode = self.write_mode[r] and not self.proxy[r].requires_grad
            if mode != self.grad_mode:
                self._set_grad(mode)
            self.out.append(BoundSymbol(prims.copy_to_out_, (sources[r],), {"out": self.proxy[r]}, self.proxy[r]))
        if self.grad_mode != end_mode:
            self._set_grad(end_mode)
        for r in writebacks:
            self.value[r] = self.proxy[r]
            self.version[r] = self.version.get(r, 0) + 1
            self.off_graph.discard(r)  # (written back: the caller's tensor, autograd identity and all)

        written = set(writebacks)
        results: dict[str, TensorProxy] = {}
        members: dict[str, set] = {}  # root -> names of the returned tensors whose memory it is
        for p in pytree.tree_leaves(self.trace.output):
            if isinstance(p, TensorProxy):
                members.setdefault(self.root.get(p.name, p.name), set()).add(p.name)
        # intermediates whose memory several returned tensors share (`c` and `e = c.view(-1)`, e written into):
        # eager returns views of one tensor, so each is taken again from the final value of their base
        shared = {r for r, names in members.items() if r not in self.external and len(names) > 1}
        bases: dict[str, TensorProxy] = {}

        def result(p):
            if not isinstance(p, TensorProxy):
                return p
            if p.name not in results:
                results[p.name] = _result(p)
            return results[p.name]

        def base_value(root):
            if root not in bases:
                value = self.read(self.proxy[root])
                if self._aliases_input(value):  # (t = empty(); t.copy_(x)): memory of its own, as in eager
                    value = self._own_copy(value, root)
                bases[root] = value
            return bases[root]

        def _result(p):
            root = self.root.get(p.name, p.name)
            if root in shared:
                if members[root] & self.opaque:
                    raise NotFunctional(f"returned tensors {sorted(members[root])} share memory the trace cannot "
                                        "rebuild")
                return base_value(root) if p.name == root else \
                    self._replay_as_made(p.name, base_value(root), made=results)
            if root in written and p.name != root and p.name not in self.opaque:
                # a view of the written input, as in eager; from a returned view it was taken of, if any (eager's
                # `v2 = v0.t()` returned beside v0 is a view of v0 itself)
                return self._replay_as_made(p.name, self.proxy[root], made=results)
            if root not in self.external and p.name != root and p.name not in self.opaque and self.version.get(root):
                # a view of a written intermediate (`t2 = t1.narrow(..)` written into): eager returns a view of the
                # intermediate, with its strides and offset; the written value alone is laid out as the write made it
                return self._replay_as_made(p.name, base_value(root), made=results)
            value = self.read(p)
            if root not in self.external and self._aliases_input(value):
                # eager returns a tensor of its own here (t = empty(); t.copy_(x); return t), not the input
                return self._own_copy(value, p.name)
            return value

        returned = [p for p in pytree.tree_leaves(self.trace.output) if isinstance(p, TensorProxy)]
        for p in sorted(returned, key=lambda p: len(self.chain(p.name))):  # (bases before the views of them)
            result(p)
        output = pytree.tree_map(result, self.trace.output)
        new = self.trace.copy_with(self.out, f"functional trace ({len(writebacks)} write-backs)")
        new.output = output
        new.writebacks = [self.proxy[r] for r in writebacks]
        return new

    def _own_copy(self, value: TensorProxy, name: str) -> TensorProxy:
        """A copy of `value`, which trace value `name` returns, made in the grad mode eager made `name`'s contents in
        (its last write's, else its op's): a segment's trace may end inside a no_grad block, and a copy made there
        would lose the autograd history eager's tensor has."""
        root = self.root.get(name, name)
        mode = self.write_mode[root] if self.version.get(root) else self.made_in_mode.get(name, self.grad_mode)
        end = self.grad_mode
        if mode != end:
            self._set_grad(mode)
        fresh = self._fresh(value)
        self.out.append(BoundSymbol(prims.clone, (value,), {}, fresh))
        if mode != end:
            self._set_grad(end)
        return fresh

    def _aliases_input(self, p: TensorProxy) -> bool:
        base = p.meta._base
        return p.name in self.external or p.name in self.input_alias or \
            base is not None and any(base is self.proxy[e].meta for e in self.external)

    def _emit_view_like(self, bsym: BoundSymbol) -> None:
        """Append a bound symbol; results of view-like ops of the caller's tensors are aliases of them."""
        self.out.append(bsym)
        sym = bsym.symbol
        if any(self._aliases_input(a) for a in bsym.tensor_args()) and (
                sym.tags & (Tag.RETURNS_VIEW | Tag.MAY_RETURN_VIEW) or
                any(o.meta._base is not None for o in bsym.tensor_outputs())):
            self.input_alias.update(o.name for o in bsym.tensor_outputs())

    def _set_grad(self, mode: bool) -> None:
        self.out.append(BoundSymbol(SET_GRAD_ENABLED, (mode,), {}, None))
        self.grad_mode = mode

    def _note_reads(self, bsym: BoundSymbol) -> None:
        """A fact per input that `bsym` reads after another of the user's ops wrote it (views read nothing)."""
        sym = bsym.symbol
        outs = bsym.tensor_outputs()
        if sym.tags & (Tag.RETURNS_VIEW | Tag.MAY_RETURN_VIEW) or outs and all(o.meta._base is not None for o in outs):
            return
        skip = bsym.kwargs.get("out", bsym.args[0] if sym.name in STORES and bsym.args else None)
        reads = [bsym.args[1]] if sym is prims.copy_ else [a for a in bsym.tensor_args() if a is not skip]
        seen = set()
        for a in reads:
            if a.name not in self.proxy:
                self._know(a)
            root = self.root[a.name]
            if root in self.external and root not in seen and self.writers.get(root, set()) - {id(self.top)}:
                seen.add(root)
                self.facts.append(("read", root, self.top, bsym.location))

    def step(self, bsym: BoundSymbol) -> None:
        sym = bsym.symbol
        if self.analysis and sym is not SET_GRAD_ENABLED:
            self._note_reads(bsym)
        if sym is SET_GRAD_ENABLED:
            self.out.append(bsym)
            self.grad_mode = bool(bsym.args[0])
            return
        if sym.name in ("compiler.autocast.set_state", "compiler.torch_flags.set_state"):
            if self.analysis:
                return
            # autocast picks op dtypes at run time: regions compiled across a switch would not see it
            raise NotFunctional("the trace switches autocast")
        if sym is prims.copy_:
            target, src = bsym.args
            self._check_reads_of_written_memory(bsym, target)
            self.write(target, self.read(src), bsym.location)
            return
        if sym.tags & Tag.INPLACE:
            self._generic_inplace(bsym)
            return
        args, kwargs = _map_args(bsym, lambda i, a: self.read(a) if isinstance(a, TensorProxy) else a)
        arg_names = {a.name for a in bsym.tensor_args()}
        if self.grad_mode and not sym.tags & (Tag.RETURNS_VIEW | Tag.MAY_RETURN_VIEW) and sym not in _VIEW_PRIMS \
                and any(o.requires_grad for o in bsym.tensor_outputs()):
            for a in bsym.tensor_args():  # (an op autograd records: it may save what it reads)
                self.read_with_grad.add(self.root[a.name])
        outs = bsym.tensor_outputs()
        # an op returning one of its own arguments (contiguous() of a contiguous tensor): the same value
        new_out = bsym.output
        if any(o.name in arg_names for o in outs):
            new_out = pytree.tree_map(lambda o: self.read(o) if isinstance(o, TensorProxy) and o.name in arg_names
                                      else o, bsym.output)
        self._emit_view_like(BoundSymbol(sym, tuple(args), dict(kwargs), new_out, location=bsym.location,
                                         kept_to_raise=bsym.kept_to_raise or getattr(self.top, "kept_to_raise", False)))
        for i, o in enumerate(bsym.flat_outputs()):
            if isinstance(o, TensorProxy) and o.name not in arg_names:
                self._know(o, bsym, i)

    def _check_reads_of_written_memory(self, bsym: BoundSymbol, target: TensorProxy, positional=False) -> None:
        """An op that writes `target` and reads another view of the same memory (`z.index_copy_(0, i, z.t()...)`,
        `x[1:] = x[:-1]`), or the target itself other than element by element (`x.masked_scatter_(m, x)`),
        gives what eager's kernel does in its order; the functional value reads all of the old memory first.
        Such writes run in eager order. positional: each element written reads only that element (`x.mul_(x)`)."""
        if self.analysis:
            return
        if target.name not in self.proxy:
            self._know(target)
        root = self.root[target.name]
        args = bsym.tensor_args()
        itself = sum(1 for a in args if a.name == target.name) > 1  # (once as the written argument)
        if itself and not positional and bsym.symbol is not prims.copy_:
            raise NotFunctional(f"{bsym.symbol.name} writes {target.name} and reads it, not element by element")
        for a in args:
            if a.name == target.name:
                continue
            if a.name not in self.proxy:
                self._know(a)
            if self.root[a.name] == root and may_overlap(a.meta, target.meta):
                raise NotFunctional(f"{bsym.symbol.name} writes {target.name} and reads {a.name}, another view of "
                                    "the same memory")

    def _generic_inplace(self, bsym: BoundSymbol) -> None:
        sym = bsym.symbol
        if sym.name in METADATA_INPLACE:
            raise NotFunctional(f"{sym.name} changes a tensor's metadata in place")
        target = _inplace_target(bsym)
        if target is None:
            raise NotFunctional(f"{sym.name}: in-place op without a tensor target")
        self._check_reads_of_written_memory(bsym, target, positional=pointwise(sym.name))
        current = self.read(target)
        fresh = self._fresh(current)
        self.out.append(BoundSymbol(prims.clone, (current,), {}, fresh, location=bsym.location))
        args, kwargs = _map_args(bsym, lambda i, a: fresh if a is target else
                                 (self.read(a) if isinstance(a, TensorProxy) else a))
        if isinstance(bsym.output, TensorProxy) and bsym.output.name == target.name:
            result = self._fresh(current)  # the op returns the clone it wrote: a new name keeps the trace SSA
            out = result
        else:
            result, out = fresh, bsym.output
            for o in bsym.tensor_outputs():
                if o.name != target.name:
                    self._know(o)
        self.out.append(BoundSymbol(sym, tuple(args), dict(kwargs), out, location=bsym.location))
        self.write(target, result, bsym.location)


def functionalize(trace: Trace) -> Trace:
    """The functional trace (header says how many write-backs); raises NotFunctional when it cannot."""
    names = [b.symbol.name for b in trace.bsyms]
    if "epilogue.store" in names and any(n != "epilogue.store" for n in names[names.index("epilogue.store"):]):
        # a state store placed where eager makes it (before later ops) must not move past them
        raise NotFunctional("the trace stores state before its last op")
    if "BackwardHook.setup_input_hook" in names or "BackwardHook.setup_output_hook" in names:
        # autograd hooks on tensors that alias the module's own (compiler/features/backward_hooks.py)
        raise NotFunctional("module backward hooks are set up between ops")
    return _Functionalizer(trace).run()


def aliasing_events(trace: Trace, name_of=lambda proxy: proxy.name) -> list:
    """What functionalizing `trace` learns about the caller's tensors, as events for observers (the analysis
    layer's TL102/TL103), without building or running anything: each write that reaches an input (through
    which view ops), and per input written in place and read again by a later op, the eager order of those
    writes and reads. A metadata-changing in-place op ends the walk; what was learnt before it stands.
    ``name_of(input proxy)``: the input as the user knows it (a parameter name, ``self.weight``)."""
    from ..core import events as ev

    f = _Functionalizer(trace, analysis=True)
    try:
        f.walk()
    except NotFunctional:
        pass
    out = []
    order: dict[str, list] = {}  # root -> [[user op, what it did, location], ...] in eager order
    for kind, root, top, location, *rest in f.facts:
        name = name_of(f.proxy[root])
        steps = order.setdefault(root, [])
        if steps and steps[-1][0] is top:
            steps[-1][1].add(kind)
        else:
            steps.append([top, {kind}, location])
        if kind != "write":
            continue
        chain = rest[0] or []
        view_ops = [b.symbol.name for b, _, _ in chain]
        through = f" through a view ({' -> '.join(view_ops)})" if chain else ""
        out.append(ev.Event(
            ev.WRITE_REACHES_INPUT,
            f"in-place {top.symbol.name} writes into input {name}{through}; a functional trace computes the new "
            f"value{' and scatters it into the base' if chain else ''}, then writes {name} back once at the end "
            "(prims.copy_to_out_)", location, top.symbol.name,
            {"input": name, "through_view": bool(chain), "view_ops": view_ops,
             "may_view": any(b.symbol.tags & Tag.MAY_RETURN_VIEW for b, _, _ in chain)}))
    for root, steps in order.items():
        if not any("read" in what for _, what, _ in steps):
            continue
        name = name_of(f.proxy[root])
        done = [("read and written" if len(what) == 2 else "written" if "write" in what else "read",
                 top.symbol.name, location) for top, what, location in steps]
        first_write = next(s for s in steps if "write" in s[1])
        out.append(ev.Event(
            ev.INPUT_READ_AFTER_WRITE,
            f"input {name} is written in place and read again; eager order: " + ", ".join(
                f"{what} by {op}" + (f" (line {loc.lineno})" if loc is not None else "") for what, op, loc in done[:6])
            + (", ..." if len(done) > 6 else ""),
            first_write[2], first_write[0].symbol.name, {"input": name, "order": done}))
    return out


def write_into_dead_values(trace: Trace) -> Trace:
    """The functional trace with `f = prims.clone(t)`, made for an in-place op that writes `f` next, dropped where
    nothing else reads `t`: the op writes into `t` itself, as eager's `relu_` writes into the batch norm's result
    it replaced (a copy of every such tensor otherwise; ResNet has one per block). Only where writing `t` cannot be
    seen: `t` is made in this trace by an op that returns new memory (no view, not an argument, not returned) and
    autograd does not record it (it may have saved `t` for the backward)."""
    reads: dict[str, int] = {}
    for b in trace.bsyms:
        for a in b.tensor_args():
            reads[a.name] = reads.get(a.name, 0) + 1
    made = {o.name: b for b in trace.bsyms for o in b.tensor_outputs() if all(a.name != o.name for a in b.tensor_args())}
    kept_out = {p.name for p in pytree.tree_leaves(trace.output) if isinstance(p, TensorProxy)}
    arguments = {p.name for p in pytree.tree_leaves(trace.args) if isinstance(p, TensorProxy)}
    rename: dict[str, TensorProxy] = {}
    bsyms = trace.bsyms
    kept = []
    for i, b in enumerate(bsyms):
        if b.symbol is prims.clone and isinstance(b.args[0], TensorProxy):
            t, f = b.args[0], b.output
            maker = made.get(t.name)
            if maker is not None and reads.get(t.name) == 1 and t.name not in kept_out and t.name not in arguments \
                    and not t.requires_grad and t.meta._base is None and not maker.symbol.tags & \
                    (Tag.RETURNS_VIEW | Tag.MAY_RETURN_VIEW | Tag.INPLACE) and maker.symbol not in _VIEW_PRIMS:
                # (f's first reader is looked for only here: a scan of the rest of the trace per clone otherwise)
                writer = next((w for w in bsyms[i + 1:] if any(a.name == f.name for a in w.tensor_args())), None)
                target = _inplace_target(writer) if writer is not None and writer.symbol.tags & Tag.INPLACE else None
                if target is not None and target.name == f.name:
                    rename[f.name] = t
                    continue
        kept.append(_renamed(b, lambda x: rename.get(x.name, x) if isinstance(x, TensorProxy) else x)
                    if rename else b)
    if not rename:
        return trace
    new = trace.copy_with(kept, f"{trace.header} (in-place ops write {len(rename)} dead values directly)")
    new.output = pytree.tree_map(lambda x: rename.get(x.name, x) if isinstance(x, TensorProxy) else x, trace.output)
    return new
