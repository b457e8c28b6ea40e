"""transformers model families built from small configs in code (no weights, no network), called as users call
them (`model(input_ids)`: no use_cache=False), checked against eager: forward results (the model output and the
cache objects it holds), a training step's loss and gradients, cache hits on calls 2..n. Used by
tests/compiler/test_real_models.py (a quick shard) and bench/real_models.py (every family, cache mode and
executor list, with timings). torchvision's models (resnet, vit, convnext) are built from their constructors out of
its pure-Python code: its wheel's compiled operators need the CUDA build of torch (libtorch_cuda.so, libc10_cuda.so)
and fail to load with the installed CPU torch, so `torchvision_package` unpacks the wheel (and Pillow's, which
its package imports) and imports the models without running the package's __init__ (which loads the operators);
the models use none of them."""
from __future__ import annotations

import dataclasses
import os
import time

import torch

import compiler

VOCAB = 96


def _decoder(config_cls, model_cls, **extra):
    def build():
        cfg = config_cls(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, max_position_embeddings=64, **extra)
        return model_cls(cfg)
    return build


def _ids(batch=2, length=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (batch, length), generator=g)


def _families() -> dict:
    """name -> (build the model, make the positional and keyword inputs of call i)."""
    import transformers as tf

    lm = lambda i: ((_ids(seed=i),), {})  # noqa: E731
    fam = {
        "llama": (_decoder(tf.LlamaConfig, tf.LlamaForCausalLM, num_key_value_heads=2), lm),
        "mistral": (_decoder(tf.MistralConfig, tf.MistralForCausalLM, num_key_value_heads=2), lm),
        "qwen2": (_decoder(tf.Qwen2Config, tf.Qwen2ForCausalLM, num_key_value_heads=2), lm),
        "gemma": (_decoder(tf.GemmaConfig, tf.GemmaForCausalLM, num_key_value_heads=2, head_dim=8), lm),
        "phi": (_decoder(tf.PhiConfig, tf.PhiForCausalLM), lm),
        "gpt_neox": (_decoder(tf.GPTNeoXConfig, tf.GPTNeoXForCausalLM), lm),
        "gpt2": (lambda: tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
                                                           n_positions=64)), lm),
        "opt": (lambda: tf.OPTForCausalLM(tf.OPTConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                                       ffn_dim=64, num_attention_heads=4, max_position_embeddings=64,
                                                       word_embed_proj_dim=32)), lm),
        "bert": (lambda: tf.BertForMaskedLM(tf.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                                          num_attention_heads=4, intermediate_size=64,
                                                          max_position_embeddings=64)), lm),
        "t5": (lambda: tf.T5ForConditionalGeneration(tf.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64,
                                                                 num_layers=2, num_heads=4, decoder_start_token_id=0)),
               lambda i: ((_ids(seed=i),), {"decoder_input_ids": _ids(length=6, seed=100 + i)})),
        "whisper": (lambda: tf.WhisperForConditionalGeneration(tf.WhisperConfig(
            vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=8,
            max_source_positions=16, max_target_positions=32, decoder_start_token_id=1, pad_token_id=0)),
            lambda i: ((torch.randn(2, 8, 32, generator=torch.Generator().manual_seed(i)),),
                       {"decoder_input_ids": _ids(length=6, seed=100 + i)})),
        "vit": (lambda: tf.ViTForImageClassification(tf.ViTConfig(hidden_size=32, num_hidden_layers=2,
                                                                  num_attention_heads=4, intermediate_size=64,
                                                                  image_size=16, patch_size=4, num_labels=5)),
                lambda i: ((torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(i)),), {})),
    }
    return fam


FAMILIES = ("llama", "mistral", "qwen2", "gemma", "phi", "gpt_neox", "gpt2", "opt", "bert",
            "t5", "whisper", "vit")
TORCHVISION_FAMILIES = ("resnet", "tv_vit", "convnext")
DECODERS = ("llama", "mistral", "qwen2", "gemma", "phi", "gpt_neox", "gpt2", "opt")  # (mode "generate")
TORCHVISION, PILLOW = "torchvision==0.28.0", "pillow==13.0.0"  # (torchvision 0.28 goes with torch 2.13)
CORPUS = os.path.join(os.environ.get("THUNDER_LINT_BENCH_CORPUS",
                                     os.path.join(os.path.expanduser("~"), ".cache", "thunder-lint-bench")),
                      "wheels-unpacked")


