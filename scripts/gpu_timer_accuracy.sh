#!/usr/bin/env bash
# The timer-accuracy table (bench/timer_accuracy.py: the harness's events, triton's do_bench,
# Nsight Compute and the judge's clock) for the CUDA candidates whose paths contain one of
# KB_TIMER_ONLY (default 1/34 and 2/63), built in parallel first; the table is written to
# $OUT/timer_accuracy.md.
#   KB_DEADLINE=300 bash scripts/gpu_timer_accuracy.sh
source scripts/gpu_common.sh timer_accuracy
ONLY=${KB_TIMER_ONLY:-level1/34_ level2/63_}
PICKED=$(for o in $ONLY; do ls solutions/$o*/cuda_fused.py; done)
section "building $PICKED"
$KB build --device cuda --jobs 4 --cache-dir "$KB_CACHE_DIR" $PICKED > "$LOG/build.log" 2>&1
tail -3 "$LOG/build.log"
section "bench/timer_accuracy.py"
timeout $(( $(left) - 10 )) python bench/timer_accuracy.py --repeats "${KB_REPEATS:-5}" $(for o in $ONLY; do echo --only "$o"; done) \
    --out "$OUT/timer_accuracy.md" 2>&1 | tee "$LOG/timer_accuracy.log" | tail -20
cat "$OUT/timer_accuracy.md" 2>/dev/null
