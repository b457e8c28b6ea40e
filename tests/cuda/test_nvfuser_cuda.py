"""The CUDA tier: every differential case (op samples, random programs, gradients) and the GPT model through
`executors=("nvfuser", "torch")` on a CUDA device, against eager PyTorch on the same device: values within each
dtype's tolerance, inputs left behind, aliasing, gradients. Inputs keep the layouts the CPU suite gives them
(transposed, sliced, expanded), built on the CPU from the same seeds and copied to the device storage and all.

CPU CI skips this file (no CUDA device). The GPU run (bench/gpu_run.sh) runs it with pytest-xdist; each worker
writes what nvFuser built, ran and refused to $THUNDER_LINT_NVFUSER_REPORT/<worker>.json when that is set
(conftest.py).
"""
from __future__ import annotations

import pytest
import torch
from cuda_tier import EXECUTORS, skip_without_cuda_and_nvfuser

skip_without_cuda_and_nvfuser()

import opinfos
import test_differential as td
import test_gpt_model as gpt
from opinfos import KNOWN_GAPS, SAMPLES

import compiler
from compiler.executors import nvfuser


def on_device(t: torch.Tensor) -> torch.Tensor:
    """`t` on CUDA with its strides and storage offset (a transposed, sliced or expanded input stays one)."""
    if t.is_contiguous() and t.storage_offset() == 0 and t.untyped_storage().nbytes() == t.numel() * t.element_size():
        return t.to("cuda")
    whole = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (t.untyped_storage().nbytes() // t.element_size(),))
    return whole.to("cuda").as_strided(t.shape, t.stride(), t.storage_offset())


@pytest.fixture(autouse=True)
def cuda_everywhere(monkeypatch):
    """Inputs built by the suite's specs land on CUDA, and tensors the programs create default to CUDA;
    compiler.jit uses the nvFuser executor first."""
    for spec in (opinfos.T, opinfos.Index):  # (Gen stays: a CPU generator, as the CPU suite passes)
        def build_on_device(self, gen, build=spec.build):
            with torch.device("cpu"):  # (the specs draw from a CPU generator)
                return on_device(build(self, gen))

        monkeypatch.setattr(spec, "build", build_on_device)
    real_jit = compiler.jit

    def jit(fn, **kw):
        kw.setdefault("executors", EXECUTORS)
        return real_jit(fn, **kw)

    monkeypatch.setattr(compiler, "jit", jit)

    def output_and_grads(fn, args, leaves, manual_seed):  # td._output_and_grads, its projection built on the CPU
        if manual_seed is not None:
            torch.manual_seed(manual_seed)
        out = fn(*args)
        gen = torch.Generator().manual_seed(0)
        with torch.device("cpu"):
            weights = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in td.tensors_in(out) if o.requires_grad]
        loss = sum((o * w.to(o.device)).sum() for o, w in zip((o for o in td.tensors_in(out) if o.requires_grad), weights))
        return out, torch.autograd.grad(loss, leaves, allow_unused=True)

    monkeypatch.setattr(td, "_output_and_grads", output_and_grads)
    with torch.device("cuda"):
        yield


def check_on_cuda(fn, make_args, *, manual_seed=None, meta_only=False, rtol=None, atol=None):
    """Two jitted calls (trace, then cache hit), each against eager on the same CUDA inputs. Whether eager
    raises is the device's answer, not the CPU table's: the jitted call must do the same."""
    jfn = compiler.jit(fn)
    for attempt in ("first call", "second call (cache hit)"):
        td.compare_one_call(jfn, fn, make_args, where=attempt, manual_seed=manual_seed, meta_only=meta_only,
                            rtol=rtol, atol=atol)


# ---- the GPT model first (the run's most telling cases), then every differential case ----

@pytest.fixture
def gpt_on_cuda(monkeypatch):
    make_model, tokens = gpt.make_model, gpt.tokens

    def cpu_then_cuda(make):
        def made(*args, **kwargs):
            with torch.device("cpu"):  # (the CPU suite's seeds and generators, then the device)
                return make(*args, **kwargs).cuda()
        return made

    monkeypatch.setattr(gpt, "make_model", cpu_then_cuda(make_model))
    monkeypatch.setattr(gpt, "tokens", cpu_then_cuda(tokens))


@pytest.mark.parametrize("mask_mode", ["is_causal", "buffer"])
def test_gpt_forward_on_cuda(gpt_on_cuda, mask_mode):
    gpt.test_forward_matches_eager(torch.float32, mask_mode)


def test_gpt_gradients_on_cuda(gpt_on_cuda):
    gpt.test_every_parameter_gradient_matches_eager(torch.float32)


def test_gpt_regions_and_their_backwards_run_on_nvfuser(gpt_on_cuda):
    """The GPT's fusion regions (layer norms, GELU, residuals) run as nvFuser definitions, forward and backward."""
    model = gpt.make_model(torch.float32)
    jmodel = compiler.jit(model)
    before = dict(nvfuser.statistics()["executed"])
    failures_before = len(nvfuser.statistics()["execution failures"])
    idx = gpt.tokens()
    gpt.loss_of(jmodel(idx), idx).backward()
    after = nvfuser.statistics()["executed"]
    names = [b.symbol.name for b in compiler.last_traces(jmodel)[-1].bsyms]
    regions = sum(n.startswith("nvfuser_fusion") for n in names)
    assert regions >= 4, names
    assert after["forward"] - before["forward"] >= regions
    assert after["backward"] - before["backward"] >= 1
    assert nvfuser.statistics()["execution failures"][failures_before:] == []


@pytest.mark.parametrize("test", [gpt.test_no_grad_inference_matches_eager, gpt.test_optimizer_steps_match_eager,
                                  gpt.test_in_place_parameter_update_is_seen], ids=lambda t: t.__name__)
def test_gpt_model_on_cuda(gpt_on_cuda, test):
    test()


@pytest.mark.parametrize("sample", [pytest.param(s, id=s.id) for s in SAMPLES if s.id not in KNOWN_GAPS])
def test_op_sample_on_cuda(sample):
    check_on_cuda(sample.fn, sample.make_args, manual_seed=sample.manual_seed, meta_only=sample.compare == "meta",
                  rtol=sample.rtol, atol=sample.atol)


@pytest.mark.parametrize("seed", range(td.RANDOM_PROGRAM_COUNT))
def test_random_program_on_cuda(seed):
    fn, make_args, source = td.build_program(seed)
    try:
        check_on_cuda(fn, make_args)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- program ---\n{source}") from e


@pytest.mark.parametrize("sample, via_copy", td._grad_cases())
def test_gradients_on_cuda(sample, via_copy):
    td.test_gradients_match_eager(sample, via_copy)


@pytest.mark.parametrize("seed", td.GRAD_PROGRAM_SEEDS)
def test_random_program_gradients_on_cuda(seed):
    td.test_random_program_gradients_match_eager(seed)
