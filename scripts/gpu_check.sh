#!/usr/bin/env bash
# Everything that needs a GPU, in one call: build the CUDA candidates in parallel, run the
# GPU tests, compare each seed completion with its problem, and evaluate the CUDA
# candidates. Logs and the results store go to $OUT (default .gpu/out).
# Usage (repository root, on the GPU machine): bash scripts/gpu_check.sh
set -uo pipefail
OUT=${OUT:-.gpu/out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 KB_CACHE_DIR=$PWD/.gpu/cache KB_TEST_CACHE=$PWD/.gpu/cache
KB="python -m kbharness.cli"
STORE="$OUT/evals.jsonl"
L2=solutions/level2

section() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }

section "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/gpu.txt"

section "parallel build of every CUDA candidate"
$KB build --device cuda --jobs 12 $L2/*/cuda_fused.py $L2/71_*/seed_001.txt $L2/63_*/seed_002.txt \
    tests/fixtures/gpu/*.py 2>&1 | tee "$OUT/build.log"

section "GPU tests"
python -m pytest -m gpu tests/test_gpu.py -v -p no:cacheprovider 2>&1 | tee "$OUT/pytest_gpu.log" | tail -25

section "seed completions against their problems"
for pair in "71_Conv2d_Divide_LeakyReLU seed_001.txt" "63_Gemm_ReLU_Divide seed_002.txt" \
            "54_Conv2d_Multiply_LeakyReLU_GELU seed_003.txt" "97_Matmul_BatchNorm_BiasAdd_Divide_Swish seed_004.txt"; do
    set -- $pair
    $KB compare problems/level2/$1.py $L2/$1/$2 --device cuda --store "$STORE" -q 2>&1 | tee -a "$OUT/seeds.log"
done

section "CUDA candidates"
for p in 71 63 54 97; do
    dir=$(ls -d $L2/${p}_*)
    $KB run 2/$p --device cuda --solution "$dir/cuda_fused.py" --store "$STORE" -q 2>&1 | tee -a "$OUT/cuda.log"
done

section "flags and precision of every record"
python - "$STORE" <<'PY'
import sys
from kbharness.store import Store
for r in Store(sys.argv[1]):
    print(f"{r.problem} {r.solution_path.split('/')[-1]}: {r.verdict.value}; tier {r.precision_tier or '-'}; "
          f"fp64 err ref {r.ref_err_fp64} new {r.new_err_fp64}; flags {list(r.flags)}; custom {r.kernels.get('custom', [])[:3]}")
PY

section "leaderboard"
$KB leaderboard --store "$STORE" --device cuda --csv "$OUT/leaderboard.csv" 2>&1 | tee "$OUT/leaderboard.log"
