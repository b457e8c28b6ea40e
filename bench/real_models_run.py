"""`thunder-lint run` on a transformers training script that compiles its model with torch.compile (issue 37): a
2-layer Llama from a small config, AdamW, N steps. Against the same script run eagerly (TORCHDYNAMO_DISABLE=1,
torch.compile a no-op), both measured here, alternating: the losses must be equal, `run` must compile and check
the model (no TL003 note: nothing ran unchecked), and its wall time is compared with eager's (target <= 1.5x).

    PYTHONPATH=$PWD python3 bench/real_models_run.py [--steps 5] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SCRIPT = '''\
import sys
import torch
import transformers as tf

torch.manual_seed(0)
cfg = tf.LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, max_position_embeddings=64)
model = tf.LlamaForCausalLM(cfg)
model.train()
model = torch.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(1)
for step in range(int(sys.argv[1])):
    ids = torch.randint(0, 96, (4, 16), generator=g)
    loss = model(ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    print(f"step {step} loss {loss.item()!r}")
'''


def _timed(cmd, cwd, env) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    return time.perf_counter() - start, done


def measure(steps: int = 5, repeat: int = 1) -> dict:
    """{"eager_s", "run_s" (best of `repeat`), "losses_equal", "codes" (the findings' codes), "stdout"}."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "train.py"), "w") as f:
            f.write(SCRIPT)
        eager_s, run_s, out = [], [], {}
        for _ in range(repeat):
            t, eager = _timed([sys.executable, "train.py", str(steps)], tmp, dict(env, TORCHDYNAMO_DISABLE="1"))
            assert eager.returncode == 0, eager.stderr[-2000:]
            eager_s.append(t)
            t, ran = _timed([sys.executable, "-m", "analyzer.cli", "run", "--format", "json", "-o", "r.json",
                             "train.py", str(steps)], tmp, env)
            assert ran.returncode in (0, 1), ran.stderr[-2000:]
            run_s.append(t)
            with open(os.path.join(tmp, "r.json")) as f:
                findings = json.load(f)
            out = {"losses_equal": ran.stdout == eager.stdout, "stdout": ran.stdout, "eager_stdout": eager.stdout,
                   "codes": sorted({d["code"] for d in findings}),
                   "messages": [f"{d['code']} {d['path']}:{d['line']} {d['message'][:200]}" for d in findings]}
    return {"eager_s": min(eager_s), "run_s": min(run_s), **out}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    r = measure(args.steps, args.repeat)
    print(r["stdout"], end="")
    print(f"losses equal to eager: {r['losses_equal']}; findings: {r['codes'] or 'none'}")
    for m in r["messages"]:
        print("  " + m)
    print(f"eager (TORCHDYNAMO_DISABLE=1) {r['eager_s']:.2f} s, thunder-lint run {r['run_s']:.2f} s: "
          f"{r['run_s'] / r['eager_s']:.2f}x (best of {args.repeat})")
    return 0 if r["losses_equal"] and "TL003" not in r["codes"] else 1


if __name__ == "__main__":
    sys.exit(main())
