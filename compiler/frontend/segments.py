"""Segments: a trace that needs a tensor's value ends there, instead of failing.

When traced code reads a value (`bool(t)`, `t.item()`, `.tolist()`, the size of `x[mask]`), the ops
recorded since the last read become a segment; the segment runs on the real inputs at once, the value
is read from its real result, and tracing continues with that value as a plain Python value. A call's
trace is thus a path: segment, read, segment, read, ..., final segment.

The cache keeps these paths as a tree: each read maps an outcome (the value read, as its repr) to the
continuation traced for it. A later call runs the segments, reads each value and follows the branch for
it; an outcome never seen re-traces the function in *replay* mode, where the segments this call has
already run are not run again (their real values are reused, by proxy name), and only the new
continuation executes. Each read keeps at most MAX_OUTCOMES continuations; further outcomes are traced
for that call only. Every segment runs eager's own torch ops in order, under eager autograd, so
results, effects on inputs and gradients are eager's.
"""
from __future__ import annotations

import dataclasses
import operator
import threading
from contextlib import contextmanager

import torch

from ..features import autocast
from ..meta.functions import non_leaf
from ..core import tree as pytree
from ..core.errors import CompilerError
from ..core.events import DATA_DEPENDENT, DATA_DEPENDENT_READ, Event
from ..core.proxies import OpaqueProxy, TensorProxy
from ..core.symbols import Tag
from ..core.trace import Trace
from ..core.context import tracing

MAX_OUTCOMES = 16  # continuations kept per read; e.g. a loss value read with .item() differs every call

# What each kind of read computes from the real tensor.
READERS = {
    "bool": bool, "int": int, "float": float, "complex": complex, "index": operator.index,
    "item": lambda t: t.item(), "tolist": lambda t: t.tolist(), "shape": lambda t: t.shape,
    "numpy": lambda t: t.numpy(), "numpy_force": lambda t: t.numpy(force=True),
    "stride": lambda t: t.stride(),
    "flush": lambda t: None,  # no value: the ops before a Python effect run before it (Segmenter.flush)
}
# reads whose value shares memory with the tensor (an array): a continuation traced with one call's array would
# hold that array, so a trace reading one serves its own call only
SINGLE_USE_READS = ("numpy", "numpy_force")


def outcome_key(value) -> tuple:
    # repr tells -0.0 from 0.0, 1 from True, and makes NaN equal to itself
    if type(value).__module__ == "numpy" and hasattr(value, "tobytes"):  # (an array's repr elides the middle)
        return type(value).__name__, str(value.dtype), value.shape, value.tobytes()
    return type(value).__name__, repr(value)


_LOCAL = threading.local()


@dataclasses.dataclass
class Options:
    executors: tuple
    passes: object  # None: the default passes
    replay: "Replay | None" = None


@contextmanager
def segmenting(executors, passes, replay=None):
    """Lets traces made inside (by any front end) split at data-dependent reads. Without it a read raises
    DataDependentError, as a front end called on its own cannot run segments."""
    previous = getattr(_LOCAL, "options", None)
    _LOCAL.options = Options(executors, passes, replay)
    try:
        yield
    finally:
        _LOCAL.options = previous


def current_options() -> Options | None:
    return getattr(_LOCAL, "options", None)


@dataclasses.dataclass
class Replay:
    """A later call whose read found no continuation: what it has run so far."""
    env: dict  # proxy name -> real value, for every segment this call ran
    nodes: list  # the tree nodes it went through (their segments ran), root first
    symbolic: bool = False  # the entry was traced with symbolic values: so is the new continuation


