#!/usr/bin/env bash
# The committed leaderboard of this GPU model (results/<model>/evals.jsonl), reproduced the
# way a user would: every CUDA candidate and seed built in parallel, then one `kb run` per
# solved problem, set against the committed records (--against: a verdict that changed, or
# a speedup that moved beyond its CI and 2%, is marked), then the leaderboard of the new
# records. Logs to .gpu/reproduce and $OUT/gpu_reproduce.tgz. Usage (on the GPU machine):
#   bash scripts/gpu_reproduce.sh
source scripts/gpu_common.sh reproduce
STORE="$LOG/evals.jsonl"
[ -f "$RECORD/evals.jsonl" ] || { echo "$RECORD/evals.jsonl: no committed record for this GPU (scripts/gpu_check.sh makes one)"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$LOG/gpu.txt"

section "parallel build of every CUDA candidate and seed"
$KB build --device cuda --jobs 15 $CANDIDATES $SEEDS > "$LOG/build.log" 2>&1
tail -3 "$LOG/build.log"

for dir in $(dirname $CANDIDATES $SEEDS | sort -u); do
    key=$(sed 's#solutions/level\([0-9]*\)/\([0-9]*\)_.*#\1/\2#' <<< "$dir")
    section "kb run $key"
    timeout $(( $(left) > 30 ? $(left) - 30 : 1 )) $KB run "$key" --device cuda --time-budget 4 \
        $(ls "$dir"/cuda_*.py "$dir"/seed_*.txt 2>/dev/null | sed 's/^/--solution /') \
        --store "$STORE" --against "$RECORD/evals.jsonl" -q 2>&1 | tee -a "$LOG/run.log" | grep -v "^[┏┃┡│└]"
done

section "leaderboard of the kb run records"
$KB leaderboard --store "$STORE" --device cuda --csv "$LOG/leaderboard.csv" 2>&1 | tee "$LOG/leaderboard.log"
section "done"
