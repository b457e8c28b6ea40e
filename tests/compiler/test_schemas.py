"""Tags come from torch's operator schemas: the hand-written table agrees with them, and ops with no
hand-written entry get theirs (in-place, view, random, creation) by construction."""
import pytest
import torch

import compiler
from compiler.core.symbols import Tag
from compiler.torchlang.table import TORCH_SYMBOLS, derived_symbol
from compiler.torchlang.schemas import aten_name, tags_for

# Where the schema under-states aliasing (reviewed): the hand-written tag is the truer one.
SCHEMA_SILENT = {"Tensor.type_as": "returns self when the dtype already matches; the composite op's schema has no "
                                   "alias annotation"}
HAND_WRITTEN = [(sym.name, fn) for fn, sym in TORCH_SYMBOLS.items() if aten_name(fn) is not None]


def test_most_hand_written_symbols_map_to_an_aten_operator():
    assert len(HAND_WRITTEN) > 400


@pytest.mark.parametrize("name, fn", HAND_WRITTEN, ids=[n for n, _ in HAND_WRITTEN])
def test_hand_written_tags_agree_with_the_schema(name, fn):
    hand, schema = TORCH_SYMBOLS[fn].tags, tags_for(aten_name(fn))
    assert bool(hand & Tag.INPLACE) == bool(schema & Tag.INPLACE), f"{name}: INPLACE"
    assert bool(hand & Tag.RANDOM) == bool(schema & Tag.RANDOM), f"{name}: RANDOM"
    if hand & (Tag.RETURNS_VIEW | Tag.MAY_RETURN_VIEW) and name not in SCHEMA_SILENT:
        # torch annotates "may alias" (reshape) and "always a view" (transpose) alike: Tensor(a)
        assert schema & Tag.RETURNS_VIEW, f"{name}: a view by hand, no alias in the schema"
    elif not hand & Tag.INPLACE:
        assert not schema & Tag.RETURNS_VIEW, f"{name}: the schema says it returns an alias"


@pytest.mark.parametrize("fn, tags", [
    (torch.acosh, Tag.NONE),
    (torch.Tensor.acosh_, Tag.INPLACE),
    (torch.Tensor.index_reduce_, Tag.INPLACE),
    (torch.diagonal_copy, Tag.NONE),
    (torch.Tensor.view_as_real if hasattr(torch.Tensor, "view_as_real") else torch.view_as_real, Tag.RETURNS_VIEW),
    (torch.view_as_complex, Tag.RETURNS_VIEW),
    (torch.poisson, Tag.RANDOM),
    (torch.special.erfcx, Tag.NONE),
    (torch.hamming_window, Tag.CREATION),
])
def test_derived_tags(fn, tags):
    sym = derived_symbol(fn)
    assert sym is not None and sym.tags == tags


def test_python_functions_and_non_aten_natives_get_no_derived_symbol():
    assert derived_symbol(torch.nn.functional.elu) is None  # interpreted instead
    assert derived_symbol(torch.is_grad_enabled) is None


def test_derived_inplace_op_writes_the_input_as_eager_and_is_kept_in_order():
    def fn(x):
        y = x * 2
        x.index_reduce_(0, torch.tensor([0, 0]), y[:2], "amax")
        return y

    x1, x2 = torch.randn(3, 2), None
    x2 = x1.clone()
    jf = compiler.jit(fn)
    out = jf(x1)
    expected = fn(x2)
    assert torch.equal(out, expected) and torch.equal(x1, x2)
    assert any(b.symbol.name == "Tensor.index_reduce_" and b.symbol.tags & Tag.INPLACE
               for b in compiler.last_traces(jf)[-1].bsyms)


def test_derived_view_aliases_its_input_as_in_eager():
    def fn(x):
        r = torch.view_as_real(x)
        r.mul_(2)
        return r

    x = torch.randn(3, dtype=torch.complex64)
    y = x.clone()
    out = compiler.jit(fn)(x)
    assert torch.equal(x, y * 2) and out._base is x


def test_op_without_meta_kernel_is_refused_with_its_name():
    with pytest.raises(compiler.UnsupportedOpError, match="geqrf"):
        compiler.jit(lambda x: torch.geqrf(x))(torch.randn(3, 3))