class Runner:
    """One segment, compiled: passes, executors, generated code; reads/writes the call's env by name."""

    def __init__(self, trace: Trace, options: Options, final: bool, grad: bool | None = None):
        from ..executors.plan import plan_execution
        from ..passes import run_passes

        traces = run_passes(trace, *(() if options.passes is None else (options.passes,)))
        # a fusing executor fuses each segment as it would the whole trace (functional path, regions), where the
        # segment writes nothing in place: segments that do run in eager order (their write-backs into tensors
        # that later segments read, and random aliasing programs through the functional path, crashed)
        executors = options.executors
        if any(b.symbol.tags & Tag.INPLACE for b in traces[-1].bsyms):
            executors = tuple(e for e in executors if not getattr(e, "fuses", False))
        # (planned while tracing goes on: regions build their VJPs from prims, which must not record; in the grad
        # mode the segment starts in, `grad`, which the plan takes for the caller's: tracing may be inside a no_grad
        # block by now)
        with torch._C.DisableTorchFunction(), tracing(None), \
                torch.set_grad_enabled(torch.is_grad_enabled() if grad is None else grad):
            added, self.fn = plan_execution(traces[-1], executors, continues=not final)
        execution = added[-1]
        execution.header = f"{trace.header}; {execution.header}"
        traces += added
        self.traces = traces
        self.arg_names = [a.name for a in trace.args]
        self.out_names = None if final else [o.name for o in trace.output]

    def run(self, env: dict):
        outs = self.fn(*[env[n] for n in self.arg_names])
        if self.out_names is None:
            return outs
        env.update(zip(self.out_names, outs))
        return None


ALL_DEFINED = object()  # segment_trace's output: every tensor the segment defines (a segment before a read)


def segment_trace(bsyms, output, header: str) -> Trace:
    """A trace of `bsyms` whose parameters are the proxies it uses but does not define (inputs of the
    function or results of earlier segments); `output` ALL_DEFINED: every tensor it defines (any other value,
    None included, is the final segment's result)."""
    from ..symbolic.values import SYM_TYPES

    t = Trace("segment")
    t.bsyms = list(bsyms)
    defined, seen, args = [], set(), []

    def use(leaf):
        if type(leaf) is slice:  # (a slice bounded by a symbolic number: x[:n])
            for bound in (leaf.start, leaf.stop, leaf.step):
                use(bound)
        elif isinstance(leaf, (TensorProxy, OpaqueProxy, *SYM_TYPES)) and leaf.name not in seen:
            seen.add(leaf.name)
            args.append(leaf)

    for b in bsyms:
        for leaf in pytree.tree_leaves((b.args, b.kwargs)):
            use(leaf)
        for o in b.flat_outputs():  # tensors, and generators made inside (compiler/features/rng.py)
            if isinstance(o, (TensorProxy, OpaqueProxy)) and o.name not in seen:
                seen.add(o.name)
                defined.append(o)
        if isinstance(b.output, SYM_TYPES) and b.output.name not in seen:  # a scalar op of symbolic
            seen.add(b.output.name)  # numbers (compiler.symbolic): later segments may use it too
            defined.append(b.output)
    if output is ALL_DEFINED:
        output = tuple(defined)
    for leaf in pytree.tree_leaves(output):
        use(leaf)
    t.args, t.output, t.header = args, output, header
    return t


@dataclasses.dataclass
class Record:
    """One read met while tracing: the segment before it and what was read."""
    trace: Trace
    source: str  # the segment's text without comments: a replayed segment must match it
    runner: Runner
    proxy: str
    kind: str
    key: tuple
    value: object
    location: object
    sym: object = None  # cache="symbolic values": the name of the symbolic number the read gave (a tuple of
    # names, None for sizes < 2, for a size read)
    stored: list = dataclasses.field(default_factory=list)  # the slots (epilogue.Slot) the segment stores


