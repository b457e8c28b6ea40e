"""A small GPT, jitted as a module, against the same module run eagerly.

Token + position embedding, two pre-norm blocks (causal attention through
F.scaled_dot_product_attention, MLP with gelu), final layer norm and a head tied to the token
embedding. Parameters (and the mask buffer) are inputs of the compiled module, so the forward, every
parameter's gradient, cache behaviour and in-place parameter updates must all match eager.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import compiler

VOCAB, WIDTH, HEADS, LAYERS, CONTEXT = 37, 32, 4, 2, 16
BATCH, SEQ = 2, 12
TOLERANCES = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-10, atol=1e-10)}
GRAD_TOLERANCES = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float64: dict(rtol=1e-9, atol=1e-10)}


class Block(nn.Module):
    def __init__(self, mask_mode: str):
        super().__init__()
        self.mask_mode = mask_mode
        self.ln_attn = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.ln_mlp = nn.LayerNorm(WIDTH)
        self.fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.fc_out = nn.Linear(4 * WIDTH, WIDTH)
        if mask_mode == "buffer":
            self.register_buffer("causal", torch.ones(CONTEXT, CONTEXT, dtype=torch.bool).tril())

    def attention(self, x):
        batch, seq, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=-1)
        q, k, v = (t.view(batch, seq, HEADS, width // HEADS).transpose(1, 2) for t in (q, k, v))
        if self.mask_mode == "buffer":
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.causal[:seq, :seq])
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(batch, seq, width))

    def forward(self, x):
        x = x + self.attention(self.ln_attn(x))
        return x + self.fc_out(F.gelu(self.fc(self.ln_mlp(x))))


class GPT(nn.Module):
    def __init__(self, mask_mode: str = "is_causal"):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.ModuleList(Block(mask_mode) for _ in range(LAYERS))
        self.ln_final = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.head.weight = self.tok.weight  # tied

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_final(x))


def make_model(dtype: torch.dtype, mask_mode: str = "is_causal") -> GPT:
    torch.manual_seed(0)
    model = GPT(mask_mode).to(dtype)
    with torch.no_grad():  # non-trivial norm parameters, so their gradients matter
        for name, p in model.named_parameters():
            if name.endswith(("ln_attn.weight", "ln_mlp.weight", "ln_final.weight")):
                p.add_(torch.randn_like(p) * 0.1)
    return model


def tokens(seq: int = SEQ, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (BATCH, seq), generator=torch.Generator().manual_seed(seed))


def loss_of(logits: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Next-token negative log-likelihood, computed eagerly on whichever logits it gets."""
    logp = logits[:, :-1].log_softmax(-1)
    return -logp.gather(-1, idx[:, 1:, None]).mean()


