"""The torch functions the rules take to return Python values (never a tensor): each one called on real torch."""

import torch

from rules._values import TORCH_PYTHON_RESULTS

x = torch.ones(2, 3)
CALLS = {
    "torch.numel": lambda: torch.numel(x),
    "torch.result_type": lambda: torch.result_type(x, 1.0),
    "torch.promote_types": lambda: torch.promote_types(torch.int32, torch.float32),
    "torch.can_cast": lambda: torch.can_cast(torch.int32, torch.float32),
    "torch.broadcast_shapes": lambda: torch.broadcast_shapes((2, 1), (1, 3)),
    "torch.typename": lambda: torch.typename(x),
    "torch.manual_seed": lambda: torch.manual_seed(0),
    "torch.seed": lambda: torch.seed(),
    "torch.initial_seed": lambda: torch.initial_seed(),
    "torch.are_deterministic_algorithms_enabled": lambda: torch.are_deterministic_algorithms_enabled(),
    "torch.use_deterministic_algorithms": lambda: torch.use_deterministic_algorithms(
        torch.are_deterministic_algorithms_enabled()),
    "torch.compile": lambda: torch.compile(lambda t: t),
    "torch.vmap": lambda: torch.vmap(torch.sum),
}


def test_every_listed_function_is_called_here():
    assert set(CALLS) == set(TORCH_PYTHON_RESULTS)


def test_none_of_them_returns_a_tensor():
    for name, call in CALLS.items():
        assert not isinstance(call(), torch.Tensor), name
    assert isinstance(torch.numel(x), int)
