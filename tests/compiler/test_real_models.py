"""A quick shard of bench/real_models.py: transformers families from small configs, called as users call them
(the output holds a DynamicCache / EncoderDecoderCache made in the call), equal to eager on every call (model
outputs with their cache objects, or a training step's loss and gradients) and hitting the cache on calls
2..3. The harness's comparison is tested too: one that cannot fail would make the shard meaningless."""
from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

import real_models as rm  # noqa: E402

SHARD = [("llama", "forward", "constant values"), ("gpt2", "train", "constant values"),
         ("t5", "forward", "constant values"), ("mistral", "forward", "symbolic values"),
         ("bert", "train", "constant values"), ("whisper", "forward", "no caching"),
         ("vit", "forward", "constant values"), ("opt", "train", "symbolic values"),
         ("gpt2", "generate", "constant values")]
TORCHVISION_SHARD = [("resnet", "train", "constant values"), ("tv_vit", "forward", "symbolic values"),
                     ("convnext", "forward", "constant values")]


@pytest.mark.parametrize("family,mode,cache", SHARD)
def test_family_compiles_as_called_equals_eager_and_hits(family, mode, cache):
    r = rm.check(family, mode, cache=cache, calls=3)
    assert r.error is None, r.error
    assert r.segments == 1  # (is_compiling: transformers' masks take their compile path, no value reads)
    per_call = 1 + rm.GENERATED if mode == "generate" else 1  # (generate: a prompt and its decode steps per call)
    if cache == "no caching":
        assert (r.hits, r.misses) == (0, 3 * per_call)
    else:
        assert (r.hits, r.misses) == (2 * per_call, per_call)


@pytest.mark.parametrize("family,mode,cache", TORCHVISION_SHARD)
def test_torchvision_models_from_their_constructors(family, mode, cache):
    if rm.torchvision_package() is None:
        pytest.skip("torchvision's wheel could not be fetched")
    r = rm.check(family, mode, cache=cache, calls=3)
    assert r.error is None, r.error
    assert r.segments == 1 and (r.hits, r.misses) == (2, 1)


def test_every_family_builds_from_its_config():
    assert len(rm.FAMILIES) >= 10
    for name in rm.FAMILIES:
        assert isinstance(rm.build(name), torch.nn.Module)


def test_the_comparison_sees_values_structure_and_cache_contents():
    model = rm.build("llama").eval()
    (ids,), _ = rm.inputs("llama", 0)
    with torch.no_grad():
        a, b = model(ids), model(ids)
        assert rm.same(a, b) is None
        b.past_key_values.layers[1].keys.add_(1e-3)
        assert "keys" in rm.same(a, b)
        assert rm.same(a, b, fused=True) is None or "keys" in rm.same(a, b, fused=True)
        c = model(ids)
        c.past_key_values.layers.pop()
        assert rm.same(a, c) is not None
        assert "logits" in rm.same(a, model(rm.inputs("llama", 1)[0][0]))


def test_a_decode_step_with_the_cache_passed_back_equals_eager():
    """The cache made by the first call, passed in again (generation's next step): changed in place and returned
    by identity, as eager does (each step traces again under constant values: its tensors are longer)."""
    import compiler

    model = rm.build("llama").eval()
    jm = compiler.jit(model)
    (ids,), _ = rm.inputs("llama", 0)
    with torch.no_grad():
        cache, eager_cache = jm(ids).past_key_values, model(ids).past_key_values
        for step in range(2):
            nxt = ids[:, step:step + 1]
            out, expected = jm(nxt, past_key_values=cache), model(nxt, past_key_values=eager_cache)
            assert out.past_key_values is cache and expected.past_key_values is eager_cache
            assert rm.same(out, expected) is None


def test_a_model_after_torch_compile_ran_in_the_process_stays_one_segment():
    # Once torch.compile has run, dynamo's patched nn.Module.__init__ tags new modules in its own dict; that write
    # had ended a segment (every family split in two when other tests had used torch.compile first)
    compiled = torch.compile(lambda x: x * 2, backend="eager")
    compiled(torch.ones(2))
    r = rm.check("llama", "forward", cache="constant values", calls=3)
    assert r.error is None and r.segments == 1 and (r.hits, r.misses) == (2, 1), r


def _generate(f, ids, steps):
    out = f(ids)
    cache, tokens = out.past_key_values, []
    for _ in range(steps):
        tokens.append(out.logits[:, -1:].argmax(-1))
        out = f(tokens[-1], past_key_values=cache)
        assert out.past_key_values is cache
    return torch.cat(tokens, 1), out


@pytest.mark.parametrize("cache", ["constant values", "symbolic values"])
def test_a_second_generation_of_the_same_lengths_hits_every_step(cache):
    """The DynamicCache passed back is an input by structure (compiler/frontend/state_objects.py): its tensors are
    inputs, the layers' reassigned keys/values are stored into that call's cache. A new generation from a prompt
    of the same length (a new cache object) runs every step from the cache."""
    import compiler

    model = rm.build("llama").eval()
    jm = compiler.jit(model, cache=cache)
    with torch.no_grad():
        for run in range(2):
            ids = torch.randint(0, model.config.vocab_size, (2, 6), generator=torch.Generator().manual_seed(run))
            (tokens, out), (expected_tokens, expected) = _generate(jm, ids, 3), _generate(model, ids, 3)
            assert torch.equal(tokens, expected_tokens) and rm.same(out, expected) is None
            assert rm.same(out.past_key_values, expected.past_key_values) is None
            assert (compiler.cache_hits(jm), compiler.cache_misses(jm)) == ((0, 4) if run == 0 else (4, 4))


def test_thunder_lint_run_on_a_training_script_with_torch_compile():
    """issue 37: `thunder-lint run` on a transformers training script that calls torch.compile(model) compiles and
    checks the model (no TL003: nothing ran unchecked) and prints eager's losses (bench/real_models_run.py)."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "real_models_run.py")
    spec = importlib.util.spec_from_file_location("real_models_run", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    r = bench.measure(steps=3)
    assert r["stdout"].count("loss") == 3 and r["losses_equal"], (r["stdout"], r["eager_stdout"])
    assert "TL003" not in r["codes"], r["messages"]
