"""Code dead at every call site in its file (issue 31, false class 9), in a project linted end to end.

A padding layer's `pad(x, verbose=False)` prints under `if verbose:`; its module's `forward` calls `self.pad(x)`
and another file's model, which train.py compiles, calls it the same way: no call traces the print, so TL204 stays
quiet there. A helper whose `is None` branch reads tensor data, called only with a size for that parameter, is
quiet too. The twins (a call that passes verbose=True, a call that leaves the parameter None) are reported.
"""

from __future__ import annotations

import json

from cli_helpers import write

PADDING = """\
import torch
import torch.nn.functional as F


def lengths_to_mask(lengths, max_len=None):
    if max_len is None:
        max_len = lengths.max().long().item()
    return torch.arange(max_len) < lengths.unsqueeze(1)


class DomainPadding(torch.nn.Module):
    def forward(self, x):
        return self.pad(x)

    def pad(self, x, verbose=False):
        padding = [1, 1]
        if verbose:
            print("padding", x.shape, "with", padding)
        return F.pad(x, padding, mode="constant")

    def masked(self, x, lengths):
        return x * lengths_to_mask(lengths, max_len=x.shape[1])
"""

MODEL = """\
import torch

from pkg.padding import DomainPadding


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.padding = DomainPadding()

    def forward(self, x, lengths):
        x = self.padding(x)
        return self.padding.masked(x, lengths)
"""


def _findings(cli, tmp_path, padding):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "padding.py", padding)
    write(tmp_path / "pkg" / "model.py", MODEL)
    write(tmp_path / "train.py", "import torch\nfrom pkg.model import Net\n\nmodel = torch.compile(Net())\n")
    r = cli(".", "--format", "json", "--no-cache", "--select", "TL204,TL302")
    return r, {(d["path"], d["code"], d["line"]) for d in json.loads(r.out)}


def test_branches_no_call_takes_stay_quiet(cli, tmp_path):
    r, got = _findings(cli, tmp_path, PADDING)
    assert r.code == 0, (r.out, r.err)
    assert got == set()


def test_a_call_that_takes_the_branch_is_reported(cli, tmp_path):
    source = PADDING.replace("return self.pad(x)", "return self.pad(x, verbose=True)").replace(
        "lengths_to_mask(lengths, max_len=x.shape[1])", "lengths_to_mask(lengths)")
    r, got = _findings(cli, tmp_path, source)
    assert got == {("pkg/padding.py", "TL204", 18), ("pkg/padding.py", "TL302", 7)}, (r.out, r.err)