def gradients(model: nn.Module, run) -> dict[str, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    idx = tokens()
    loss_of(run(idx), idx).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.parametrize("mask_mode", ["is_causal", "buffer"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_forward_matches_eager(dtype, mask_mode):
    model = make_model(dtype, mask_mode)
    jmodel = compiler.jit(model)
    idx = tokens()
    expected = model(idx)
    actual = jmodel(idx)
    assert actual.shape == (BATCH, SEQ, VOCAB) and actual.dtype == dtype
    torch.testing.assert_close(actual, expected, **TOLERANCES[dtype])
    assert actual.requires_grad, "parameters require grad, so the logits must too"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_every_parameter_gradient_matches_eager(dtype):
    model = make_model(dtype)
    expected = gradients(model, model)
    actual = gradients(model, compiler.jit(model))
    assert set(actual) == set(expected)
    assert len(expected) == len(list(model.parameters()))  # the tied weight counts once
    for name in expected:
        assert expected[name].abs().sum() > 0, f"{name}: eager gradient is zero, the test would be blind"
        torch.testing.assert_close(actual[name], expected[name], **GRAD_TOLERANCES[dtype],
                                   msg=lambda m, name=name: f"gradient of {name}: {m}")


def test_no_grad_inference_matches_eager():
    model = make_model(torch.float32)
    jmodel = compiler.jit(model)
    idx = tokens()
    with torch.no_grad():
        expected = model(idx)
        actual = jmodel(idx)
    assert not actual.requires_grad
    torch.testing.assert_close(actual, expected, **TOLERANCES[torch.float32])


def test_second_call_hits_cache_and_new_shape_recompiles():
    model = make_model(torch.float32)
    jmodel = compiler.jit(model)
    jmodel(tokens(seed=1))
    second = jmodel(tokens(seed=2))  # same metadata, other values
    assert (compiler.cache_misses(jmodel), compiler.cache_hits(jmodel)) == (1, 1)
    torch.testing.assert_close(second, model(tokens(seed=2)), **TOLERANCES[torch.float32])

    shorter = jmodel(tokens(seq=5))  # another sequence length: a new entry, not a stale one
    assert compiler.cache_misses(jmodel) == 2
    torch.testing.assert_close(shorter, model(tokens(seq=5)), **TOLERANCES[torch.float32])

    trace = str(compiler.last_traces(jmodel)[-1])
    compile(trace, "<gpt trace>", "exec")
    assert "scaled_dot_product_attention" in trace


def test_in_place_parameter_update_is_seen():
    model = make_model(torch.float32)
    jmodel = compiler.jit(model)
    idx = tokens()
    before = jmodel(idx).detach()
    with torch.no_grad():
        model.tok.weight[3].mul_(-2.0)   # also the tied head's weight
        model.blocks[1].fc.bias.add_(0.5)
        model.ln_final.weight.fill_(1.5)
    after = jmodel(idx)
    expected = model(idx)
    assert not torch.allclose(expected, before), "the update must change eager's output"
    torch.testing.assert_close(after, expected, **TOLERANCES[torch.float32])


def test_optimizer_steps_match_eager():
    """Three SGD steps through the compiled module land on the same parameters as eager's."""
    eager_model, compiled_model = make_model(torch.float64), make_model(torch.float64)
    jmodel = compiler.jit(compiled_model)
    for model, run in ((eager_model, eager_model), (compiled_model, jmodel)):
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        for step in range(3):
            idx = tokens(seed=10 + step)
            opt.zero_grad()
            loss_of(run(idx), idx).backward()
            opt.step()
    for (name, e), (_, c) in zip(eager_model.named_parameters(), compiled_model.named_parameters()):
        torch.testing.assert_close(c, e, rtol=1e-9, atol=1e-10, msg=lambda m, name=name: f"{name}: {m}")


# ---------------------------------------------------------------------------------------------------
# A llama-style decoder step with a KV cache: rotary embeddings (slicing, cat, neg), grouped-query
# attention, RMSNorm, a SwiGLU MLP, and index_copy_ into cache buffers inside forward. The buffers are
# written in place by the compiled module and must end up exactly as eager's.
# ---------------------------------------------------------------------------------------------------

KV_HEADS, HEAD_DIM, MAX_LEN = 2, WIDTH // HEADS, 16


def rotate(x, pos):
    half = x.shape[-1] // 2
    inv_freq = 1.0 / (10000 ** (torch.arange(0, half, dtype=torch.float32) / half))
    angles = pos[:, None].float() * inv_freq[None, :]
    cos, sin = torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos.to(x.dtype) + rotated * sin.to(x.dtype)


class CachedDecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_attn = nn.Parameter(torch.ones(WIDTH) + 0.1 * torch.randn(WIDTH))
        self.norm_mlp = nn.Parameter(torch.ones(WIDTH) + 0.1 * torch.randn(WIDTH))
        self.wq = nn.Linear(WIDTH, HEADS * HEAD_DIM, bias=False)
        self.wkv = nn.Linear(WIDTH, 2 * KV_HEADS * HEAD_DIM, bias=False)
        self.wo = nn.Linear(HEADS * HEAD_DIM, WIDTH, bias=False)
        self.gate = nn.Linear(WIDTH, 2 * WIDTH, bias=False)
        self.up = nn.Linear(WIDTH, 2 * WIDTH, bias=False)
        self.down = nn.Linear(2 * WIDTH, WIDTH, bias=False)
        self.register_buffer("k_cache", torch.zeros(BATCH, KV_HEADS, MAX_LEN, HEAD_DIM))
        self.register_buffer("v_cache", torch.zeros(BATCH, KV_HEADS, MAX_LEN, HEAD_DIM))

    @staticmethod
    def rms_norm(x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight

    def forward(self, x, pos):
        batch, seq, _ = x.shape
        h = self.rms_norm(x, self.norm_attn)
        q = self.wq(h).view(batch, seq, HEADS, HEAD_DIM).transpose(1, 2)
        k, v = self.wkv(h).view(batch, seq, 2 * KV_HEADS, HEAD_DIM).transpose(1, 2).chunk(2, dim=1)
        q, k = rotate(q, pos), rotate(k, pos)
        self.k_cache.index_copy_(2, pos, k)
        self.v_cache.index_copy_(2, pos, v)
        repeat = HEADS // KV_HEADS
        keys = self.k_cache[:, :, None].expand(batch, KV_HEADS, repeat, MAX_LEN, HEAD_DIM).reshape(
            batch, HEADS, MAX_LEN, HEAD_DIM)
        values = self.v_cache.repeat_interleave(repeat, dim=1)
        visible = torch.arange(MAX_LEN)[None, :] <= pos[:, None]  # causal over the filled cache
        y = F.scaled_dot_product_attention(q, keys, values, attn_mask=visible)
        x = x + self.wo(y.transpose(1, 2).reshape(batch, seq, HEADS * HEAD_DIM))
        h = self.rms_norm(x, self.norm_mlp)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def test_kv_cache_decode_matches_eager():
    torch.manual_seed(0)
    eager = CachedDecoderLayer()
    compiled_copy = CachedDecoderLayer()
    compiled_copy.load_state_dict(eager.state_dict())
    jlayer = compiler.jit(compiled_copy)
    gen = torch.Generator().manual_seed(3)
    steps = [torch.arange(0, 6), torch.tensor([6]), torch.tensor([7]), torch.tensor([8])]  # prefill, decode
    with torch.no_grad():
        for i, pos in enumerate(steps):
            x = torch.randn(BATCH, len(pos), WIDTH, generator=gen)
            expected, actual = eager(x, pos), jlayer(x, pos)
            torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5, msg=lambda m, i=i: f"step {i}: {m}")
            for name in ("k_cache", "v_cache"):
                torch.testing.assert_close(getattr(compiled_copy, name), getattr(eager, name), rtol=1e-5, atol=1e-5,
                                           msg=lambda m, name=name, i=i: f"step {i}: buffer {name}: {m}")
    assert eager.k_cache[:, :, 8].abs().sum() > 0 and eager.k_cache[:, :, 9:].abs().sum() == 0
    # prefill, then one decode shape reused for the later steps
    assert (compiler.cache_misses(jlayer), compiler.cache_hits(jlayer)) == (2, 2)