class Segmenter:
    """Attached to a TracingState (state.segmenter) while a front end traces under `segmenting`."""

    def __init__(self, state, options: Options):
        self.state = state
        self.options = options
        self.replay = options.replay
        self.env: dict = dict(options.replay.env) if options.replay is not None else {}
        self.cut = 0
        self.grad_at_cut = state.grad_enabled
        self.autocast_at_cut = state.autocast
        self.records: list[Record] = []
        self.state_writes = None  # epilogue.StateWrites: module, global and closure slots the call may write
        self.slots_at_cut = None
        self.stored: dict = {}  # slot id -> Slot: slots a segment before the final one stores

    def watch(self, state_writes) -> None:
        self.state_writes = state_writes
        self.slots_at_cut = state_writes.start()

    def _segment_stores(self, bsyms) -> tuple[list, list]:
        """The segment's ops with the stores of the slots it wrote (compiler/frontend/epilogue.py)."""
        if self.state_writes is None:
            return bsyms, []
        from .epilogue import segment_stores

        now = self.state_writes.now()
        writes = [(slot, value) for slot, value, _ in self.state_writes.written(
            self.slots_at_cut, now, self.state.write_marks, self.cut, self.cut + len(bsyms))]
        self.slots_before_segment, self.slots_at_cut = self.slots_at_cut, now
        if not writes:
            return bsyms, []
        with_stores, stored = segment_stores(bsyms, writes, self.state.write_marks, self.cut)
        self.stored.update((slot.id, slot) for slot in stored)
        return with_stores, stored

    def _as_at_segment_start(self, slots) -> None:
        """Put in each slot, for real, what it held when the segment to run starts (real values for the
        proxies there): before running it while tracing, so where it raises, each slot it stores holds
        either its store or eager's value at that point, not the value tracing ran ahead to."""
        sw = self.state_writes
        for slot in slots:
            slot.store(self._real(sw.value_in(self.slots_before_segment, slot)))

    def _keep_earlier_stores(self, stored) -> None:
        """A segment raised while tracing: slots earlier segments wrote get their values at its start for
        real (tracing had put proxies back in them); the failed segment's own slots already hold them."""
        if self.state_writes is None:
            return
        own = {slot.id for slot in stored}
        for slot, value, _ in self.state_writes.changes(self.state_writes.start(), self.slots_before_segment):
            if slot.id not in own:
                slot.store(self._real(value))

    def _real(self, value):
        return pytree.tree_map(lambda v: self.env[v.name] if isinstance(v, TensorProxy) else v, value)

    def restated(self, writes) -> list:
        """After tracing: the final segment also stores what each slot an earlier segment stored holds at
        the end (the same value, or one written back to what it was before), so every continuation of that
        segment ends with its own value there, not the one an earlier call's path left."""
        written = {slot.id for slot, _ in writes}
        return [(slot, slot.read()) for key, slot in self.stored.items() if key not in written]

    def read(self, proxy: TensorProxy, kind: str, what: str, loc, number: bool = False) -> tuple[bool, object]:
        """(True, the real value `kind` of `proxy`), or (False, None) when the trace cannot be cut here
        (inside a decomposition, or a read with no run-time form such as .numpy()). `number`: the value
        goes to Python code only; under symbolic values an int/float then stays symbolic (a SymInt input of
        the next segment, named in its constraints), so every value shares one continuation."""
        st = self.state
        if st.depth != 0 or kind not in READERS:
            return False, None
        st.sync_grad_mode(loc)
        bsyms = st.trace.bsyms[self.cut:]
        i = len(self.records)
        ends = f"ends before {what}" if proxy is None else f"ends where {what} reads {proxy.name}"
        seg = segment_trace(bsyms, ALL_DEFINED, f"segment {i + 1}: {ends}{f' at {loc}' if loc else ''}")
        source = seg.python_source(with_comments=False)
        with_stores, stored = self._segment_stores(bsyms)
        if stored:  # (the text without stores is what a replay compares)
            seg = segment_trace(with_stores, ALL_DEFINED, seg.header)
        if proxy is not None:
            st.emit(Event(DATA_DEPENDENT_READ, f"{what} needs the value of {proxy.name}", loc,
                          details={"proxy": proxy.name, "kind": kind, "what": what}))
        replayed = self.replay is not None and i < len(self.replay.nodes)
        if replayed:
            node = self.replay.nodes[i]
            if node.source != source:
                raise CompilerError("re-tracing for a new outcome of a data-dependent read traced a different "
                                    f"program before {what}{f' at {loc.describe()}' if loc else ''}; the "
                                    "function's tracing is not repeatable")
            runner = node.runner  # it already ran in this call: its values are in env
        else:
            runner = Runner(seg, self.options, final=False, grad=self.grad_at_cut)
            self._fill_inputs()
            held = [(slot, slot.read()) for slot in stored]  # proxies, which tracing goes on with
            self._as_at_segment_start(stored)
            try:
                with _native(self.grad_at_cut, self.autocast_at_cut):
                    runner.run(self.env)
            except Exception as e:
                e.thunder_segment_raised = True  # eager raised there too: what ran before it (ops, stores) stays
                self._keep_earlier_stores(stored)
                raise
            for slot, value in held:
                slot.store(value)
            with torch._C.DisableTorchFunction():  # the segment's draws and seeds happened for real, as in eager
                self.rng_after_run = torch.random.get_rng_state()
                self.gens_after_run = tuple(p.value.get_state() for p in st.inputs
                                            if isinstance(p, OpaqueProxy) and isinstance(p.value, torch.Generator))
        real = self.env[proxy.name] if proxy is not None else None
        with _native(torch.is_grad_enabled()):
            value = READERS[kind](real)
        if kind in SINGLE_USE_READS:
            st.single_use.append(f"{what} at {loc} shares the tensor's memory: the trace reading it serves one call")
        if kind == "shape":  # the size is known from here on: later ops and reads see it
            from ..meta.functions import meta_like

            with torch._C.DisableTorchFunction():
                proxy.meta, proxy.dynamic = meta_like(real), False
        self.cut = len(st.trace.bsyms)
        self.grad_at_cut = st.grad_enabled
        self.autocast_at_cut = st.autocast
        key, sym = outcome_key(value), None
        if number and getattr(st, "symbolic", False) and (not replayed or self.replay.nodes[i].read_sym):
            from ..symbolic.values import input_name, read_value, symbolic_read_key

            name = input_name(f"{proxy.name}_{kind}", st.builder._sym_names)
            sym = read_value(st, name, value, i)
            if sym is not None:
                key = symbolic_read_key(value)
                if replayed and self.replay.nodes[i].read_sym != name:
                    raise CompilerError("re-tracing for a new outcome of a data-dependent read named the value "
                                        f"read by {what} differently; the function's tracing is not repeatable")
                self.env[name] = value
        elif kind == "shape" and getattr(st, "symbolic", False) and (not replayed or self.replay.nodes[i].read_sym):
            sym = self._symbolic_sizes(proxy, value, i)
            key = symbolic_shape_key(value)
        sym_name = sym if isinstance(sym, tuple) or sym is None else sym.name
        if replayed and sym_name is not None and self.replay.nodes[i].read_sym != sym_name:
            raise CompilerError(f"re-tracing for a new outcome of a data-dependent read named the value read by {what} "
                                "differently; the function's tracing is not repeatable")
        self.records.append(Record(seg, source, runner, proxy.name if proxy is not None else None, kind, key, value,
                                   loc, sym_name, stored))
        if proxy is None:
            return True, None
        shown = repr(value if kind != "shape" else tuple(value))
        st.emit(Event(DATA_DEPENDENT, f"{what} reads the value of tensor {proxy.name} ({shown}): the trace is "
                      f"split here and the value is read at run time; each new value traces a new continuation",
                      loc, details={"proxy": proxy.name, "kind": kind, "value": value, "what": what,
                                    "segment": i + 1, "symbolic": sym is not None}))
        return True, (value if sym is None else sym)

    def flush(self, what: str, loc) -> None:
        """A Python effect on state outliving the call is about to happen (a global list appended to, an
        attribute set, print): the ops traced since the last cut run first, for real, so that one of them
        raising raises before the effect, as in eager (tracing would otherwise run the effect ahead of ops
        that can only fail when they run: an index out of range, an op on a value-dependent size)."""
        if self.state.depth == 0 and len(self.state.trace.bsyms) > self.cut:
            self.read(None, "flush", what, loc)

    def _symbolic_sizes(self, proxy, value, i: int) -> tuple:
        """cache="symbolic values": a value-dependent size read (x[mask], nonzero) becomes symbolic inputs of
        the next segment (sizes >= 2; 0 and 1 are part of the outcome), like an argument tensor's sizes."""
        from ..symbolic.values import input_name, read_value

        st, names, sizes = self.state, [], []
        for d, v in enumerate(value):  # (a name for every size: the names do not depend on the values)
            name = input_name(f"{proxy.name}_shape{d}", st.builder._sym_names)
            names.append(name)
            sym = read_value(st, name, v, i) if v >= 2 else None
            if sym is None:
                sizes.append(v)
                continue
            sym.at_least_2 = True  # (the outcome key says which sizes are < 2)
            self.env[name] = v
            sizes.append(sym)
        if not st.sizes_fixed:
            proxy.sym_shape = tuple(sizes) if any(type(d) is not int for d in sizes) else None
        return tuple(names)

    def run_before_error(self, writes) -> None:
        """The user's code raised: run for real what eager ran before the exception (the ops since the last
        read, then the stores made so far), so its effects on inputs and state stay, as in eager."""
        self._fill_inputs()
        seg = segment_trace(self.state.trace.bsyms[self.cut:], ALL_DEFINED, "ops before the exception")
        with _native(self.grad_at_cut, self.autocast_at_cut):
            Runner(seg, self.options, final=False).run(self.env)
            for slot, value in writes:
                slot.store(pytree.tree_map(lambda v: self.env[v.name] if isinstance(v, TensorProxy) else v, value))

    def _fill_inputs(self) -> None:
        st = self.state
        for p in st.inputs:
            if p.name not in self.env:
                self.env[p.name] = p.value if isinstance(p, OpaqueProxy) else st.real_inputs[p.name]
        for real, p in st.captured:
            self.env[p.name] = real  # (this trace's own: a continuation may name another capture alike)

    def finish(self, trace: Trace) -> "Path":
        """After tracing: the final segment (up to the trace's output); the whole path."""
        self._fill_inputs()
        final = segment_trace(trace.bsyms[self.cut:], trace.output,
                              f"segment {len(self.records) + 1} (final)")
        runner = Runner(final, self.options, final=True, grad=self.grad_at_cut)
        path = Path(self.records, final, final.python_source(with_comments=False), runner, self.env,
                    (self.grad_at_cut, self.autocast_at_cut), [a.name for a in trace.args],
                    [c for c in self.state.constraints if c.after_read is not None])
        self.env = {}
        return path


