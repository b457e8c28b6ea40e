"""torch.autocast per device: the same patterns on CPU (bfloat16) and, where there is one, on a CUDA device
(float16, autocast's CUDA default), compared with eager: dtypes, devices, values, gradients, cache use.
The CUDA cases are skipped where there is no CUDA device (the CPU cases still check the same code)."""
import pytest
import torch

import compiler

DEVICES = [pytest.param("cpu", torch.bfloat16, id="cpu-bfloat16"),
           pytest.param("cuda", torch.float16, id="cuda-float16", marks=pytest.mark.skipif(
               not torch.cuda.is_available(), reason="needs a CUDA device (this machine has none)"))]


def _same(got, want) -> bool:
    return got.dtype is want.dtype and got.device == want.device and torch.equal(got, want)


@pytest.mark.parametrize("device,dtype", DEVICES)
def test_autocast_at_the_call_is_guarded_and_matches_eager(device, dtype):
    def fn(a, b):
        return torch.relu(a @ b) + 1

    jf = compiler.jit(fn)
    a = torch.randn(16, 16, device=device)
    assert _same(jf(a, a), fn(a, a))
    with torch.autocast(device, dtype=dtype):
        got, want = jf(a, a), fn(a, a)
        assert want.dtype is dtype and _same(got, want)
    assert _same(jf(a, a), fn(a, a)) and compiler.cache_misses(jf) == 2 and compiler.cache_hits(jf) == 1


@pytest.mark.parametrize("device,dtype", DEVICES)
def test_autocast_inside_the_function_follows_eagers_dtypes(device, dtype):
    def fn(a):
        with torch.autocast(device, dtype=dtype):
            h = a @ a
            return h, torch.softmax(h, -1), (h.float() + a).sum()

    a = torch.randn(8, 8, device=device)
    jfn = compiler.jit(fn)
    for _ in range(2):
        got, want = jfn(a), fn(a)
        assert want[0].dtype is dtype and all(_same(g, w) for g, w in zip(got, want))
    assert not torch._C._is_any_autocast_enabled()
    assert compiler.cache_hits(jfn) == 1


@pytest.mark.parametrize("device,dtype", DEVICES)
def test_a_training_step_under_autocast_matches_eager(device, dtype):
    def model():
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).to(device)

    eager_model, jitted_model = model(), model()
    jitted_model.load_state_dict(eager_model.state_dict())
    jm = compiler.jit(jitted_model)
    for step in range(3):
        x = torch.randn(5, 8, device=device)
        results = []
        for m in (eager_model, jm):
            with torch.autocast(device, dtype=dtype):
                out = m(x)
                loss = out.float().pow(2).mean()
            loss.backward()
            results.append((out, loss))
        assert results[0][0].dtype is dtype
        assert _same(results[1][0], results[0][0]) and _same(results[1][1], results[0][1]), step
        for p, q in zip(jitted_model.parameters(), eager_model.parameters()):
            assert torch.equal(p.grad, q.grad), step
    assert compiler.cache_hits(jm) == 2
