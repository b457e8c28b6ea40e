"""The table of supported torch ops: torch functions, their tensor-method and operator spellings,
their tags, and (where one exists) a decomposition into prims."""
from __future__ import annotations

from ..meta.functions import (from_numpy_meta, indexing_meta, where_meta, masked_select_meta, nonzero_meta, tensor_from_data_meta, to_meta, type_meta,
                              unique_meta)
from ..core import proxies
from ..core.symbols import Symbol, Tag
from . import decompositions as D
from .table import TORCH_SYMBOLS, register, register_property

I, V, MV, R, C = Tag.INPLACE, Tag.RETURNS_VIEW, Tag.MAY_RETURN_VIEW, Tag.RANDOM, Tag.CREATION


def fn_and_methods(name, tags=Tag.NONE, decomposition=None, inplace=True, function=True):
    """torch.NAME, Tensor.NAME and (if `inplace`) Tensor.NAME_ (tagged INPLACE)."""
    if function:
        register(f"torch.{name}", tags, decomposition=decomposition)
    register(f"torch.Tensor.{name}", tags, decomposition=decomposition)
    if inplace:
        register(f"torch.Tensor.{name}_", I | (tags & ~(V | MV)),
                 decomposition=D.inplace_of(decomposition) if decomposition else None)


# ---- elementwise unary ----
for n in ("abs neg negative exp exp2 expm1 log log1p log2 log10 sqrt rsqrt sin cos tan tanh sinh cosh asin "
          "acos atan sigmoid erf erfc erfinv floor ceil round trunc frac sign sgn reciprocal square "
          "logical_not bitwise_not nan_to_num relu clamp clip clamp_min clamp_max logit").split():
    fn_and_methods(n, decomposition=D.UNARY.get(n))
for n in "isnan isinf isfinite isneginf isposinf signbit".split():
    fn_and_methods(n, inplace=False)
for n in ("Tensor.__neg__", "Tensor.__pos__", "Tensor.__abs__", "Tensor.__invert__"):
    register(f"torch.{n}", V if n == "Tensor.__pos__" else Tag.NONE, decomposition=D.UNARY.get(n.split("__")[1]))
register("torch.positive", V)  # returns its input itself (schema: Tensor(a))

# ---- elementwise binary / ternary ----
for n in ("add sub subtract mul multiply div divide true_divide floor_divide remainder fmod pow float_power "
          "maximum minimum fmax fmin eq ne lt le gt ge greater greater_equal less less_equal not_equal "
          "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor bitwise_left_shift "
          "bitwise_right_shift atan2 hypot copysign xlogy lerp addcmul addcdiv masked_fill "
          "heaviside").split():
    fn_and_methods(n, decomposition=D.BINARY.get(n))
register("torch.rsub")
register("torch.where", decomposition=D.where, meta=where_meta)
register("torch.Tensor.where", decomposition=D.where_method)
for dunder, base in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"), ("floordiv", None),
                     ("mod", None), ("pow", "pow"), ("and", None), ("or", None), ("xor", None),
                     ("lshift", None), ("rshift", None), ("matmul", None)):
    dec = D.matmul if dunder == "matmul" else D.BINARY.get(base) if base else None
    register(f"torch.Tensor.__{dunder}__", decomposition=dec)
    register(f"torch.Tensor.__r{dunder}__", decomposition=D.reflected(dec) if dec else None)
    register(f"torch.Tensor.__i{dunder}__", I, decomposition=D.inplace_of(dec) if dec else None)
for n in "eq ne lt le gt ge".split():
    register(f"torch.Tensor.__{n}__", decomposition=D.BINARY.get(n))

# ---- reductions and normalizations ----
for n in "sum mean amax amin prod var std logsumexp".split():
    fn_and_methods(n, decomposition=D.REDUCTION.get(n), inplace=False)
for n in "max min argmax argmin all any var_mean std_mean cumsum cumprod norm median mode aminmax".split():
    fn_and_methods(n, inplace=False)
for n in "softmax log_softmax".split():
    fn_and_methods(n, decomposition=D.REDUCTION.get(n), inplace=False)
    register(f"torch.nn.functional.{n}", decomposition=D.REDUCTION.get(n))
