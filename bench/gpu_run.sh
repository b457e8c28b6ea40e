#!/usr/bin/env bash
# bench/gpu_run.sh: the project's nvFuser checks on the GPU machine, in one run that fits its time budget.
#
# Here first (once): bash ../shared/device/nvfuser-check.sh prepare   (builds the ignored .device/: the repacked
# nvFuser wheel for torch 2.11 and the install step). Then on the GPU machine, from the repo root, .device/ carried:
#     bash bench/gpu_run.sh
# Steps, each with a time limit inside GPU_RUN_BUDGET seconds (default 420), logs in $OUT:
#   1. install the wheel into a temporary folder; import nvfuser_direct; one fusion executed against eager;
#   2. pytest: tests/compiler/test_nvfuser_executor.py and the CUDA tier tests/cuda (pytest-xdist, a worker per
#      CPU core but two: nvFuser compiles on the CPU); what nvFuser built, ran and refused, summed over the workers: nvfuser-report.json;
#   3. bench/fusion.py --device cuda (block and GPT block: nvFuser vs eager vs torch.compile; GPU_RUN_BENCH=0: not run);
#   4. cold first calls, each in a fresh process (block and GPT block, nvFuser and torch.compile; GPU_RUN_FIRST_CALLS=0:
#      not run).
# Exit 1 if the install, the import or a test failed.
set -uo pipefail
[ -f pyproject.toml ] && [ -f .device/nvfuser-check.sh ] || { echo "run from the repo root with .device/ carried" >&2; exit 1; }
OUT=${OUT:-$PWD/.device/out}
mkdir -p "$OUT"
budget=${GPU_RUN_BUDGET:-420}
t0=$SECONDS
summary=$OUT/summary.txt
: >"$summary"
failed=0

step() {  # step NAME LIMIT CMD...: CMD with a time limit, its output to $OUT/NAME.log
    local name=$1 limit=$2 left rc s
    shift 2
    left=$((budget - (SECONDS - t0)))
    [ "$limit" -gt "$left" ] && limit=$left
    if [ "$limit" -lt 10 ]; then
        echo "$name: not run (budget of ${budget}s spent)" | tee -a "$summary"
        return 124
    fi
    echo "=== $name (limit ${limit}s)"
    s=$SECONDS
    timeout -k 5 "$limit" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    tail -n 40 "$OUT/$name.log"
    echo "$name: rc=$rc in $((SECONDS - s))s$([ "$rc" = 124 ] && echo " (timed out)")" | tee -a "$summary"
    return "$rc"
}

site=$(mktemp -d -t nvfuser-site.XXXXXX)
export NVF_PY=python3 NVF_SITE=$site
if ! step setup 90 bash .device/nvfuser-check.sh _install; then
    echo "install failed: nothing else run" | tee -a "$summary"
    exit 1
fi
export PYTHONPATH="$site:$PWD" PYTHONUNBUFFERED=1 NVFUSER_MASTER_PORT=29500  # (see nvfuser-check.sh: lazy binding)
unset LD_BIND_NOW

# 1. the import, and one fusion on the device (appended to setup.log)
if ! step import 90 python3 - <<'PYEOF'
import time, torch
t = time.perf_counter()
import nvfuser_direct
from nvfuser_direct import DataType, FusionDefinition
print(f"nvfuser_direct {nvfuser_direct.__version__}, import {time.perf_counter() - t:.1f}s; torch {torch.__version__} "
      f"CUDA {torch.version.cuda}; {torch.cuda.get_device_name(0)}")
with FusionDefinition() as fd:
    a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    c = fd.ops.mul(fd.ops.add(a, b), 2.0)
    fd.add_output(c)
    fd.add_output(fd.ops.sum(c, [1], False, DataType.Float))
x, y = (torch.randn(1024, 1000, device="cuda") for _ in range(2))
t = time.perf_counter()
outs = fd.execute([x, y])
torch.cuda.synchronize()
torch.testing.assert_close(outs[0], (x + y) * 2)
torch.testing.assert_close(outs[1], ((x + y) * 2).sum(1), rtol=1e-4, atol=1e-3)
print(f"one fusion executed on the device and equal to eager (first execute {time.perf_counter() - t:.2f}s)")
PYEOF
then
    echo "import or first fusion failed: nothing else run" | tee -a "$summary"
    exit 1
fi

# 2. the nvFuser tests and the CUDA tier
workers=$(( $(nproc) - 2 ))
[ "$workers" -lt 1 ] && workers=1
export THUNDER_LINT_NVFUSER_REPORT=$OUT/reports
step pytest 210 python3 -m pytest -q -p no:cacheprovider -n "$workers" -rfE --durations=15 --junitxml="$OUT/pytest.xml" \
    tests/compiler/test_nvfuser_executor.py tests/cuda || failed=1
python3 - "$OUT" <<'PYEOF' >>"$summary" 2>&1
import glob, json, os, sys
out = sys.argv[1]
total = {"definitions built": 0, "backwards built": 0, "executed": {"forward": 0, "backward": 0},
         "definitions refused": {}, "backwards refused": {}, "execution failures": {}}
for path in glob.glob(os.path.join(out, "reports", "*.json")):
    r = json.load(open(path))
    for k in ("definitions built", "backwards built"):
        total[k] += r[k]
    for k in ("forward", "backward"):
        total["executed"][k] += r["executed"][k]
    for k in ("definitions refused", "backwards refused"):
        for why, n in r[k].items():
            total[k][why] = total[k].get(why, 0) + n
    for why in r["execution failures"]:
        total["execution failures"][why] = total["execution failures"].get(why, 0) + 1
json.dump(total, open(os.path.join(out, "nvfuser-report.json"), "w"), indent=1)
print("nvFuser, summed over the CUDA tier's workers (definitions per worker):", json.dumps(total)[:3000])
PYEOF
grep -hE '[0-9]+ (passed|failed)' "$OUT/pytest.log" | tail -1 >>"$summary"

# 3. the bench (GPU_RUN_BENCH=0 leaves it out)
[ "${GPU_RUN_BENCH:-1}" = 0 ] || step bench 150 python3 bench/fusion.py --device cuda --rounds 5 || true

# 4. cold first calls, a fresh process each (GPU_RUN_FIRST_CALLS=0 leaves them out). torch.compile's on-disk
#    caches are pointed at an empty folder, or the bench's compiles above would make its "cold" calls warm.
export TORCHINDUCTOR_CACHE_DIR=$(mktemp -d -t inductor-cold.XXXXXX) TRITON_CACHE_DIR=$(mktemp -d -t triton-cold.XXXXXX)
[ "${GPU_RUN_FIRST_CALLS:-1}" = 0 ] && first_calls="" || first_calls="block-nvfuser block-compile gpt-nvfuser gpt-compile"
for v in $first_calls; do
    step "first-$v" 60 python3 bench/fusion.py --device cuda --first-call "$v" || true
    cat "$OUT/first-$v.log" >>"$OUT/first-calls.log"
    rm -f "$OUT/first-$v.log"
done
grep -h '^{"first_call"' "$OUT/first-calls.log" >>"$summary" 2>/dev/null
rm -rf "$OUT/reports"
echo "total $((SECONDS - t0))s" | tee -a "$summary"
echo "--- summary"; cat "$summary"
exit "$failed"
