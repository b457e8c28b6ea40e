"""The list of torch.Tensor's public attributes the rules use to tell a tensor from an object that looks like one."""

import torch

from rules._tensor_attributes import TENSOR_ATTRIBUTES


def test_the_list_is_torch_tensors_public_attributes():
    public = {a for a in dir(torch.Tensor) if not a.startswith("_")}
    assert public - TENSOR_ATTRIBUTES == set(), "regenerate rules/_tensor_attributes.py from dir(torch.Tensor)"
    assert TENSOR_ATTRIBUTES - public == set()


def test_a_jagged_tensor_container_has_attributes_tensors_lack():
    # what the check keys on: torchrec's KeyedJaggedTensor API (`keys`, `variable_stride_per_key`) is not a tensor's
    assert {"keys", "variable_stride_per_key", "lengths_or_none"}.isdisjoint(TENSOR_ATTRIBUTES)
    assert {"sum", "any", "to", "shape", "item"} <= TENSOR_ATTRIBUTES