register("torch.Tensor.cumsum_", I)
register("torch.nn.functional.layer_norm", decomposition=D.layer_norm)
register("torch.layer_norm", decomposition=D.layer_norm)
register("torch.nn.functional.rms_norm", decomposition=D.rms_norm)
register("torch.rms_norm", decomposition=D.rms_norm)
register("torch.nn.functional.group_norm")
register("torch.nn.functional.batch_norm")
register("torch.nn.functional.normalize")

# ---- activations, losses and other nn.functional ----
for n, dec in (("relu", D.UNARY["relu"]), ("gelu", D.gelu), ("silu", D.silu), ("tanh", D.UNARY["tanh"]),
               ("sigmoid", D.UNARY["sigmoid"]), ("leaky_relu", None), ("elu", None), ("selu", None),
               ("celu", None), ("softplus", None), ("mish", None), ("hardtanh", None), ("relu6", None),
               ("hardswish", None), ("hardsigmoid", None), ("logsigmoid", None), ("glu", None),
               ("softsign", None), ("tanhshrink", None)):
    inplace_arg = {"relu": 1, "leaky_relu": 2, "elu": 2, "selu": 1, "celu": 2, "hardtanh": 3, "relu6": 1,
                   "hardswish": 1, "hardsigmoid": 1, "silu": 1, "mish": 1}.get(n)
    register(f"torch.nn.functional.{n}", decomposition=dec, inplace_arg=inplace_arg)
register("torch.nn.functional.relu_", I)
register("torch.nn.functional.gelu")
register("torch.nn.functional.dropout", R, decomposition=D.dropout, inplace_arg=3)
register("torch.dropout", R)
register("torch.nn.functional.embedding", decomposition=D.embedding)
register("torch.embedding")
register("torch.nn.functional.scaled_dot_product_attention", R, decomposition=D.sdpa)  # dropout_p draws
register("torch.nn.functional.linear", decomposition=D.linear)
for n in ("cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy",
          "binary_cross_entropy_with_logits", "kl_div", "pad", "conv1d", "conv2d", "max_pool2d",
          "avg_pool2d", "adaptive_avg_pool2d", "interpolate", "cosine_similarity", "one_hot"):
    register(f"torch.nn.functional.{n}")

# ---- linear algebra ----
for n in "matmul mm bmm mv dot outer addmm baddbmm".split():
    fn_and_methods(n, decomposition=D.matmul if n in ("matmul", "mm", "bmm") else D.addmm if n == "addmm" else None,
                   inplace=False)
register("torch.Tensor.addmm_", I)
register("torch.Tensor.baddbmm_", I)
register("torch.einsum")
register("torch.linalg.vector_norm")
register("torch.linalg.norm")

# ---- views: always a view ----
for n in ("view view_as permute transpose swapaxes swapdims t expand expand_as squeeze unsqueeze split "
          "split_with_sizes chunk unbind narrow select movedim moveaxis diagonal unflatten unfold "
          "tensor_split hsplit vsplit as_strided detach alias real imag").split():
    fn_and_methods(n, V, decomposition=D.VIEWS.get(n), inplace=False, function=n not in ("view", "view_as",
                                                                                          "expand", "expand_as",
                                                                                          "unfold"))
for n in ("transpose_", "t_", "squeeze_", "unsqueeze_", "detach_", "as_strided_"):
    register(f"torch.Tensor.{n}", I)
register("torch.Tensor.__getitem__", V, meta=indexing_meta)  # basic indexing views; tensor indices copy (the meta tensor knows)

# ---- tensor properties that are ops (x.T, x.mT, ...): printed as attribute reads ----
for _n in ("T", "mT", "H", "mH", "real", "imag"):
    register_property(_n, V)

# `t.foo = 42` on a traced tensor: an effect op that sets the attribute on the real tensor on every call
_SET_ATTRIBUTE = Symbol("compiler.set_tensor_attribute", proxies.set_tensor_attribute, Tag.EFFECT,
                        meta=lambda sym, args, kwargs: None)
TORCH_SYMBOLS[proxies.set_tensor_attribute] = _SET_ATTRIBUTE

