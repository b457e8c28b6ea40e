"""TL205 module-state: a compiled method writes Python state of its module, or reads state that changes between calls."""

from __future__ import annotations

import ast
import re

from ._module_state import (CONSTRUCTION, EXPECTED, class_state, is_self_attr, outside_code, progressive,
                            python_value, self_name, tensor_value)
from ._torch_api import compiling_checks_in, eager_only_spans, in_spans
from .compilers import compiled_message
from .base import Finding, RuleInfo
from .walks import walk

INFO = RuleInfo(
    code="TL205",
    name="module-state",
    severity="warning",
    summary="A compiled method writes a Python attribute of its module (or of an object it holds), or reads one "
    "that other code changes between calls.",
    docs="""\
## What it does
Looks at the compiled methods of a class (a compiled module's `forward`) and reports:
- a change of a Python attribute (a number, bool or string, not a tensor) of `self` or of an object `self`
  holds: `self.counter += 1`, `self.cache.pos += n`, `self.seen = n`, or a call of a method that does one
  (`self.cache.advance(n)`); storing the same constant on every call (`self.ready = True`) is no change;
- a number kept in a dict the object holds, added to in the compiled code (`state = self.state[p]` then
  `state["step"] += 1`, where the class stores a number under that key: `state["step"] = 0`); an optimizer's
  per-parameter step count compiled into its update recompiles on the count's value. A tensor stored there
  (`torch.zeros(())`) is updated in place in the graph and stays quiet;
- a registered buffer rebound inside the compiled code (`self.buf = self.buf.to(x.dtype)`, a lazily
  created `self.buf = torch.randn(...)`): thunder keeps the buffers it found (an in-place update is fine);
  torch.compile stores the new tensor like eager, so under torch.compile this one stays quiet;
- a read of a Python number that other code changes between calls: a method of the class that is not part
  of construction (`def advance(self, n): self.pos += n`), or code that stores it on the object
  (`model.epoch = epoch`, `setattr(m, "epoch", e)`);
- a read of a Python bool or string that a script or the training loop changes between calls, directly
  (`model.use_cache = True`) or through a method (`gate.set_switch(i % 2 == 0)`). A switch only the
  library's own methods set (`set_grad_checkpointing`) is configuration chosen before use: at most a graph
  per value, and quiet.

- a read of a slot left None at construction (`self.lora_layer = None`) that a setter fills, called by a
  script between calls (`if self.lora_layer is None:` then takes the other branch).

The methods of an object the compiled call builds and keeps to itself (`solver = Solver(x); solver.solve()`:
its counters live for one call) hold no state between calls and stay quiet; the same object held by a module
or passed in as an argument outlives the call and does not.
A buffer rebound to itself (`self.buf = self.buf.detach()`, `.to(x.device)`) is no new state; a switch every
change sets to the same constant through methods that take no value (`reparameterize()`: a conversion done
once) is configuration; with no compile call found (the library default), a forward that takes only
`*args`/`**kwargs` is machinery around a model (an engine's training step, a loss schedule) and stays quiet.
An attribute is Python state when something assigns it a number, bool or string constant, adds a number to
it, or annotates it `int`/`float`/`bool`/`str`. Buffers, parameters and tensors are not Python state (an
in-place update of a buffer is data in the graph); `self.training`, which `train()`/`eval()` toggle, is
expected. Attributes set in `__init__` (or the methods only `__init__` calls) and never changed afterwards
are configuration and stay quiet.

## Why is this bad?
The attribute is a hidden input (or output) of the compiled code. torch.compile treats a module's int
attributes as constants and guards them: a counter incremented by `forward` recompiles the function on every
call until the recompile limit, after which the module runs eagerly; a flag another method toggles compiles
once per value (a number that keeps changing: a recompile per call). A compiler that bakes the value into its trace (thunder) keeps the value it saw while
tracing, and a cached trace does not repeat the Python write on every call.

## Example
```python
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.steps += 1
        return self.lin(x)

net = torch.compile(Net())
```

## Use instead
Keep the count outside the compiled code, or make it a tensor that the graph updates in place:
```python
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.steps += 1
        return self.lin(x)
```
Pass a flag that changes between calls as an argument of `forward`.

## Fix safety
There is no automatic fix.

## References
- [pytorch #115711: nn.Module int/float attributes caused re-compile](https://github.com/pytorch/pytorch/issues/115711)
- [pytorch #128319: recompilation on a counter-like attribute of nn module](https://github.com/pytorch/pytorch/issues/128319)
- [pytorch #120248: stateful `int` is not updated when using `torch.compile`](https://github.com/pytorch/pytorch/issues/120248)
- [lightning-thunder #646: updating Module.buffer leads to crash in thunder.jit](https://github.com/Lightning-AI/lightning-thunder/issues/646)
- [lightning-thunder #1951: thunder.jit ignores conditional update to buffer](https://github.com/Lightning-AI/lightning-thunder/issues/1951)
""",
    valid=[
        # a None slot filled lazily inside forward, or by a setter nothing outside the class calls
        "import torch\nimport torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = None\n    def set_proj(self, p):\n        self.proj = p\n    def forward(self, x):\n"
        "        if self.proj is None:\n            return x\n        return self.proj(x)\ncompiled = torch.compile(M())\n",
        # a tensor step in the state dict (torch.optim's capturable steps), updated in place: data in the graph
        "import torch\nclass Opt(torch.optim.Optimizer):\n    def __init__(self, params):\n"
        "        super().__init__(params, {'lr': 0.1})\n        self._update = torch.compile(self._update_param)\n"
        "    def _update_param(self, p, group):\n        state = self.state[p]\n        p.add_(p.grad, alpha=-group['lr'])\n"
        "        state['step'] += 1\n    def step(self):\n        for g in self.param_groups:\n            for p in g['params']:\n"
        "                if len(self.state[p]) == 0:\n                    self.state[p]['step'] = torch.zeros(())\n"
        "                self._update(p, g)\n",
        # configuration set in __init__ (and a setup helper only __init__ calls) and never changed: quiet
        "import torch\nfrom torch import nn\nclass Attn(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
        "        self.heads = 8\n        self.causal = True\n        self._setup()\n    def _setup(self):\n"
        "        self.scale = 0.125\n    def forward(self, x):\n        if self.causal:\n"
        "            x = x * self.scale\n        return x.reshape(x.shape[0], self.heads, -1)\nm = torch.compile(Attn(64))\n",
        # `training`, toggled by train()/eval(), is expected
        "import torch\nfrom torch import nn\nclass Drop(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.p = 0.1\n    def forward(self, x):\n        if self.training:\n            return x * 0.9\n"
        "        return x\nm = torch.compile(Drop())\nm.eval()\nm.training = False\n",
        # a buffer updated in place is data in the graph, not Python state
        "import torch\nfrom torch import nn\nclass Norm(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('steps', torch.zeros((), dtype=torch.long))\n"
        "        self.register_buffer('mean', torch.zeros(4))\n    def forward(self, x):\n        self.steps += 1\n"
        "        self.mean.mul_(0.9).add_(x.mean(0), alpha=0.1)\n        return x - self.mean\nm = torch.compile(Norm())\n",
        # a tensor kept on the module for inspection is no Python state; nor is an attribute with no evidence
        "import torch\nfrom torch import nn\nclass Attn(nn.Module):\n    def __init__(self, eps):\n        super().__init__()\n"
        "        self.eps = eps\n        self.last_attn = None\n    def set_eps(self, eps):\n        self.eps = eps\n"
        "    def forward(self, q, k):\n        a = (q @ k.T).softmax(-1)\n        self.last_attn = a.detach()\n"
        "        return a + self.eps\nm = torch.compile(Attn(1e-5))\n",
        # the write runs only in eager mode
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.calls = 0\n    def forward(self, x):\n        if not torch.compiler.is_compiling():\n"
        "            self.calls += 1\n        return x * 2\nm = torch.compile(Net())\n",
        # a switch only the library's own setters change (configuration before use): a graph per value at most
        "import torch\nfrom torch import nn\nclass Stage(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.grad_checkpointing = False\n    def forward(self, x):\n        if self.grad_checkpointing:\n"
        "            return torch.utils.checkpoint.checkpoint(torch.sin, x, use_reentrant=False)\n        return torch.sin(x)\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.stages = nn.ModuleList([Stage()])\n"
        "    def set_grad_checkpointing(self, enable=True):\n        for s in self.stages:\n"
        "            s.grad_checkpointing = enable\n    def forward(self, x):\n        for s in self.stages:\n"
        "            x = s(x)\n        return x\nm = torch.compile(Net())\n",
        # a setter a recipe's setup calls once (torchtune's set_num_output_chunks), and an attribute that holds a
        # tensor computed in forward (`1 - torch.mean(skip)`), though a float in eval
        "import torch\nfrom torch import nn\nclass Decoder(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.num_output_chunks = 0\n        self.inferred = 1.0\n    def set_num_output_chunks(self, n):\n"
        "        self.num_output_chunks = n\n    def forward(self, x):\n        if not self.training:\n"
        "            self.inferred = 1.0\n            return x\n        self.inferred = 1 - torch.mean(x)\n"
        "        if self.num_output_chunks > 0:\n            return x.chunk(self.num_output_chunks)[0]\n        return x\n"
        "class Recipe:\n    def setup(self, model):\n        self._model = torch.compile(model)\n"
        "        model.set_num_output_chunks(8)\n",
        # the same constant stored on every call is no change (`self.pos = 0` resets a slot each call)
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.ready = False\n    def forward(self, x):\n        self.ready = True\n        return x * 2\n"
        "m = torch.compile(Net())\n",
        # a buffer rebound to itself: detached (the same storage) or moved to the device it is on (speechbrain's
        # RNN layers and complex batch norm); the in-place update after it is data in the graph
        "import thunder\nimport torch\nfrom torch import nn\nclass Cell(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.register_buffer('mask', torch.ones(4))\n"
        "        self.register_buffer('seen', torch.zeros(()))\n    def forward(self, x):\n"
        "        self.mask = self.mask.to(x.device)\n        self.seen = self.seen.detach()\n        self.seen += 1\n"
        "        return x * self.mask\nm = thunder.jit(Cell())\n",
        # a one-way conversion: reparameterize() fuses the branches and sets the switch to True, once, before
        # deployment (segmentation-models-pytorch's MobileOne blocks): never toggled back between calls
        "import copy\nimport torch\nfrom torch import nn\nclass Block(nn.Module):\n    def __init__(self, inference_mode=False):\n"
        "        super().__init__()\n        self.inference_mode = inference_mode\n        self.conv = nn.Conv2d(3, 3, 3)\n"
        "    def forward(self, x):\n        if self.inference_mode:\n            return self.reparam(x)\n"
        "        return self.conv(x)\n    def reparameterize(self):\n        self.reparam = nn.Conv2d(3, 3, 3)\n"
        "        del self.conv\n        self.inference_mode = True\ndef reparameterize_model(model):\n"
        "    model = copy.deepcopy(model)\n    for m in model.modules():\n        if hasattr(m, 'reparameterize'):\n"
        "            m.reparameterize()\n    return model\nm = torch.compile(Block())\n",
        # nothing compiles the module: its state is eager
        "from torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.calls = 0\n    def forward(self, x):\n        self.calls += 1\n        return x * 2\n"
        "net = Net()\n",
    ],
    invalid=[
        # a None slot that a setter the script calls fills between calls (diffusers' LoRA layer, pytorch #120958)
        "import torch\nimport torch.nn as nn\nclass Lin(nn.Linear):\n    def __init__(self, *a):\n        super().__init__(*a)\n"
        "        self.lora_layer = None\n    def set_lora_layer(self, layer):\n        self.lora_layer = layer\n"
        "    def forward(self, x):\n        if self.lora_layer is None:\n            return super().forward(x)\n"
        "        return super().forward(x) + self.lora_layer(x)\nnet = Lin(1, 1)\ncompiled = torch.compile(net)\n"
        "compiled(torch.ones(1, 1))\nnet.set_lora_layer(nn.Linear(1, 1))\ncompiled(torch.ones(1, 1))\n",
        # a registered buffer rebound inside the compiled forward (lightning-thunder #646, #1951, #1637)
        "import thunder\nimport torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.register_buffer('buf', None, persistent=False)\n    def forward(self, x):\n"
        "        if self.buf is None:\n            self.buf = torch.randn(1, 2, device=x.device)\n        return x + self.buf\n"
        "m = thunder.jit(Net())\n",
        # a buffer rebound to a copy in another dtype: a new tensor (lightning-thunder #646's shape)
        "import thunder\nimport torch\nfrom torch import nn\nclass Cell(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.register_buffer('mask', torch.ones(4))\n    def forward(self, x):\n"
        "        self.mask = self.mask.to(x.dtype)\n        return x * self.mask\nm = thunder.jit(Cell())\n",
        # the same wrapper compiled by a call the index sees: its counter recompiles on every call
        "import torch\nfrom torch import nn\nclass ScheduledLoss(nn.Module):\n    def __init__(self, loss_fn):\n"
        "        super().__init__()\n        self.n_steps = 0\n        self.loss_fn = loss_fn\n"
        "    def forward(self, *args, **kwargs):\n        self.n_steps += 1\n        return self.loss_fn(*args, **kwargs)\n"
        "m = torch.compile(ScheduledLoss(nn.MSELoss()))\n",
        # a slot left None at construction that a setter fills between calls (pytorch #120958: diffusers' LoRA layer)
        "import torch\nfrom torch import nn\nclass LoraLinear(nn.Linear):\n    def __init__(self, *args, **kwargs):\n"
        "        super().__init__(*args, **kwargs)\n        self.lora_layer = None\n    def set_lora_layer(self, layer):\n"
        "        self.lora_layer = layer\n    def forward(self, x):\n        if self.lora_layer is None:\n"
        "            return super().forward(x)\n        return super().forward(x) + self.lora_layer(x)\n"
        "net = LoraLinear(1, 1)\ncompiled = torch.compile(net)\ncompiled(torch.ones(1, 1))\n"
        "net.set_lora_layer(nn.Linear(1, 1))\ncompiled(torch.ones(1, 1))\n",
        # a counter in forward: a recompile on every call under torch.compile (pytorch #115711)
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.counter = 0\n        self.lin = nn.Linear(4, 4)\n    def forward(self, x):\n        self.counter += 1\n"
        "        return self.lin(x)\nm = torch.compile(Net())\n",
        # a flag that the training loop toggles through a method between calls
        "import torch\nfrom torch import nn\nclass Gate(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.switch = False\n    def set_switch(self, on):\n        self.switch = on\n    def forward(self, x):\n"
        "        if self.switch:\n            return x + 1\n        return x - 1\ngate = Gate()\nm = torch.compile(gate)\n"
        "def train(batches):\n    for i, x in enumerate(batches):\n        gate.set_switch(i % 2 == 0)\n        m(x)\n",
        # a counter another method advances between calls (a position, a step)
        "import torch\nfrom torch import nn\nclass Decoder(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.pos = 0\n    def advance(self, n):\n        self.pos += n\n    def forward(self, x):\n"
        "        return x[:, self.pos:]\nm = torch.compile(Decoder())\n",
        # a switch turned on and off again by methods that take no value: a toggle, a recompile per flip
        "import torch\nfrom torch import nn\nclass Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.merged = False\n    def merge(self):\n        self.merged = True\n    def unmerge(self):\n"
        "        self.merged = False\n    def forward(self, x):\n        return x if self.merged else x + 1\n"
        "block = Block()\nm = torch.compile(block)\ndef evaluate(xs):\n    for x in xs:\n        block.merge()\n"
        "        m(x)\n        block.unmerge()\n",
        # an int attribute the training loop changes between calls
        "import torch\nfrom torch import nn\nclass Sched(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.epoch = 0\n    def forward(self, x):\n        return x * min(1.0, self.epoch / 10)\n"
        "model = Sched()\ncmodel = torch.compile(model)\nfor epoch in range(3):\n    model.epoch = epoch\n"
        "    cmodel(torch.ones(2))\n",
        # an attribute set from a constructor argument, which the script sets to another number between calls
        "import torch\nfrom torch import nn\nclass Scaled(nn.Module):\n    def __init__(self, scale):\n        super().__init__()\n"
        "        self.scale = scale\n    def forward(self, x):\n        return x * self.scale\nmodel = Scaled(1.0)\n"
        "cmodel = torch.compile(model)\ncmodel(torch.ones(2))\nmodel.scale = 0.5\ncmodel(torch.ones(2))\n",
        # a cache object's int position, advanced by a method the compiled forward calls (pytorch #120248)
        "import torch\nfrom torch import nn\nclass KVCache:\n    def __init__(self, n):\n        self.k = torch.zeros(n, 4)\n"
        "        self.pos = 0\n    def append(self, k):\n        self.k[self.pos] = k\n        self.pos += 1\n"
        "class Decoder(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.cache = KVCache(16)\n"
        "    def forward(self, k):\n        self.cache.append(k)\n        return self.cache.k.sum(0)\n"
        "m = torch.compile(Decoder())\n",
        # a step count kept in the optimizer's per-parameter state dict, bumped in the compiled update
        # (Koratahiu/Advanced_Optimizers #6: a recompile on the count's value)
        "import torch\nclass Opt(torch.optim.Optimizer):\n    def __init__(self, params):\n"
        "        super().__init__(params, {'lr': 0.1})\n        self._update = torch.compile(self._update_param)\n"
        "    def _update_param(self, p, group):\n        state = self.state[p]\n        p.add_(p.grad, alpha=-group['lr'])\n"
        "        state['step'] += 1\n    def step(self):\n        for g in self.param_groups:\n            for p in g['params']:\n"
        "                if len(self.state[p]) == 0:\n                    self.state[p]['step'] = 0\n"
        "                self._update(p, g)\n",
        # the position written through the held object directly
        "import torch\nfrom torch import nn\nclass Cache:\n    def __init__(self):\n        self.seen = 0\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.cache = Cache()\n"
        "    def forward(self, x):\n        self.cache.seen += x.shape[0]\n        return x * 2\nm = torch.compile(Net())\n",
    ],
)

