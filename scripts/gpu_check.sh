#!/usr/bin/env bash
# The GPU record, in one call, within a time budget ($KB_DEADLINE seconds, default 520):
# every CUDA candidate built in parallel in the background while the GPU measures the
# ceilings and times every reference (the baseline file); then every CUDA candidate and
# seed completion evaluated (kb sweep, local backend), the speed-of-light table, the
# leaderboard, and the GPU tests with whatever time is left. KB_BASELINE=0 skips the
# ceilings and the baseline and uses the committed ones; KB_SPREAD names the pairs whose
# between-process spread is measured (default level1/34_; KB_SPREAD= for none). The committed
# record of a GPU model lives in results/<model>; scripts/gpu_reproduce.sh checks it with kb run.
# scripts/gpu_bench.sh is the second call (Ray backend, timer accuracy); bench/throughput.py
# the third. Logs, the
# store and the baseline go to .gpu/check and, as one archive (the device tool returns
# few files), to $OUT/gpu_check.tgz. Usage (repository root, on the GPU machine):
#   bash scripts/gpu_check.sh
source scripts/gpu_common.sh check
STORE="$LOG/evals.jsonl"

section "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$LOG/gpu.txt"
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$LOG/gpu.txt"

section "parallel build of every CUDA candidate, in the background"
$KB build --device cuda --jobs 15 $CANDIDATES $SEEDS tests/fixtures/gpu/*.py > "$LOG/build.log" 2>&1 &
BUILD=$!

BASELINE=$RECORD/baseline_cuda.json
if [ "${KB_BASELINE:-1}" = 1 ]; then
    section "ceilings (measured) and the suite's work"
    timeout 90 $KB roofline --all --device cuda > "$LOG/roofline_counts.log" 2>&1
    cp "$KB_CACHE_DIR/ceilings.json" "$LOG/" 2>/dev/null
    tail -2 "$LOG/roofline_counts.log"

    section "baseline: every reference timed alone"
    BASELINE=$LOG/baseline_cuda.json
    timeout 200 $KB baseline --device cuda --runs 50 --time-budget 1 --out "$BASELINE" > "$LOG/baseline.log" 2>&1
    tail -3 "$LOG/baseline.log"
else
    section "ceilings and baseline: the committed ones in $RECORD (KB_BASELINE=0)"
    if [ ! -f "$RECORD/ceilings.json" ] || [ ! -f "$BASELINE" ]; then
        echo "$RECORD has no ceilings.json and baseline_cuda.json for this GPU: run with KB_BASELINE=1"; exit 1
    fi
    mkdir -p "$KB_CACHE_DIR"; cp "$RECORD/ceilings.json" "$KB_CACHE_DIR/"
fi

section "waiting for builds"
wait $BUILD
cat "$LOG/build.log"

section "every CUDA candidate and seed completion: kb sweep, local backend"
timeout $(( $(left) - 150 )) $KB sweep $CANDIDATES $SEEDS --device cuda --backend local --time-budget 4 \
    --store "$STORE" -q > "$LOG/sweep_local.log" 2>&1
cat "$LOG/sweep_local.log"

section "flags and precision of every record"
python - "$STORE" <<'PY' | tee "$LOG/flags.log"
import sys
from kbharness.orchestration.store import Store
for r in Store(sys.argv[1]):
    print(f"{r.problem} {r.solution_path.split('/')[-1]}: {r.verdict.value} {r.speedup or 0:.2f}x; tier {r.precision_tier or '-'}; "
          f"flags {list(r.flags)}; custom {r.kernels.get('custom', [])[:2]}")
PY

section "speed of light, with the measured reference times"
$KB roofline --all --device cuda --baseline "$BASELINE" > "$LOG/roofline.log" 2>&1
section "leaderboard"
$KB leaderboard --store "$STORE" --device cuda --csv "$LOG/leaderboard.csv" > "$LOG/leaderboard.log" 2>&1
cat "$LOG/leaderboard.log"

SPREAD=${KB_SPREAD-level1/34_}
if [ -n "$SPREAD" ]; then
    section "between-process spread of memory-bound pairs ($SPREAD), with ncu"
    timeout $(( 90 * $(wc -w <<< "$SPREAD") )) python bench/timer_accuracy.py --repeats 5 \
        $(printf -- '--only %s ' $SPREAD) --out "$LOG/timer_accuracy_spread.md" > "$LOG/timer_accuracy_spread.log" 2>&1
    cat "$LOG/timer_accuracy_spread.log"
fi

section "GPU tests with the time left"
timeout $(( $(left) > 20 ? $(left) : 20 )) python -m pytest -m gpu tests/test_gpu.py -v -p no:cacheprovider > "$LOG/pytest_gpu.log" 2>&1
tail -20 "$LOG/pytest_gpu.log"
section "done"