@dataclasses.dataclass
class Path:
    records: list
    final_trace: Trace
    final_source: str
    final_runner: Runner
    env: dict  # the tracing call's real values (dropped once its final segment ran)
    final_grad: tuple  # (grad mode, autocast state) the final segment starts in
    input_names: list
    read_constraints: list = dataclasses.field(default_factory=list)  # constraints naming numbers read


@contextmanager
def _native(grad: bool, cast=None):
    """Run real torch ops from inside tracing: no tracing state, no torch-function mode, the grad mode and
    autocast state the segment starts in."""
    before, cast_before = torch.is_grad_enabled(), autocast.current()
    with torch._C.DisableTorchFunction(), tracing(None):
        torch._C._set_grad_enabled(grad)
        if cast is not None:
            autocast.set_state(cast)
        try:
            yield
        finally:
            torch._C._set_grad_enabled(before)
            autocast.set_state(cast_before)


# ---------------------------------------------------------------- the cache side

class Node:
    """A segment in the cache's tree; `read` None for a final segment."""

    def __init__(self, source: str, runner: Runner, read=None, location=None, prologue=None, stored=()):
        self.source, self.runner, self.read, self.location = source, runner, read, location
        self.stored = stored  # slots its segment stores (a new outcome's re-tracing starts without them)
        self.children: dict = {}  # outcome key -> Node
        # a read kept symbolic: its value's name, and the continuations for it (each has its constraints)
        self.read_sym = None  # str, or a tuple of names for a size read
        self.sym_children: dict = {}  # outcome key -> [Node]
        self.prologue = prologue  # guards of the trace that made this continuation (checked on entering it)
        self.input_names = ()  # ... and the names its prologue's results have in that trace
        self.checks = None  # constraints on numbers read so far (env -> bool), checked on entering it
        self.extra = 0  # outcomes seen beyond MAX_OUTCOMES

    def enters(self, args, kwargs, env) -> bool:
        """Whether this call may take this continuation; if so, `env` gets the inputs of the trace that made
        it (a tensor it captured has its own name there: names after the cut are that trace's)."""
        if self.prologue is not None:
            inputs = self.prologue(args, kwargs)
            if inputs is None:
                return False
            if self.checks is not None and not self.checks({**env, **dict(zip(self.input_names, inputs))}):
                return False
            env.update(zip(self.input_names, inputs))
            return True
        return self.checks is None or self.checks(env)


