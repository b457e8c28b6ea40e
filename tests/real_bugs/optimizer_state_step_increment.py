# Report: https://github.com/Koratahiu/Advanced_Optimizers/pull/6
# What went wrong: an optimizer compiled its per-parameter update and bumped `state["step"]` inside it;
# torch.compile guarded on the step count's value, so the kernel recompiled on every optimizer step.
# Reporter's shape: Optimizer subclass; self._compiled_step_parameter = torch.compile(self.__step_parameter);
# step_parameter() calls it; the compiled method ends with self.state[p]['step'] += 1.
# torch 2.13 on CPU (this file run): recompiles on the guard `self.state[...]['step'] == 0` from that line, then
# makes the count dynamic.
import torch


class MomentumLike(torch.optim.Optimizer):
    def __init__(self, params, lr=0.1, compiled=True):
        super().__init__(params, dict(lr=lr))
        self._compiled_step_parameter = torch.compile(self.__step_parameter) if compiled else None

    @torch.no_grad()
    def step_parameter(self, p, group):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(p)
        if self._compiled_step_parameter is None:
            self.__step_parameter(p, group)
        else:
            self._compiled_step_parameter(p, group)

    def __step_parameter(self, p, group):
        state = self.state[p]
        state["exp_avg"].mul_(0.9).add_(p.grad, alpha=0.1)
        p.add_(state["exp_avg"], alpha=-group["lr"])
        state["step"] += 1  # expect: TL205

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.step_parameter(p, group)


if __name__ == "__main__":
    torch._logging.set_logs(recompiles=True)
    w = torch.nn.Parameter(torch.randn(4))
    opt = MomentumLike([w])
    for _ in range(4):
        w.grad = torch.randn(4) if w.grad is None else w.grad.copy_(torch.randn(4))
        opt.step()
    print("step:", opt.state[w]["step"])