_TENSOR_FLAGS = frozenset({"requires_grad", "data", "grad"})  # attributes of a tensor, never Python state of ours
_HAZARD_WRITE = "—a cached trace does not repeat the write on every call, and keeps the value it read while tracing"
_TC_WRITE = ("guards the attribute's value (a module's int attributes are constants to it): every new value "
             "recompiles, a recompile per call for a counter, and eager fallback past the recompile limit")
_HAZARD_READ = "—a compiled trace keeps the value it saw while tracing after that code changes it"
_TC_READ = "guards the attribute's value: a recompile per value it takes (eager fallback past the recompile limit)"
_FIX_BUFFER = "update it in place, or create it in __init__"
_HAZARD_BUFFER = ("—the compiled module keeps the buffers it found: a rebinding inside the trace can fail or be "
                  "dropped, leaving the module's buffer stale (lightning-thunder #646, #1951)")
_TC_BUFFER = "stores the new tensor on the module after the graph: matches eager (a recompile when a None buffer is filled)"
_FIX_WRITE = "keep it outside compiled code, or make it a buffer"
_FIX_READ = "pass it in as an argument instead"


def _numbered(text: str, matches):
    """(1-based line, match) for matches met in text order: the newlines before each, counted in C from the last
    (no list of every line's start)."""
    line, last = 1, 0
    for m in matches:
        pos = m.start()
        line += text.count("\n", last, pos)
        last = pos
        yield line, m