def checker(constraints):
    """env -> whether every constraint holds (names: the computation's inputs and numbers read)."""
    if not constraints:
        return None
    import math

    code = compile(" and ".join(f"({c.expr})" for c in constraints) or "True", "<read constraints>", "eval")

    def check(env) -> bool:
        try:
            return bool(eval(code, {"math": math}, env))
        except Exception:  # noqa: BLE001 - as the prologue: a check that cannot run does not hold
            return False

    check.constraints = list(constraints)
    return check


def nodes_for(path: Path) -> list[Node]:
    nodes = [Node(r.source, r.runner, (r.proxy, r.kind), r.location, stored=r.stored) for r in path.records]
    nodes.append(Node(path.final_source, path.final_runner))
    for i, r in enumerate(path.records):
        nodes[i].read_sym = r.sym
        set_checks(nodes[i + 1], [c for c in path.read_constraints if c.after_read == i])
    return nodes


def set_checks(node: Node, constraints) -> None:
    node.checks = checker(constraints)
    if constraints:  # shown with the segment: the values of the numbers read that it serves
        trace = node.runner.traces[-1]
        trace.header = trace.header.split("; entered when ")[0] + "; entered when " + \
            " and ".join(c.display for c in constraints)


def link(nodes: list[Node], records: list[Record], start: int = 0) -> None:
    for i in range(start, len(records)):
        if records[i].sym is not None and records[i].key[0] == "symbolic":
            nodes[i].sym_children.setdefault(records[i].key, []).append(nodes[i + 1])
        else:
            nodes[i].children[records[i].key] = nodes[i + 1]


