#!/usr/bin/env bash
# The second GPU call, after scripts/gpu_check.sh, within $KB_DEADLINE seconds (default 520):
# memory-bound pairs under three buffer regimes (bench/buffer_placement.py), the timer-accuracy benchmark (harness vs triton's do_bench vs Nsight Compute, and the
# speedup's spread over 5 runs), then every CUDA candidate and seed completion through the
# Ray backend (its verdicts are compared with gpu_check's local-backend sweep afterwards),
# then the GPU tests when KB_GPU_TESTS=1. Ray travels as wheels in .whl (carry it). Builds
# come from .gpu/cache when the machine is still warm, else they are made first. Logs go to
# .gpu/bench and, as one archive, to $OUT/gpu_bench.tgz. Usage (repository root):
#   bash scripts/gpu_bench.sh
if ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site
fi
source scripts/gpu_common.sh bench

section "builds (from the cache when warm)"
$KB build --device cuda --jobs 14 $CANDIDATES $SEEDS tests/fixtures/gpu/*.py > "$LOG/build.log" 2>&1
tail -3 "$LOG/build.log"

section "buffer placement: memory-bound pairs under three buffer regimes"
timeout 90 python bench/buffer_placement.py --only level1/34_ --only level1/23_ --only level1/31_ \
    --out "$LOG/buffer_placement_h100.md" > "$LOG/buffer_placement.log" 2>&1
head -30 "$LOG/buffer_placement.log"

section "timer accuracy: harness, do_bench, ncu"
timeout $(( $(left) - 200 )) python bench/timer_accuracy.py --repeats 5 --only level1/23_ --only level2/63_ \
    --only level3/1_ --out "$LOG/timer_accuracy_h100.md" > "$LOG/timer_accuracy.log" 2>&1
cat "$LOG/timer_accuracy.log"

section "every CUDA candidate and seed completion: kb sweep, Ray backend"
if python -c "import ray; print('ray', ray.__version__, ray.__file__)"; then
    timeout $(( $(left) - 20 )) $KB sweep $CANDIDATES $SEEDS --device cuda --backend ray --time-budget 4 \
        --store "$LOG/sweep_ray.jsonl" -q > "$LOG/sweep_ray.log" 2>&1
    cat "$LOG/sweep_ray.log"
else
    echo "ray not importable: carry its wheels in .whl"
fi

if [ "${KB_GPU_TESTS:-0}" = 1 ]; then
    section "GPU tests with the time left"
    timeout $(( $(left) > 20 ? $(left) : 20 )) python -m pytest -m gpu tests/test_gpu.py -v -p no:cacheprovider \
        > "$LOG/pytest_gpu.log" 2>&1
    tail -20 "$LOG/pytest_gpu.log"
fi
section "done"
