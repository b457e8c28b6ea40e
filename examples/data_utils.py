"""Data helpers: NumPy preprocessing (copies, no aliasing hazards) and a torch collate function."""

import numpy as np
import torch


def normalize_boxes(boxes, width, height):
    """NumPy: flatten always copies, and arrays are not what this linter is about."""
    arr = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
    arr[:, 0::2] /= width
    arr[:, 1::2] /= height
    flat = arr.flatten()
    flat[flat < 0] = 0
    return arr


def make_position_ids(lengths):
    """Fresh tensors: writing into a reshape of a temporary changes nothing anyone else holds."""
    ids = torch.stack([torch.arange(n) for n in lengths]).reshape(len(lengths), -1)
    ids[:, 0] += 1
    return ids


def mask_padding_(tokens, pad_id: int):
    """Meant to mask in place: relies on reshape returning a view of the caller's tensor."""
    flat = tokens.reshape(-1)
    flat[flat == pad_id] = -100
    return tokens


def collate(batch):
    inputs = torch.nn.utils.rnn.pad_sequence([b["input_ids"] for b in batch], batch_first=True)
    labels = inputs.clone()
    mask_padding_(labels, 0)
    return {"input_ids": inputs, "labels": labels}