def symbolic_shape_key(value) -> tuple:
    return ("symbolic", "shape", tuple(v if v < 2 else None for v in value))


def _enter_read(node: Node, value, env: dict) -> None:
    """A symbolic read's value(s) into the env, by the names the continuations use."""
    if isinstance(node.read_sym, tuple):
        env.update(zip(node.read_sym, value))
    else:
        env[node.read_sym] = value


def _read_key(node: Node, value) -> tuple:
    if isinstance(node.read_sym, tuple):
        return symbolic_shape_key(value)
    if node.read_sym is not None:
        from ..symbolic.values import symbolic_read_key

        key = symbolic_read_key(value)
        if key is not None:
            return key
    return outcome_key(value)


class SegmentedComputation:
    """A cache entry's computation when its trace was split: the root of the tree of segments."""

    def __init__(self, path: Path):
        nodes = nodes_for(path)
        link(nodes, path.records)
        self.root = nodes[0]
        self.first_nodes = nodes
        self.input_names = path.input_names
        self.first = path  # the tracing call still has to run its final segment
        self.lock = threading.Lock()
        self.escapes = None  # compiler/frontend/escapes.Escapes: the final segment returns (result, escaped values)

    def __call__(self, *inputs):
        """The first call (the one that traced): its segments ran while tracing; run the final one."""
        path, self.first = self.first, None
        if path is None:
            raise CompilerError("internal error: a segmented entry's first run was already used")
        try:
            out = _run_final(path.final_runner, path.env, path.final_grad)
        except BaseException:
            if self.escapes is not None:  # what the segments before computed is stored where it was
                self.escapes.patch_from(path.env)
            raise
        if self.escapes is not None:
            out, escaped = out
            self.escapes.patch(escaped)
        return out


def _run_final(runner: Runner, env: dict, start: tuple):
    before, cast_before = torch.is_grad_enabled(), autocast.current()
    torch._C._set_grad_enabled(start[0])
    autocast.set_state(start[1])
    try:
        return runner.run(env)
    finally:
        torch._C._set_grad_enabled(before)
        autocast.set_state(cast_before)


def traces_of(nodes: list[Node]) -> list[Trace]:
    return [n.runner.traces[-1] for n in nodes]


