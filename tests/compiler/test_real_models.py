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
         ("vit", "forward", "constant values"), ("opt", "train", "symbolic values")]


@pytest.mark.parametrize("family,mode,cache", SHARD)
def test_family_compiles_as_called_equals_eager_and_hits(family, mode, cache):
    r = rm.check(family, mode, cache=cache, calls=3)
    assert r.error is None, r.error
    assert r.segments == 1  # (is_compiling: transformers' masks take their compile path, no value reads)
    if cache == "no caching":
        assert (r.hits, r.misses) == (0, 3)
    else:
        assert (r.hits, r.misses) == (2, 1)


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
    by identity, as eager does (each step traces again: the cache's attributes are written)."""
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
