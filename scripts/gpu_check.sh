#!/usr/bin/env bash
# Everything that needs a GPU, in one call, within a time budget ($KB_DEADLINE seconds,
# default 520): every CUDA candidate built in parallel in the background while the GPU
# measures the ceilings and times every reference (the baseline file); then every CUDA
# candidate and seed completion evaluated, the speed-of-light table, the leaderboard,
# and the GPU tests with whatever time is left. Logs, the store and the baseline go to
# $OUT (default .gpu/out). Usage (repository root, on the GPU machine):
#   bash scripts/gpu_check.sh
set -uo pipefail
OUT=${OUT:-.gpu/out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 KB_CACHE_DIR=$PWD/.gpu/cache KB_TEST_CACHE=$PWD/.gpu/cache
KB="python -m kbharness.cli"
STORE="$OUT/evals.jsonl"
T0=$(date +%s)
DEADLINE=${KB_DEADLINE:-520}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
section() { echo; echo "=== $* ($(date -u +%H:%M:%S), $(left) s left)"; }
CANDIDATES=$(ls solutions/level*/*/cuda_fused.py)
SEEDS="solutions/level2/71_Conv2d_Divide_LeakyReLU/seed_001.txt solutions/level2/63_Gemm_ReLU_Divide/seed_002.txt"

section "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/gpu.txt"

section "parallel build of every CUDA candidate, in the background"
$KB build --device cuda --jobs 14 $CANDIDATES $SEEDS tests/fixtures/gpu/*.py > "$OUT/build.log" 2>&1 &
BUILD=$!

section "ceilings (measured) and the suite's work"
timeout 90 $KB roofline --all --device cuda > "$OUT/roofline_counts.log" 2>&1
cp "$KB_CACHE_DIR/ceilings.json" "$OUT/" 2>/dev/null
tail -2 "$OUT/roofline_counts.log"

section "baseline: every reference timed alone"
timeout 200 $KB baseline --device cuda --runs 50 --time-budget 1 --out "$OUT/baseline_cuda.json" > "$OUT/baseline.log" 2>&1
tail -3 "$OUT/baseline.log"

section "waiting for builds"
wait $BUILD
cat "$OUT/build.log"

section "CUDA candidates"
for c in $CANDIDATES; do
    level=$(echo "$c" | cut -d/ -f2); stem=$(echo "$c" | cut -d/ -f3)
    [ "$(left)" -gt 60 ] || { echo "skipped $c: out of time"; continue; }
    timeout 120 $KB compare "problems/$level/$stem.py" "$c" --device cuda --store "$STORE" -q 2>&1 | tee -a "$OUT/cuda.log" | tail -4
done

section "seed completions against their problems"
for pair in "71_Conv2d_Divide_LeakyReLU seed_001.txt" "63_Gemm_ReLU_Divide seed_002.txt" \
            "54_Conv2d_Multiply_LeakyReLU_GELU seed_003.txt" "97_Matmul_BatchNorm_BiasAdd_Divide_Swish seed_004.txt"; do
    set -- $pair
    [ "$(left)" -gt 40 ] || { echo "skipped $2: out of time"; continue; }
    timeout 90 $KB compare problems/level2/$1.py solutions/level2/$1/$2 --device cuda --store "$STORE" -q 2>&1 | tee -a "$OUT/seeds.log"
done

section "flags and precision of every record"
python - "$STORE" <<'PY' | tee "$OUT/flags.log"
import sys
from kbharness.store import Store
for r in Store(sys.argv[1]):
    print(f"{r.problem} {r.solution_path.split('/')[-1]}: {r.verdict.value} {r.speedup or 0:.2f}x; tier {r.precision_tier or '-'}; "
          f"flags {list(r.flags)}; custom {r.kernels.get('custom', [])[:2]}")
PY

section "speed of light, with the measured reference times"
$KB roofline --all --device cuda --baseline "$OUT/baseline_cuda.json" > "$OUT/roofline.log" 2>&1
section "leaderboard"
$KB leaderboard --store "$STORE" --device cuda --csv "$OUT/leaderboard.csv" > "$OUT/leaderboard.log" 2>&1
cat "$OUT/leaderboard.log"

section "sweep of every CUDA candidate through both backends (from the build cache)"
[ "$(left)" -gt 120 ] && $KB sweep $CANDIDATES --device cuda --backend local --store "$OUT/sweep_local.jsonl" -q \
    > "$OUT/sweep_local.log" 2>&1
if python -c "import ray" 2>/dev/null && [ "$(left)" -gt 120 ]; then
    $KB sweep $CANDIDATES --device cuda --backend ray --store "$OUT/sweep_ray.jsonl" -q > "$OUT/sweep_ray.log" 2>&1
else
    echo "ray sweep skipped: ray not importable here (carry its wheels in .whl) or out of time"
fi
tail -5 "$OUT"/sweep_*.log 2>/dev/null

section "GPU tests with the time left"
timeout $(( $(left) > 20 ? $(left) : 20 )) python -m pytest -m gpu tests/test_gpu.py -v -p no:cacheprovider > "$OUT/pytest_gpu.log" 2>&1
tail -20 "$OUT/pytest_gpu.log"
section "done"
