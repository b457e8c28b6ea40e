# Report: https://github.com/pytorch/pytorch/issues/119186
# What went wrong: a compiled NumPy routine never produced compiled code: the `np.count_nonzero(res) == 1`
# branch inside its loop is data-dependent and graph-breaks, so dynamo fell back to running it eagerly.
# Reporter's shape: torch.compile(fn) over NumPy boolean arrays, nested loops with range(0, bar.shape[1])
# and an `if` on np.count_nonzero.
import numpy as np
import torch


def propagate(clauses, table):
    for clause in clauses:
        for i in range(0, table.shape[1]):  # also: TL301
            res = np.logical_xor(clause, table[i])
            if np.count_nonzero(res) == 1:  # expect: TL302
                table[i] |= res  # also: TL102, TL103
    return table


if __name__ == "__main__":
    clauses = np.random.choice([True] * 5 + [False] * 5, size=(10, 10))
    table = np.random.choice([True] + [False] * 10, size=(10, 10))
    compiled = torch.compile(propagate)
    compiled(clauses, table)
