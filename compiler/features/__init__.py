"""Torch features a traced program uses, one file each: autocast, RNG state and generators, module hooks (forward
and backward), custom autograd.Function, and the training-step calls that are refused (backward, optimizer steps)."""