class _Facts:
    """Class states and the file's outside stores, built once per file and only when asked."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._states = {}
        self._outside = None
        self._stores = None

    def state(self, cls):
        got = self._states.get(id(cls))
        if got is None:
            got = self._states[id(cls)] = class_state(cls, self.ctx.index.classes)
        return got

    def number_keys(self, cls) -> frozenset:
        """String keys ``cls`` stores a number constant under, found once per class."""
        keys = self.__dict__.setdefault("_number_keys", {})
        got = keys.get(id(cls))
        if got is None:
            got = keys[id(cls)] = _number_keys(cls)
        return got

    def held(self, st, attr):
        """The state of the class of ``self.attr = Cls(...)`` when ``Cls`` is a class of this file."""
        name = st.held.get(attr)
        cls = self.ctx.index.classes.get(name) if name else None
        return self.state(cls) if cls is not None else None

    def _index_text(self):
        """One pass of the text: the lines of ``x.attr = v`` stores (x not ``self``), of ``.m(`` calls, and of
        ``setattr(``; TL205 asks about many attributes, each then a lookup."""
        text = self.ctx.source.text
        self._stores, self._calls, self._setattr = {}, None, []
        # the dot first, then the look back at `self.`: a pattern that starts with a literal is searched for that
        # character in C; one that starts with a look-behind is tried at every position of the text (4x slower).
        # The name and the spaces are taken whole (`++`, `*+`): no shorter name can be followed by what follows a name
        # (an operator, `=`, `(`), and giving back one character at a time after each of the file's dots was 2/3 of
        # the search.
        for line, m in _numbered(text, re.finditer(r"\.(?<!\bself\.)\s*+(\w++)\s*+(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)", text)):
            self._stores.setdefault(m.group(1), set()).add(line)
        self._setattr = {line for line, _ in _numbered(text, re.finditer(r"\bsetattr\s*\(", text))} \
            if "setattr" in text else set()

    def _calls_of(self, method: str) -> set:
        """Lines of ``.method(`` calls (all calls indexed on the first question: few files ask)."""
        if self._calls is None:
            self._calls = {}
            text = self.ctx.source.text
            for line, m in _numbered(text, re.finditer(r"\.\s*+(\w++)\s*+\(", text)):
                self._calls.setdefault(m.group(1), set()).add(line)
        return self._calls.get(method, set())

    def script_stored(self) -> set:
        """Attribute names the text stores on something other than ``self`` (``model.scale = ...``)."""
        if self._stores is None:
            self._index_text()
        return self._stores.keys()

    def outside(self, attr: str, setters) -> object | None:
        """Stores of ``attr`` and calls of ``setters`` outside the class, from the statements on the lines where
        the text has them; None when it has none (most attributes: no walk at all)."""
        if self._stores is None:
            self._index_text()
        lines = set(self._stores.get(attr, ())) | set(self._setattr)
        for m in setters:
            lines |= self._calls_of(m)
        if not lines:
            return None
        key = frozenset(lines)
        got = self._outside.get(key) if self._outside else None
        if got is None:
            self._outside = self._outside or {}
            got = self._outside[key] = outside_code(self.ctx.tree, lines)
        return got


def _number_change(st, attr, value, aug, restore=False) -> bool:
    """Does this store change a Python number of ``st``'s objects (``st`` None: a class we cannot see)?

    Numbers are what keeps recompiling: a counter, a position, a step. A constant stored on every call
    (``self.pos = 0``) is the same value each time, a saved value put back (``self.x = saved``) is no change, and
    a bool or a string takes at most a few values (a compiled graph each), as does a tensor none.
    """
    if attr in EXPECTED or attr in _TENSOR_FLAGS or (st is not None and attr in st.tensors):
        return False
    if value is not None and tensor_value(value):
        return False
    if aug:
        return (isinstance(value, ast.Constant) and type(value.value) in (int, float)) or (
            st is not None and attr in st.numbers)
    if value is None or isinstance(value, ast.Constant) or restore:
        return False
    return st is not None and attr in st.numbers


def _method_writes(st, method) -> list[str]:
    """Python attributes that ``method`` of ``st`` writes through ``self``."""
    out = []
    for attr, stores in st.stores.items():
        for s in stores:
            if s.method == method and _number_change(st, attr, s.value, s.aug, s.restore) and attr not in out:
                out.append(attr)
    return out


def _changer(facts, st, attr, compiled: set[str], func) -> str:
    """Who changes ``attr`` of ``st``'s objects between calls ("" when nothing does): see _module_state."""
    if attr in st.numbers:
        for s in st.writers(attr):
            m = s.method
            if m and m not in st.construction and m not in compiled and m not in ("train", "eval") and \
                    _number_change(st, attr, s.value, s.aug, s.restore) and progressive(s, attr):
                return f"`{m}`"
    setters = sorted({s.method for s in st.writers(attr) if s.method and s.method not in st.construction} - compiled)
    outside = facts.outside(attr, setters)
    if outside is None:
        return ""  # no store of the attribute, no call of a setter anywhere in the text
    if attr in st.numbers:
        for node, where, value in outside.stores.get(attr, ()):
            if where != "construction" and not _inside(node, func) and not isinstance(value, ast.Constant):
                return f"line {node.lineno}"
    if attr not in st.numbers and _one_way(st, attr, setters, outside):
        return ""
    for node, where, _ in outside.stores.get(attr, ()):
        if where == "free":
            return f"line {node.lineno}"
    for m in setters:
        for node, where in outside.calls.get(m, ()):
            if where == "free":
                return f"`{m}` (called at line {node.lineno})"
    return ""


def _one_way(st, attr, setters, outside) -> bool:
    """A switch that every change after construction sets to one and the same constant, through methods that take
    no value (``def reparameterize(self): ... self.inference_mode = True``): a conversion done once, not a toggle;
    it flips at most once in the object's life (a graph per value at most, like configuration chosen before use)."""
    values = [s.value for s in st.writers(attr) if s.method and s.method not in st.construction]
    values += [v for _, where, v in outside.stores.get(attr, ()) if where != "construction"]
    if not values or not all(isinstance(v, ast.Constant) for v in values) or len({repr(v.value) for v in values}) != 1:
        return False
    for m in setters:
        args = st.methods[m].args
        if args.args[1:] or args.posonlyargs[1:] or args.kwonlyargs or args.vararg or args.kwarg:
            return False
    return True


def _slot_filler(facts, st, attr, compiled) -> str:
    """A slot (None at construction) that a setter of the class fills, called by code outside every class (a script,
    the training loop) between calls: the compiled code's `if self.lora_layer is None:` takes the other branch
    (pytorch #120958). A setter only the library's own classes call is configuration, as for switches."""
    setters = sorted({s.method for s in st.writers(attr) if s.method and s.method not in st.construction
                      and s.value is not None and not isinstance(s.value, ast.Constant)} - compiled)
    outside = facts.outside(attr, setters) if setters else None
    for m in setters if outside is not None else ():
        for node, where in outside.calls.get(m, ()):
            if where == "free":
                return f"`{m}` (called at line {node.lineno})"
    return ""


def _set_by_script(facts, st, attr) -> str:
    """An attribute the class sets without evidence of its type, which code outside every class (a script, the
    training loop) sets to a number, bool or string constant: Python state that changes between calls."""
    if attr in st.tensors or attr not in st.stores or attr not in facts.script_stored():
        return ""
    outside = facts.outside(attr, ())
    for node, where, value in outside.stores.get(attr, ()) if outside is not None else ():
        if where == "free" and value is not None and python_value(value):
            return f"line {node.lineno}"
    return ""


# The only nodes check() and its helpers look at: calls, ifs, `is None` tests, stores and attributes. Listing only
# these, in the same order (a stable sort keeps their order among themselves), leaves the findings as they were.
_LOOKED_AT = frozenset({ast.Assign, ast.AugAssign, ast.Call, ast.Attribute, ast.If, ast.Compare})


def _in_order(func):
    """The nodes looked at, in source order. Taken from the function's node list that the other jit rules walk too
    (breadth first) rather than a walk of its own (depth first): sorted by position, the two orders are the same,
    as nodes that start at one place are an ancestor and its descendants, which both orders list outer first
    (checked on the 411,799 functions of the transformers sources, the tests and the standard library)."""
    nodes = [n for n in walk(func) if type(n) in _LOOKED_AT]
    nodes.sort(key=lambda n: (n.lineno, n.col_offset))
    return nodes


def check(ctx):
    targets = [t for t in ctx.jitted if t.info.class_node is not None]
    if not targets:
        return
    facts = _Facts(ctx)
    for target in targets:
        func = target.info.node
        me = self_name(func) if not isinstance(func, ast.Lambda) else None
        if me is None:
            continue
        if getattr(target, "per_call_self", False):
            continue  # `self` is an object the compiled call builds and drops (a solver it steps): no state between calls
        st = facts.state(target.info.class_node)
        if getattr(target, "assumed", False) and _passes_inputs_through(st):
            continue
        nodes = _in_order(func)
        called = {n.func.attr for n in nodes if type(n) is ast.Call and is_self_attr(n.func, me)}
        compiled = {func.name} | _compiled_helpers(st, called)
        # (a line naming the check is all eager_only_spans needs to find a block: without one it finds none)
        spans = eager_only_spans(func, [n for n in nodes if type(n) is ast.If]) if compiling_checks_in(ctx, func) else []
        saved = st.saved.get(func.name, {})
        done: set[str] = set()

        def report(node, key, subject, fix, hazard, tc):
            done.add(key)
            return Finding(node, **compiled_message(target, f"{target.subject} {subject}", fix, hazard, tc, "TL205"))

        stores = set()
        held_dicts = None  # locals bound to an entry of a container `self` holds (`state = self.state[p]`)
        for node in nodes:
            if spans and in_spans(node, spans):
                continue
            if type(node) is ast.AugAssign and isinstance(node.target, ast.Subscript):
                if held_dicts is None:
                    held_dicts = _held_entries(func, me)
                shown = _held_counter(node, me, held_dicts, facts, target.info.class_node)
                if shown and shown not in done:
                    yield report(node.target, shown, f"adds to the Python number `{shown}` in a container it holds",
                                 _FIX_WRITE, _HAZARD_WRITE, _TC_WRITE)
                continue
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets_ = node.targets if isinstance(node, ast.Assign) else [node.target]
                aug = isinstance(node, ast.AugAssign)
                for t in targets_:
                    if not isinstance(t, ast.Attribute):
                        continue
                    stores.add(id(t))
                    value = node.value
                    if is_self_attr(t, me):
                        key, owner, shown = t.attr, st, f"self.{t.attr}"
                    elif is_self_attr(t.value, me):
                        key, owner, shown = f"{t.value.attr}.{t.attr}", facts.held(st, t.value.attr), ctx.segment(t)
                        if t.value.attr in st.tensors:
                            continue
                    else:
                        continue
                    if owner is st and not aug and t.attr in st.buffers and _alias_of(value, me, t.attr):
                        continue  # `self.buf = self.buf.detach()` / `.to(x.device)`: the same storage, no new state
                    if owner is st and not aug and t.attr in st.buffers and key not in done:
                        if target.compiler != "torch.compile":  # torch.compile stores the new tensor (tested)
                            yield report(t, key, f"rebinds the buffer `self.{t.attr}`", _FIX_BUFFER, _HAZARD_BUFFER,
                                         _TC_BUFFER)
                        continue
                    restore = isinstance(value, ast.Name) and saved.get(value.id) == t.attr and owner is st
                    if key not in done and _number_change(owner, t.attr, value, aug, restore):
                        yield report(t, key, f"writes the Python attribute `{shown}`", _FIX_WRITE, _HAZARD_WRITE,
                                     _TC_WRITE)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                f = node.func
                if is_self_attr(f, me) and f.attr in st.methods and f.attr not in CONSTRUCTION:
                    written = [a for a in _method_writes(st, f.attr) if a not in done]
                    if written:
                        for a in written:
                            done.add(a)
                        yield report(node, f"call {f.attr}", f"calls `self.{f.attr}`, which writes the Python attribute "
                                     f"`self.{written[0]}`", _FIX_WRITE, _HAZARD_WRITE, _TC_WRITE)
                elif is_self_attr(f.value, me):
                    held = facts.held(st, f.value.attr)
                    if held is not None and f.attr in held.methods:
                        written = [a for a in _method_writes(held, f.attr) if f"{f.value.attr}.{a}" not in done]
                        if written:
                            for a in written:
                                done.add(f"{f.value.attr}.{a}")
                            yield report(node, f"call {f.value.attr}.{f.attr}",
                                         f"calls `self.{f.value.attr}.{f.attr}`, which writes the Python attribute "
                                         f"`self.{f.value.attr}.{written[0]}`", _FIX_WRITE, _HAZARD_WRITE, _TC_WRITE)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in stores:
                if is_self_attr(node, me):
                    key, owner, attr, shown = node.attr, st, node.attr, f"self.{node.attr}"
                elif is_self_attr(node.value, me):
                    owner = facts.held(st, node.value.attr)
                    key, attr, shown = f"{node.value.attr}.{node.attr}", node.attr, ctx.segment(node)
                else:
                    continue
                if key in done or owner is None or attr in EXPECTED:
                    continue
                if attr not in owner.python:
                    # `self.scale = scale` in __init__ (no evidence), `model.scale = 0.5` in the script: a number;
                    # a slot left None at construction that a script fills between calls (`set_lora_layer`)
                    by = _set_by_script(facts, owner, attr) or (
                        attr in owner.slots and _slot_filler(facts, owner, attr, compiled if owner is st else set())) \
                        or _slot_filled_between_calls(facts, owner, attr, node, nodes, compiled if owner is st else set(), func)
                else:
                    by = _changer(facts, owner, attr, compiled if owner is st else set(), func)
                if not by:
                    continue
                yield report(node, key, f"reads `{shown}`, which {by} changes between calls", _FIX_READ, _HAZARD_READ,
                             _TC_READ)


def _self_rooted(expr, me, held_dicts) -> bool:
    """Is ``expr`` reached from ``self`` through attributes and subscripts (``self.state[p]``), or a local bound to
    such an entry (``state`` after ``state = self.state[p]``)?"""
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return isinstance(expr, ast.Name) and (expr.id == me or expr.id in held_dicts)


def _held_entries(func, me) -> set[str]:
    """Locals the function binds to an entry of a container ``self`` holds: ``state = self.state[p]``."""
    out = set()
    for node in walk(func):
        if type(node) is ast.Assign and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Subscript) and _self_rooted(node.value, me, out):
            out.add(node.targets[0].id)
    return out


def _held_counter(node, me, held_dicts, facts, cls) -> str:
    """``state["step"] += 1`` on a dict ``self`` holds (an optimizer's per-parameter state): a string key says it
    is a mapping, not a tensor, and the class storing a number constant under that key (``state["step"] = 0``)
    says the entry is a Python number, not a tensor step. Its text, or ""."""
    target = node.target
    key = target.slice
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or not _self_rooted(target.value, me, held_dicts):
        return ""
    if not (isinstance(node.value, ast.Constant) and type(node.value.value) in (int, float)):
        return ""
    return ast.unparse(target) if key.value in facts.number_keys(cls) else ""


def _number_keys(cls) -> frozenset:
    """String keys the class stores a number constant under (``state["step"] = 0``)."""
    keys = set()
    for n in ast.walk(cls):
        if type(n) is ast.Assign and isinstance(n.value, ast.Constant) and type(n.value.value) in (int, float):
            keys.update(s.slice.value for s in n.targets if isinstance(s, ast.Subscript)
                        and isinstance(s.slice, ast.Constant) and isinstance(s.slice.value, str))
    return frozenset(keys)


def _passes_inputs_through(st) -> bool:
    """``def forward(self, *args, **kwargs)`` / ``(self, **batch)``: a forward with no input of its own hands what
    it gets to other code (an engine's training step, a loss schedule, a data processor around a model). The
    library default (no compile call found) takes every forward for a model's; that of such a wrapper is the
    training machinery around the model the user compiles, and its bookkeeping is no evidence of a hazard."""
    forward = st.methods.get("forward")
    if forward is None or isinstance(forward, ast.Lambda):
        return False
    args = forward.args
    return len(args.posonlyargs + args.args) <= 1 and not args.kwonlyargs and (
        args.vararg is not None or args.kwarg is not None)


def _alias_of(value, me, attr) -> bool:
    """``self.buf.detach()``, ``self.buf.data``, ``self.buf.to(x.device)``: the buffer itself or a view of its
    storage (``.to`` a device it is already on returns it), not a new tensor; ``.to(dtype)`` makes a new one."""
    if isinstance(value, ast.Attribute) and value.attr == "data":
        return is_self_attr(value.value, me) and value.value.attr == attr
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and is_self_attr(value.func.value, me)
            and value.func.value.attr == attr):
        return False
    method, args, kws = value.func.attr, value.args, value.keywords
    if method == "detach" and not args and not kws:
        return True
    if method == "to":
        def device(e):
            return (isinstance(e, ast.Attribute) and e.attr == "device") or (
                isinstance(e, ast.Name) and "device" in e.id.lower())
        return (len(args) == 1 and not kws and device(args[0])) or (
            not args and [k.arg for k in kws] == ["device"] and device(kws[0].value))
    return False


def _compiled_helpers(st, called: set[str]) -> set[str]:
    """The methods a compiled method calls as ``self.m()`` (``called``), and those they call: compiled with it."""
    seen: set[str] = set()
    frontier = [m for m in called if m in st.methods]
    seen.update(frontier)
    while frontier:
        m = frontier.pop()
        for callee in st.self_calls.get(m, ()):
            if callee in st.methods and callee not in seen:
                seen.add(callee)
                frontier.append(callee)
    return seen


def _inside(node, func) -> bool:
    return func.lineno <= node.lineno <= func.end_lineno


_last_none_tested: tuple = (None, frozenset())


def _none_tested(nodes) -> frozenset:
    """ids of the left sides of ``x is None`` / ``x is not None`` among ``nodes`` (a compiled function's, in order),
    found once per function: each attribute read asks."""
    global _last_none_tested
    if _last_none_tested[0] is not nodes:
        _last_none_tested = (nodes, frozenset(
            id(n.left) for n in nodes if type(n) is ast.Compare and len(n.ops) == 1 and type(n.ops[0]) in (ast.Is, ast.IsNot)
            and type(n.comparators[0]) is ast.Constant and n.comparators[0].value is None))
    return _last_none_tested[1]


def _slot_filled_between_calls(facts, st, attr, node, nodes, compiled, func) -> str:
    """``if self.lora_layer is None:`` on a slot that construction leaves None and a setter fills, called by a script
    between calls (diffusers' `set_lora_layer`, pytorch #120958): the branch taken depends on Python state that
    changes between calls. Who changes it, or ""."""
    if id(node) not in _none_tested(nodes):
        return ""
    stores = st.stores.get(attr, ())
    if not any(s.method in st.construction and type(s.value) is ast.Constant and s.value.value is None for s in stores):
        return ""
    if not any(s.method and s.method not in st.construction for s in stores):
        return ""
    return _changer(facts, st, attr, compiled, func)
