"""Reduced copies of the distinct patterns found by the corpus audit (tests/static/CORPUS_AUDIT.md) that the
precision tests did not already hold. Each is the shape of one real transformers/torchvision site."""

import pytest

from analyzer.static import lint_source


def tl101_lines(src):
    return [d.line for d in lint_source(src, select=["TL101"], with_fixes=False)]


QUIET = {
    # data/data_collator.py: every rebinding starts from torch.arange; fancy indexing copies on the way
    "torch.flatten of a rebound fresh local": """
import torch
def perm(labels, masked):
    perm_index = torch.arange(labels.size(1))
    perm_index = perm_index.reshape((-1, labels.size(1) // 2)).transpose(0, 1)
    perm_index = perm_index[torch.randperm(labels.size(1) // 2)]
    perm_index = torch.flatten(perm_index.transpose(0, 1))
    perm_index.masked_fill_(~masked, -1)
    return perm_index
""",
    # models/sam*/processing_*.py: a deep copy, cast, then reshaped and written
    "deep copy, cast, reshape, then written": """
import torch
from copy import deepcopy
def normalize(coords, old_h, old_w, is_bounding_box=False):
    coords = deepcopy(coords).float()
    if is_bounding_box:
        coords = coords.reshape(-1, 2, 2)
    coords[..., 0] = coords[..., 0] / old_w
    coords[..., 1] = coords[..., 1] / old_h
    return coords
""",
    # models/whisper/feature_extraction_whisper.py: a tensor made from NumPy, moved and cast, then dithered
    "from_numpy(...).to(...) then augmented": """
import torch
def fbank(waveform, device, dither):
    waveform = torch.from_numpy(waveform).to(device, torch.float32)
    waveform += dither * torch.randn(waveform.shape, dtype=waveform.dtype, device=waveform.device)
    return waveform
""",
    # integrations/finegrained_fp8.py: a bmm result, transposed, reshaped, biased in place
    "reshape of a transposed matmul result": """
import torch
def forward(x, w, bias, groups, shape):
    y = torch.bmm(x, w).transpose(0, 1)
    y = y.reshape(*shape, groups, -1)
    y.add_(bias.view(groups, -1))
    return y
""",
    # models/pocket_tts/processing_pocket_tts.py: rows of a local, sliced, cast, faded in place
    "loop rows of a local, cast, then scaled": """
import torch
def decode(audio_values, num_samples, fade_in):
    out = []
    for waveform, length in zip(audio_values[:, 0], num_samples.tolist()):
        waveform = waveform[:length].float().cpu()
        waveform[: len(fade_in)] *= fade_in
        out.append(waveform)
    return out
""",
    # models/higgs_audio_v2/generation_higgs_audio_v2.py: an explicit clone before the reshape
    "clone().reshape() of an argument, then masked": """
import torch
def mask_scores(scores, mask, n, size):
    scores = scores.clone().reshape(-1, n, size)
    scores[mask] = -float("inf")
    return scores.reshape(-1, n * size)
""",
    # torchvision/transforms/v2/functional/_meta.py: the cast runs only for integer input, so it always copies
    "cast only when the dtype differs, written back explicitly": """
import torch
def cxcywh_to_xyxy(cxcywh, inplace):
    original = cxcywh
    dtype = cxcywh.dtype
    need_cast = not cxcywh.is_floating_point()
    if need_cast:
        cxcywh = cxcywh.float()
    elif not inplace:
        cxcywh = cxcywh.clone()
    half_wh = cxcywh[..., 2:] / 2
    cxcywh[..., :2].sub_(half_wh)
    cxcywh[..., 2:].add_(cxcywh[..., :2])
    if need_cast:
        cxcywh = cxcywh.to(dtype)
        if inplace:
            original[:] = cxcywh
            return original
    return cxcywh
""",
    # a loop over a list built here: nobody else holds its items
    "loop over a local list, reshape, write": """
import torch
def f(n):
    caches = [torch.zeros(n, n) for _ in range(3)]
    for c in caches:
        flat = c.reshape(-1)
        flat.mul_(0.5)
    return n
""",
    # torch.from_numpy of an array made here, never read again
    "from_numpy of a local array": """
import torch
import numpy as np
def f(n):
    a = np.zeros((n, n))
    t = torch.from_numpy(a).reshape(-1)
    t[0] = 1
    return t
""",
}

LOUD = {
    # generation/logits_process.py: the argument is reshaped (a view when contiguous) and masked in place;
    # a second write to the same reshape is the same finding
    "argument reshaped, two writes": (
        """
import torch
def __call__(input_ids, scores, n, eos):
    scores = scores.reshape(-1, n, scores.shape[-1])
    scores[:, 1:, eos:] = torch.full_like(scores[:, 1:, eos:], -float("inf"))
    scores[:, 0, eos + 1 :] = torch.full_like(scores[:, 0, eos + 1 :], -float("inf"))
    return scores.reshape(-1, scores.shape[-1])
""",
        [5],
    ),
    # the same write through a chain of two names
    "argument reshaped, written through a slice bound to another name": (
        """
import torch
def f(scores, n):
    flat = scores.reshape(-1)
    head = flat[:n]
    head.zero_()
    return scores
""",
        [6],
    ),
    # models/ernie4_5_vl_moe/video_processing_ernie4_5_vl_moe.py: each video of the argument list goes through
    # from_numpy (shares memory) and contiguous (a no-op when already contiguous, e.g. one channel), then
    # frames are drawn on in place: the caller's arrays change for some layouts only
    "loop item of an argument, from_numpy, contiguous, then written": (
        """
import numpy as np
import torch
def prepare(videos, metas, channels_last):
    out = []
    for video, meta in zip(videos, metas):
        if isinstance(video, np.ndarray):
            video = torch.from_numpy(video).contiguous()
        if channels_last:
            video = video.permute(0, 3, 1, 2).contiguous()
        for idx, frame in enumerate(video):
            video[idx] = frame * 0
        out.append(video)
    return out
""",
        [12],
    ),
    "from_numpy of an argument, flattened, written": (
        """
import torch
def f(arr):
    t = torch.from_numpy(arr).flatten()
    t[0] = 1
    return t
""",
        [5],
    ),
}


@pytest.mark.parametrize("name", list(QUIET))
def test_corpus_pattern_quiet(name):
    assert tl101_lines(QUIET[name]) == []


@pytest.mark.parametrize("name", list(LOUD))
def test_corpus_pattern_loud(name):
    src, lines = LOUD[name]
    assert tl101_lines(src) == lines
