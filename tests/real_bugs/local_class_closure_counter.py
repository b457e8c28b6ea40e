# Report: https://github.com/pytorch/pytorch/issues/197896
# What went wrong: a method of a class defined in an enclosing function mutated a dict captured from that
# function (`state["n"] += 1`); called from inside the compiled function, the mutation was silently dropped
# (the dict stayed at 0; eager counts every call). Reporter's shape: make(): state = {"n": 0}; class Helper
# with touch() doing state["n"] += 1; a compiled fn that builds Helper() and calls touch();
# torch.compile(fn, backend="eager", fullgraph=True).
# torch 2.13 on CPU (this file run): still dropped (prints 0 calls counted; eager counts 3).
import torch


def make_counted_step():
    state = {"n": 0}

    class Touch:
        def touch(self):
            state["n"] += 1  # expect: TL203

    def step(x):
        Touch().touch()
        return x + 1

    return step, state


if __name__ == "__main__":
    step, state = make_counted_step()
    compiled = torch.compile(step, backend="eager", fullgraph=True)
    for _ in range(3):
        compiled(torch.ones(2))
    print("calls counted:", state["n"], "(eager counts 3)")