def run_cached(jf, entry, inputs, args, kwargs):
    """A cache hit on a segmented entry: run the path its reads choose; trace what is new."""
    comp: SegmentedComputation = entry.computation
    env = dict(zip(comp.input_names, inputs))
    layouts = _layouts((args, kwargs))  # (segments may change the arguments' sizes in place: x.t_())
    grad, cast = torch.is_grad_enabled(), autocast.current()
    node, nodes, overwritten = comp.root, [], []
    try:
        while True:
            nodes.append(node)
            if node.read is None:
                out = node.runner.run(env)
                jf.last_entry = dataclasses.replace(entry, traces=traces_of(nodes), segment_count=len(nodes))
                return out
            overwritten += [(slot, slot.read()) for slot in node.stored]
            node.runner.run(env)
            name, kind = node.read
            value = READERS[kind](env[name] if name is not None else None)
            key = _read_key(node, value)
            if key[0] == "symbolic":  # one continuation for any value its constraints accept
                _enter_read(node, value, env)
                child = next((c for c in node.sym_children.get(key, ()) if c.enters(args, kwargs, env)), None)
            else:
                child = node.children.get(key)
                child = child if child is not None and child.enters(args, kwargs, env) else None
            if child is not None:
                node = child
                continue
            torch._C._set_grad_enabled(grad)  # the new trace starts from the call's state
            autocast.set_state(cast)
            for slot, value in reversed(overwritten):  # ... and sees the module as the call found it (the
                slot.store(value)                      # new path's final segment stores the writes again)
            args, kwargs = _as_found(args, kwargs, layouts)
            return _continue(jf, entry, comp, env, nodes, args, kwargs)
    finally:
        torch._C._set_grad_enabled(grad)
        autocast.set_state(cast)


def _layouts(args) -> list:
    """(tensor, sizes, strides, offset) of the call's argument tensors, as the call found them."""
    return [(t, tuple(t.shape), t.stride(), t.storage_offset()) for t in pytree.tree_leaves(args)
            if type(t) is torch.Tensor]


def _as_found(args, kwargs, layouts):
    """The arguments for re-tracing a new outcome: where a segment already run changed an argument's sizes or
    strides in place (x.t_(), x.unsqueeze_(0)), a stand-in with the layout the call found (same dtype, device,
    autograd role), so the re-traced segments are the ones that ran; their values come from the run."""
    twins = {}
    for t, shape, stride, offset in layouts:
        if (tuple(t.shape), t.stride(), t.storage_offset()) != (shape, stride, offset) and id(t) not in twins:
            with torch._C.DisableTorchFunction(), torch.enable_grad():
                twin = torch.empty_strided(shape, stride, dtype=t.dtype, device=t.device)
                if t.requires_grad:  # (a non-leaf of any strides: overlapping ones cannot be copied into)
                    twin = twin.requires_grad_() if t.is_leaf else non_leaf(shape, stride, t.dtype, t.device)
            twins[id(t)] = twin
    if not twins:
        return args, kwargs
    return pytree.tree_map(lambda v: twins.get(id(v), v) if type(v) is torch.Tensor else v, (args, kwargs))


def _outcomes(node: Node) -> int:
    return len(node.children) + sum(len(v) for v in node.sym_children.values())


def _continue(jf, entry, comp: SegmentedComputation, env: dict, nodes: list[Node], args, kwargs):
    """No continuation for this outcome: trace again, reusing the values of the segments already run."""
    jf.hits -= 1  # counted as a hit when its guards passed: this call traces, so it is a miss
    jf.misses += 1
    replay = Replay(env, nodes, entry.symbolic)
    try:
        new = jf.compile(args, kwargs, replay=replay)
    finally:  # (the tracing state keeps its options in reference cycles: they must not keep this call's tensors)
        replay.env = {}
    path: Path | None = getattr(new.computation, "first", None)
    if not isinstance(new.computation, SegmentedComputation) or path is None or \
            len(path.records) < len(nodes):
        raise CompilerError("re-tracing for a new outcome of a data-dependent read found fewer reads than the "
                            "cached trace; the function's tracing is not repeatable")
    k = len(nodes) - 1  # the read whose outcome was new
    cacheable = not new.rerun
    fresh = new.computation.first_nodes[k + 1:]
    for n in fresh:
        n.prologue, n.input_names = new.prologue, path.input_names
    # entering the new continuation checks every constraint on numbers read up to here
    set_checks(fresh[0], [c for c in path.read_constraints if c.after_read <= k])
    parent = nodes[-1]
    key = path.records[k].key
    with comp.lock:
        if not cacheable:
            pass
        elif key[0] == "symbolic" and _outcomes(parent) < MAX_OUTCOMES:
            parent.sym_children.setdefault(key, []).append(fresh[0])
        elif key[0] != "symbolic" and (key in parent.children or _outcomes(parent) < MAX_OUTCOMES):
            parent.children[key] = fresh[0]
        else:
            parent.extra += 1
    out = new.computation()
    jf.last_entry = dataclasses.replace(new, traces=traces_of(nodes + fresh), segment_count=len(nodes) + len(fresh))
    return out
