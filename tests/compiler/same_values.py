"""One comparison of jitted results against eager for the symbolic-values tests.

Containers must match in type and length, tensors in shape, dtype and values (nan equals nan: eager and the
jit agree on a nan result), floats that are nan match nan, everything else by type and ==.
"""
import math

import torch


def same(out, ref, *, atol: float = 0.0, rtol: float = 0.0) -> bool:
    if isinstance(ref, (tuple, list)):
        return type(out) is type(ref) and len(out) == len(ref) and \
            all(same(o, r, atol=atol, rtol=rtol) for o, r in zip(out, ref))
    if isinstance(ref, torch.Tensor):
        return isinstance(out, torch.Tensor) and out.shape == ref.shape and out.dtype == ref.dtype and \
            torch.allclose(out, ref, rtol=rtol, atol=atol, equal_nan=True)
    if isinstance(ref, float) and math.isnan(ref):
        return type(out) is float and math.isnan(out)
    return type(out) is type(ref) and out == ref


def tensors_in(value) -> list:
    """The tensors of a result, in order, through tuples, lists and dicts' values."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in tensors_in(item)]
    return []