# ---- views: a view or a copy depending on the layout (TL101) ----
for n in "reshape flatten ravel".split():
    fn_and_methods(n, MV, decomposition=D.VIEWS.get(n), inplace=False)
register("torch.Tensor.reshape_as", MV, decomposition=D.VIEWS.get("reshape_as"))
register("torch.Tensor.contiguous", MV)
for n in ("to", "type", "float", "double", "half", "bfloat16", "int", "long", "short", "char", "byte",
          "bool", "cfloat", "type_as", "cuda", "cpu"):
    meta = to_meta if n in ("to", "cuda", "cpu") else type_meta if n == "type" else None
    register(f"torch.Tensor.{n}", MV, meta=meta,
             decomposition=D.conversion(n) if n not in ("to", "cuda", "cpu", "type") else None)

# ---- joining, indexing, scattering ----
for n in "cat concat concatenate stack hstack vstack dstack".split():
    register(f"torch.{n}", decomposition=D.cat if n in ("cat", "concat", "concatenate") else None)
for n in ("index_select gather take_along_dim scatter scatter_add scatter_reduce index_copy index_add index_fill "
          "index_put masked_scatter flip roll repeat_interleave tile tril triu diag diag_embed "
          "sort argsort topk kthvalue cummax cummin searchsorted bucketize clone").split():
    fn_and_methods(n, decomposition=D.index_select if n == "index_select" else None,
                   inplace=n in ("scatter", "scatter_add", "scatter_reduce", "index_copy", "index_add",
                                 "index_fill", "index_put", "masked_scatter", "tril", "triu"))
register("torch.Tensor.repeat")
register("torch.Tensor.expand_as", V)
register("torch.Tensor.new_tensor", C)
register("torch.Tensor.__setitem__", I, meta=indexing_meta)
register("torch.Tensor.masked_fill_", I, decomposition=D.inplace_of(D.BINARY["masked_fill"]))
register("torch.broadcast_to", V)
# value-dependent sizes: the result's length is unknown at trace time (TensorProxy.dynamic)
for _n in ("torch.masked_select", "torch.Tensor.masked_select"):
    register(_n, meta=masked_select_meta)
for _n in ("torch._unique2", "torch._C._VariableFunctions.unique_dim",
           "torch._C._VariableFunctions.unique_consecutive"):
    register(_n, meta=unique_meta)
for _n in ("torch.nonzero", "torch.Tensor.nonzero", "torch.argwhere", "torch.Tensor.argwhere"):
    register(_n, meta=nonzero_meta)
register("torch.broadcast_tensors", V)
register("torch.atleast_1d")
register("torch.atleast_2d")
register("torch.meshgrid")
register("torch.cdist")
register("torch.bincount")
register("torch.trace")
register("torch.from_numpy", C, meta=from_numpy_meta)

# ---- in-place writes that are not NAME_ of an out-of-place op ----
for n in ("copy_", "zero_", "fill_", "normal_", "uniform_", "bernoulli_", "exponential_", "random_",
          "requires_grad_", "resize_", "set_"):
    tags = I | (R if n in ("normal_", "uniform_", "bernoulli_", "exponential_", "random_") else Tag.NONE)
    register(f"torch.Tensor.{n}", tags,
             decomposition={"copy_": D.copy_, "zero_": D.zero_, "fill_": D.fill_}.get(n))

# ---- creation ----
for n in ("zeros ones full empty arange linspace logspace eye tensor as_tensor scalar_tensor empty_strided "
          "zeros_like ones_like full_like empty_like").split():
    register(f"torch.{n}", C, decomposition=D.CREATION.get(n),
             meta=tensor_from_data_meta if n in ("tensor", "as_tensor") else None)
for n in "rand randn randint randperm rand_like randn_like randint_like normal bernoulli multinomial".split():
    register(f"torch.{n}", C | R)
for n in "bernoulli multinomial".split():
    register(f"torch.Tensor.{n}", R)
for n in "new new_zeros new_ones new_full new_empty".split():
    register(f"torch.Tensor.{n}", C)
for n in "tril_indices triu_indices".split():
    register(f"torch.{n}", C)
