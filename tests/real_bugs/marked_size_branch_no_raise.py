# Report: https://github.com/pytorch/pytorch/issues/122307
# What went wrong: branches on a dimension marked dynamic (`if x.shape[0] > 5:` then `< 5`) pinned it to the
# single value 5 without the ConstraintViolationError that mark_dynamic promises when a marked size is specialized.
# Reporter's shape: fn_2(x) with `if x.shape[0] > 5: return x.cos()`, `if x.shape[0] < 5: return x * 2`, then
# x.sin(); _x = torch.randn([5, 3, 3]); mark_dynamic(_x, 0); torch.compile(backend="inductor", dynamic=None)(fn_2)(_x).
# torch 2.13 on CPU (this file run): raises ConstraintViolationError for L['x'].size()[0] (fixed since).
import torch


def test_repro():
    def pick_by_rows(x):
        if x.shape[0] > 5:  # expect: TL301
            return x.cos()
        if x.shape[0] < 5:
            return x * 2
        return x.sin()

    torch._dynamo.reset()
    _x = torch.randn([5, 3, 3])
    torch._dynamo.mark_dynamic(_x, 0)
    torch.compile(backend="inductor", dynamic=None)(pick_by_rows)(_x)


if __name__ == "__main__":
    try:
        test_repro()
        print("no error: the marked size was specialized silently")
    except Exception as e:
        print(type(e).__name__, str(e).splitlines()[0][:100])