def _unpacked(spec: str, fetch: bool) -> str | None:
    """The folder a wheel is unpacked in (downloaded with pip into CORPUS the first time, when `fetch`)."""
    import subprocess
    import sys
    import zipfile

    tree = os.path.join(CORPUS, spec.replace("==", "-"))
    if os.path.exists(os.path.join(tree, ".complete")):
        return tree
    if not fetch:
        return None
    wheels = os.path.join(CORPUS, "wheels")
    os.makedirs(wheels, exist_ok=True)
    name = spec.split("==")[0]
    prefix = spec.replace("==", "-").lower() + "-"
    found = lambda: [f for f in os.listdir(wheels) if f.lower().startswith(prefix)]  # noqa: E731
    if not found():
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
                               "-d", wheels, spec], capture_output=True)
        if done.returncode != 0 or not found():
            return None
    with zipfile.ZipFile(os.path.join(wheels, found()[0])) as z:
        z.extractall(tree)
    open(os.path.join(tree, ".complete"), "w").write(name)
    return tree


def torchvision_package(fetch: bool = True):
    """torchvision's model code, importable (None where its wheel is not at hand): the package's module made
    without its __init__ (which loads the compiled operators), Pillow's wheel on the path for the modules that
    import it."""
    import importlib.machinery
    import importlib.util
    import sys

    if "torchvision" in sys.modules:
        return sys.modules["torchvision"]
    trees = [_unpacked(spec, fetch) for spec in (PILLOW, TORCHVISION)]
    if None in trees:
        return None
    sys.path.append(trees[0])  # (after the installed packages: an installed Pillow wins)
    for name in ("torchvision", "torchvision.models"):
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        module = importlib.util.module_from_spec(spec)
        module.__path__ = [os.path.join(trees[1], *name.split("."))]
        sys.modules[name] = module
    return sys.modules["torchvision"]


def _torchvision_families() -> dict:
    """Small models from torchvision's own constructors (no weights)."""
    if torchvision_package() is None:
        return {}
    from torchvision.models import convnext, resnet, vision_transformer

    images = lambda i: ((torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(i)),), {})  # noqa: E731
    return {
        "resnet": (lambda: resnet.ResNet(resnet.BasicBlock, [1, 1, 1, 1], num_classes=10), images),
        "tv_vit": (lambda: vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                                                num_heads=2, hidden_dim=32, mlp_dim=64,
                                                                num_classes=10), images),
        "convnext": (lambda: convnext.ConvNeXt([convnext.CNBlockConfig(16, 32, 1), convnext.CNBlockConfig(32, None, 1)],
                                               num_classes=10), images),
    }


def _family(name: str):
    return _torchvision_families()[name] if name in TORCHVISION_FAMILIES else _families()[name]


