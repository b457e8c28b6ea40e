"""What one observed run saw: the graphs dynamo compiled, their calls, graph breaks, recompiles, and (with
--verify) the calls whose compiled result differed from eager.

Every source is one of torch's own records, read as objects: each graph's ``compile_subgraph_reason`` (set by
dynamo on the GraphModule the backend receives: why the graph ended, with the user stack), the
``GraphCompileReason`` objects dynamo keeps in ``torch._dynamo.utils.graph_break_reasons`` (a break whose graph
before it was empty reaches no backend), the ``CompilationMetrics`` of every frame compile
(``recompile_reason``, ``fail_reason``) and the code objects dynamo traced (``TracingContext.traced_code``).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from .verify import Divergence, Reference, localize, run_checked


@dataclass
class Graph:
    """One graph dynamo compiled and gave to the backend."""

    compile_id: str
    reason: object  # the GraphCompileReason that ended it
    reference: Reference | None = None  # --verify
    backend: object = None
    calls: int = 0
    divergence: Divergence | None = None  # --verify: where its first differing call differed
    unverifiable: str = ""  # --verify: why its calls cannot be verified
    own_random: bool = False  # --verify: the backend draws its random numbers itself: calls go to the probe


@dataclass
class Observer:
    verify: bool = False
    graphs: list = field(default_factory=list)
    break_reasons: list = field(default_factory=list)  # every GraphCompileReason with graph_break, in order
    metrics: list = field(default_factory=list)  # every CompilationMetrics, in order
    traced: set = field(default_factory=set)  # (co_filename, co_firstlineno) of every function dynamo traced
    verified_calls: int = 0
    differing_calls: dict = field(default_factory=dict)  # id(graph) -> calls that differed
    not_verified: dict = field(default_factory=dict)  # why -> calls
    random_checked: int = 0  # calls whose random ops took the backend's values in the eager run
    summary: str = ""  # the report's closing lines (pytest plugin)

    def __post_init__(self):
        self._seen: set = set()
        self._lock = threading.Lock()

    # --- torch's records ------------------------------------------------------------------------------
    def baseline(self) -> None:
        """Records torch made before the run (an earlier run in this process) are not this run's."""
        import torch._dynamo.utils as dutils

        with self._lock:
            self._before = [*dutils.graph_break_reasons, *dutils._compilation_metrics]  # kept: ids stay unique
            self._seen.update(id(r) for r in self._before)

    def poll(self) -> None:
        """Take the records torch made since the last poll (each object once)."""
        import torch._dynamo.utils as dutils

        with self._lock:
            for r in list(dutils.graph_break_reasons):
                if id(r) not in self._seen and getattr(r, "graph_break", False):
                    self._seen.add(id(r))
                    self.break_reasons.append(r)
            for m in list(dutils._compilation_metrics):
                if id(m) not in self._seen:
                    self._seen.add(id(m))
                    self.metrics.append(m)

    def compiled_graph(self, gm, backend) -> Graph:
        import torch._guards

        self.poll()
        reason = getattr(gm, "compile_subgraph_reason", None)
        cid = torch._guards.CompileContext.current_compile_id()
        graph = Graph(str(cid) if cid is not None else "?", reason, backend=backend)
        for code in torch._guards.TracingContext.get_traced_code() or ():
            self.traced.add((code.co_filename, code.co_firstlineno))
        if self.verify:
            try:
                graph.reference = Reference.of(gm)
            except Exception as e:  # noqa: BLE001  (its calls are counted as not verified)
                graph.unverifiable = f"its graph could not be copied ({type(e).__name__})"
        with self._lock:
            self.graphs.append(graph)
        return graph

    def wrap(self, compiled, graph: Graph):
        """The callable dynamo will call for this graph: counted, and checked against eager with --verify."""
        if graph.reference is None:
            def observed(*args):
                graph.calls += 1
                if graph.unverifiable:
                    with self._lock:
                        self.not_verified[graph.unverifiable] = self.not_verified.get(graph.unverifiable, 0) + 1
                return compiled(*args)
            return observed

        def verified(*args):
            graph.calls += 1
            result, outcome, pristine, rng = run_checked(graph.reference, compiled, args, probe_only=graph.own_random)
            self._count(graph, outcome, pristine, rng)
            return result

        return verified

    def _count(self, graph: Graph, outcome, pristine, rng) -> None:
        if not outcome.verified:
            with self._lock:
                self.not_verified[outcome.why_not] = self.not_verified.get(outcome.why_not, 0) + 1
            return
        differs = outcome.differs
        if differs and graph.reference.random:  # the backend's random draws: compare the rest through the probe
            where = localize(graph.reference, graph.backend, pristine, rng, given_random=True)
            if where is not None and where.probe_failed:  # its random draws cannot be given to eager: unknown
                why = f"its random ops are drawn by the backend and {where.detail}"
                with self._lock:
                    self.not_verified[why] = self.not_verified.get(why, 0) + 1
                return
            with self._lock:
                self.random_checked += 1
            differs = where is not None
            graph.own_random = True  # later calls: straight to the probe, the plain eager run would differ again
            if differs and graph.divergence is None:
                graph.divergence = where
        elif differs and graph.divergence is None:
            graph.divergence = localize(graph.reference, graph.backend, pristine, rng)
        with self._lock:
            self.verified_calls += 1
            if differs:
                self.differing_calls[id(graph)] = self.differing_calls.get(id(graph), 0) + 1
