"""Issue 11's "done when": a training loop under compiler.jit equals eager step by step (losses, parameters).

The model has dropout (random numbers drawn in eager's order), a kv-cache kept as a module attribute
(epilogue), a bfloat16 autocast region on CPU; the loss is logged with .item() inside the jitted loss
(a data-dependent read: segments); gradients are clipped by a jitted function reading .grad; SGD with
momentum steps outside."""
import torch
import torch.nn.functional as F

import compiler


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(8, 16)
        self.drop = torch.nn.Dropout(0.2)
        self.head = torch.nn.Linear(16, 8)
        self.kv = None

    def forward(self, x):
        h = self.drop(torch.relu(self.embed(x)))
        # a kv cache kept on the module: the last 4 rows of keys seen so far
        self.kv = h.detach()[-4:] if self.kv is None else torch.cat([self.kv, h.detach()], 0)[-4:]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = self.head(h + self.kv.mean(0))
        return out.float()


def loss_and_log(out, target):
    loss = F.mse_loss(out, target)
    return loss, round(loss.item(), 4)  # .item() for logging


def clip_(max_norm, *params):
    total = torch.stack([p.grad.norm() for p in params]).norm()
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for p in params:
        p.grad.mul_(scale)
    return total


def _train(model, forward, loss_fn, clip, steps=20):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(1)
    losses, logged, norms = [], [], []
    torch.manual_seed(123)  # dropout's random numbers
    for _ in range(steps):
        x, y = torch.randn(6, 8, generator=data), torch.randn(6, 8, generator=data)
        opt.zero_grad()
        loss, shown = loss_fn(forward(x), y)
        loss.backward()
        norms.append(clip(0.5, *model.parameters()))
        opt.step()
        losses.append(loss.detach())
        logged.append(shown)
    return losses, logged, norms


def test_twenty_training_steps_equal_eager():
    torch.manual_seed(0)
    eager_model, jit_model = TinyLM(), TinyLM()
    jit_model.load_state_dict(eager_model.state_dict())

    eager = _train(eager_model, eager_model, loss_and_log, clip_)
    jm, jloss, jclip = compiler.jit(jit_model), compiler.jit(loss_and_log), compiler.jit(clip_)
    jitted = _train(jit_model, jm, jloss, jclip)
    assert compiler.last_segment_count(jloss) == 2  # the .item() split the loss trace
    assert "autocast" in str(compiler.last_traces(jm)[-1]) and "store" in str(compiler.last_traces(jm)[-1])
    assert compiler.cache_hits(jclip) == 19  # .grad are inputs: the clipping trace is reused

    for got, want in zip(jitted, eager):
        assert len(got) == len(want) == 20
        for g, w in zip(got, want):
            assert torch.equal(torch.as_tensor(g), torch.as_tensor(w))
    for (name, p), q in zip(jit_model.named_parameters(), eager_model.parameters()):
        assert torch.equal(p, q), name
    assert torch.equal(jit_model.kv, eager_model.kv)
    assert jm.training and jit_model.training