def build(name: str, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = _family(name)[0]()
    if hasattr(model, "config"):
        model.config._attn_implementation = "sdpa" if model.config._attn_implementation is None else \
            model.config._attn_implementation
    return model


def inputs(name: str, i: int):
    return _family(name)[1](i)


def flatten(out, where="out") -> list:
    """(path, value) of every tensor and plain value in a model output, the cache objects it holds included
    (their attributes), so that two outputs compare leaf by leaf and by structure."""
    items = []
    if isinstance(out, torch.Tensor):
        return [(where, out)]
    if isinstance(out, dict):  # ModelOutput: its keys are what users see
        items.append((where + ".<type>", type(out).__qualname__))
        for k, v in out.items():
            items += flatten(v, f"{where}[{k!r}]")
        return items
    if isinstance(out, (tuple, list)):
        items.append((where + ".<type>", (type(out).__qualname__, len(out))))
        for i, v in enumerate(out):
            items += flatten(v, f"{where}[{i}]")
        return items
    if hasattr(out, "__dict__") and not isinstance(out, (torch.nn.Module, type)):
        items.append((where + ".<type>", type(out).__qualname__))
        for k, v in vars(out).items():
            items += flatten(v, f"{where}.{k}")
        return items
    return [(where, out)]


def same(a, b, fused: bool = False) -> str | None:
    """None where the two outputs are equal leaf for leaf (tensors bit for bit, dtypes, shapes, requires_grad),
    else where they differ. fused: through a fusing executor, float values within float32's rounding (a fused
    reduction adds in another order)."""
    fa, fb = flatten(a), flatten(b)
    if [p for p, _ in fa] != [p for p, _ in fb]:
        return f"structure: {[p for p, _ in fa][:8]} vs {[p for p, _ in fb][:8]}"
    for (path, x), (_, y) in zip(fa, fb):
        if isinstance(x, dict) and isinstance(y, dict):  # (gradients by parameter name)
            if x.keys() != y.keys():
                return f"{path}: keys differ"
            for k in x:
                diff = same(x[k], y[k], fused)
                if diff is not None:
                    return f"{path}[{k!r}]: {diff}"
            continue
        if isinstance(x, torch.Tensor):
            if not isinstance(y, torch.Tensor) or x.shape != y.shape or x.dtype != y.dtype or \
                    x.requires_grad != y.requires_grad:
                return f"{path}: tensors differ in metadata"
            if not torch.equal(x.detach(), y.detach()) and not (
                    fused and x.is_floating_point() and torch.allclose(x.detach(), y.detach(), rtol=1e-5, atol=1e-5)):
                return f"{path}: tensors differ (largest difference {(x.detach() - y.detach()).abs().max().item():.3g})"
        elif x != y:
            return f"{path}: {x!r} != {y!r}"
    return None


def _loss(out):
    logits = out if isinstance(out, torch.Tensor) else out["logits"] if "logits" in out else out[0]
    return logits.float().pow(2).mean()


@dataclasses.dataclass
class Result:
    family: str
    mode: str  # "forward", "train" or "generate" (decoders: a prompt and GENERATED steps per call of `check`)
    cache: str
    executors: tuple
    error: str | None = None  # None: every call equal to eager
    hits: int = 0
    misses: int = 0
    regions: int = 0  # fusion regions of the last execution trace
    segments: int = 1  # parts the trace was split into at data-dependent reads
    eager_s: float = 0.0  # one call, median of the timed calls
    jit_s: float = 0.0


def check(name: str, mode: str = "forward", cache: str = "constant values", executors=None, calls: int = 3,
          timed: int = 0, warm: int = 0) -> Result:
    """`calls` calls of the jitted model against eager on the same inputs; `timed` more calls of each, timed, after
    `warm` untimed ones (the steady state: the inductor executor recompiles a region it calls often)."""
    res = Result(name, mode, cache, tuple(executors or ()))
    model = build(name)
    model.train(mode == "train")
    jm = compiler.jit(model, cache=cache, **({"executors": executors} if executors else {}))

    def step(fn, i):
        if mode == "generate":
            return generate(fn, _ids(length=8, seed=i))
        args, kwargs = inputs(name, i % 2)
        torch.manual_seed(1000 + i)  # (training: dropout draws the same numbers in eager and compiled)
        if mode == "forward":
            with torch.no_grad():
                return fn(*args, **kwargs)
        model.zero_grad(set_to_none=True)
        out = fn(*args, **kwargs)
        loss = _loss(out)
        loss.backward()
        return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    try:
        for i in range(calls):
            expected, actual = step(model, i), step(jm, i)
            diff = same(actual, expected, fused=any(e not in ("torch", "python") for e in res.executors))
            if diff is not None:
                res.error = f"call {i}: {diff}"
                break
    except Exception as e:  # noqa: BLE001 - a refusal or crash is a result of the judge
        res.error = f"{type(e).__name__}: {str(e)[:300]}"
    res.hits, res.misses = compiler.cache_hits(jm), compiler.cache_misses(jm)
    entry = jm._jitted.last_entry
    res.segments = getattr(entry, "segment_count", 1) or 1 if entry is not None else 0
    traces = compiler.last_traces(jm) if entry is not None else []  # (a first call that raised: none)
    if traces:
        res.regions = sum(1 for b in traces[-1].bsyms if "_fusion_" in b.symbol.name)
    if timed and res.error is None and cache != "no caching":  # (no caching: every call traces, ~0.5 s)
        for i in range(warm):
            step(model, i), step(jm, i)
        res.eager_s, res.jit_s = _median_times(lambda i: step(model, i), lambda i: step(jm, i), timed)
    return res


GENERATED = 3  # decode steps of mode "generate"


def generate(fn, ids, steps: int = GENERATED):
    """Greedy decoding as `generate` does it: the prompt, then one token per call with the model's own cache
    (a DynamicCache) passed back. (the tokens, the last output)"""
    with torch.no_grad():
        out = fn(ids)
        cache, tokens = out.past_key_values, []
        for _ in range(steps):
            tokens.append(out.logits[:, -1:].argmax(-1))
            out = fn(tokens[-1], past_key_values=cache)
            if out.past_key_values is not cache:
                raise AssertionError("the cache passed back is not the one returned")
    return torch.cat(tokens, 1), out


CLOCK = [time.perf_counter]  # bench/real_models.py --clock cpu: time.process_time (one thread: CPU time is the
# call's own work, what other processes on a shared machine take is left out)


def _median_times(eager, jitted, n: int) -> tuple[float, float]:
    """Median seconds of each, their calls interleaved so that both see the same load of a shared machine."""
    times: tuple[list, list] = ([], [])
    clock = CLOCK[0]
    for i in range(n):
        for fn, out in ((eager, times[0]), (jitted, times[1])):
            start = clock()
            fn(i)
            out.append(clock() - start)
    return sorted(times[0])[n // 2], sorted(times[1])[n // 2]
