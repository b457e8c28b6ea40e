"""torch's OpInfo database as the compiler's differential suite (a representative shard; the bench runs all:
`python3 bench/opinfo_coverage.py`).

Every 4th float32 op of `op_db` (plus a few named ones), its first samples, jitted and called twice against
eager, and its in-place variant (the mutated input, `out is x`); a gradient pass for every 8th op with
supports_autograd. A sample may only be ok or refused with a documented CompilerError; a crash (any other
exception where eager ran) or a wrong result fails. Refusals are allowed only for the ops listed in
EXPECTED_REFUSALS with their reason, and an op listed there that no longer refuses fails too (the list is
kept small and reviewed: remove the entry).
"""
from __future__ import annotations

import warnings

import pytest
import torch

import opinfo_db as db

SAMPLES_PER_OP = 2
NAMED = {"acosh", "narrow", "unique", "isin", "polar", "view_as_complex", "nn.functional.embedding_bag",
         "broadcast_shapes", "norm", "split", "index_reduce.amax", "nn.functional.elu"}

# op id -> (substring of the refusal, why it is refused). Reviewed; keep small.
EXPECTED_REFUSALS = {
    "allclose": ("DataDependentError", "returns a Python bool computed from the values"),
    "item": ("DataDependentError", "returns a Python number: the tensor's value"),
    "nn.functional.ctc_loss": ("no meta implementation", "torch has no meta kernel for one of its overloads"),
    "nn.functional.linear_cross_entropy.chunked_none": ("options", "an options object argument the prologue "
                                                                   "cannot guard"),
    "narrow": ("DataDependentError", "a sample passes the start as a tensor: the result's shape depends on its value"),
    "sparse.sampled_addmm": ("sparse_csr", "sparse inputs are not traced (only strided tensors)"),
    "nn.functional.linear_cross_entropy.chunked": ("options", "an options object argument the prologue cannot guard"),
    "nn.functional.triplet_margin_with_distance_loss": ("distance_function", "an nn.Module passed as an argument"),
    "histogramdd": ("no meta implementation", "torch has no meta kernel for it"),
    "linalg.lstsq": ("no meta implementation", "torch has no meta kernel for it"),
}


def _shard():
    ops = db.ops_for(torch.float32)
    return [op for i, op in enumerate(ops) if i % 4 == 0 or db.op_id(op) in NAMED or op.name in NAMED]


OPS = _shard()
GRAD_OPS = [op for i, op in enumerate(OPS) if i % 2 == 0 and op.supports_autograd]


def _check(tally: db.Tally, op_name: str):
    bad = [r for r in tally.results if r.outcome in (db.CRASH, db.WRONG)]
    assert not bad, "\n".join(f"{r.outcome}: {r.key}: {r.reason}" for r in bad)
    refused = [r for r in tally.results if r.outcome == db.REFUSED]
    expected = EXPECTED_REFUSALS.get(op_name)
    if expected is None:
        assert not refused, "\n".join(f"refused: {r.key}: {r.reason}" for r in refused)
    else:
        assert all(expected[0] in r.reason for r in refused), [r.reason for r in refused]
        assert refused, f"{op_name} is no longer refused: remove it from EXPECTED_REFUSALS"


@pytest.mark.parametrize("op", OPS, ids=[db.op_id(op) for op in OPS])
def test_opinfo_forward_and_inplace_match_eager(op):
    tally = db.Tally()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        db.run_op(op, torch.float32, tally, per_op=SAMPLES_PER_OP)
    _check(tally, db.op_id(op))


@pytest.mark.parametrize("op", GRAD_OPS, ids=[db.op_id(op) for op in GRAD_OPS])
def test_opinfo_gradients_match_eager(op):
    if db._is_random(op):
        pytest.skip("random op: gradients depend on the draw")
    tally = db.Tally()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, s in enumerate(db.samples(op, torch.float32, 1, requires_grad=True)):
            r = db.check_grad(op.op, s)
            if r is not None:
                tally.add(db.Result(db.op_id(op), i, "grad", *r))
    _check(tally, db.op_id(op))


# Symbolic values: every 24th op of the shard (the bench runs all: --cache "symbolic values"), numbers in the samples symbolic (dims and sizes specialize).
SYMBOLIC_OPS = OPS[::24]


@pytest.mark.parametrize("op", SYMBOLIC_OPS, ids=[db.op_id(op) for op in SYMBOLIC_OPS])
def test_opinfo_under_symbolic_values_match_eager(op, monkeypatch):
    monkeypatch.setattr(db, "CACHE", "symbolic values")
    tally = db.Tally()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        db.run_op(op, torch.float32, tally, per_op=SAMPLES_PER_OP)
    _check(tally, db.op_id(op))


def test_the_harness_catches_a_wrong_result():
    """A compiler bug must show as `wrong`: compare a function with a different one's eager result."""
    op = next(o for o in db.ops_for(torch.float32, {"abs"}))
    sample = db.samples(op, torch.float32, 1)[0]
    assert db.check_sample(torch.abs, sample, random=False) == (db.OK, "")
    assert db.differs(torch.ones(2), torch.zeros(2)).startswith("values differ")
    assert db.differs(torch.ones(2, 3).t(), torch.ones(3, 2)).startswith("strides")
    assert db.differs(torch.ones(2, dtype=torch.float64), torch.ones(2)).startswith("dtype")


def test_a_module_argument_is_judged_by_its_settings_and_state():
    """triplet_margin_with_distance_loss's samples pass `distance_function=PairwiseDistance()`, deep-copied for eager
    and for the compiled call: the judge compares the modules' type, settings and state, not their identity (every
    sample read "wrong" before)."""
    import copy

    assert db.differs([torch.nn.PairwiseDistance()], [torch.nn.PairwiseDistance()]) is None
    assert db.differs([torch.nn.PairwiseDistance(p=2.0)], [torch.nn.PairwiseDistance(p=3.0)]) is not None
    lin = torch.nn.Linear(2, 2)
    assert db.differs([lin], [copy.deepcopy(lin)]) is None
    assert db.differs([lin], [torch.nn.Linear(2, 2)]) is not None  # other weights
    assert db.differs([lin], [copy.deepcopy(lin).eval()]) is not None
    assert db.differs([lin], [torch.nn.Bilinear(2, 2, 2)]) is not None
    op = next(o for o in db.op_db() if o.name == "nn.functional.triplet_margin_with_distance_loss")
    tally = db.Tally()
    db.run_op(op, torch.float32, tally, per_op=2, inplace=False)
    assert tally.counts()["ok"] == 2, tally.counts()
