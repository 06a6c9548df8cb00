#!/usr/bin/env bash
# Every KernelBench level 1-3 reference judged against itself on the GPU, with an 80 GiB
# memory cap (KernelBench's own H100s): the tree is fetched into .kernelbench/ (git-ignored,
# never committed) and carried. Resumable: KB_STORE keeps the records, so a sweep longer
# than one device call goes on in the next. KB_LOAD=N keeps N compile jobs running on the
# CPU meanwhile (the load --build-jobs makes). KB_GPU_TESTS=1 runs the GPU tests first
# (KB_GPU_TESTS_K="expr" only those pytest -k selects, without building the CUDA fixtures);
# KB_SWEEP_PATHS sweeps part of the tree (.gpu/kb_refs/level2 .gpu/kb_refs/level3), KB_PROFILE="1/19_ReLU ..."
# first profiles those problems' evaluations (scripts/profile_eval.py). KB_EXCHANGE=1 measures
# the judge/runner boundary's cost (bench/exchange.py).
#   KB_DEADLINE=560 KB_STORE=results/h200/kernelbench/refs.jsonl bash scripts/gpu_kernelbench.sh
source scripts/gpu_common.sh kernelbench${KB_LOAD:+_loaded}
TREE=${KB_TREE:-.kernelbench/KernelBench}
STORE=${KB_STORE:-$RECORD/kernelbench/refs.jsonl}
mkdir -p "$(dirname "$STORE")"; touch "$STORE"
[ -f "$RECORD/ceilings.json" ] && mkdir -p "$KB_CACHE_DIR" && cp "$RECORD/ceilings.json" "$KB_CACHE_DIR/"
if [ "${KB_GPU_TESTS:-0}" = 1 ]; then
    section "GPU tests (their CUDA fixtures built in parallel first)"
    [ -z "${KB_GPU_TESTS_K:-}" ] && $KB build --device cuda --jobs 15 tests/fixtures/gpu/*.py > "$LOG/build.log" 2>&1
    tail -3 "$LOG/build.log" 2>/dev/null
    timeout $(( $(left) - 60 )) python -m pytest -q -m gpu tests/test_gpu.py ${KB_GPU_TESTS_K:+-k "$KB_GPU_TESTS_K"} -rf 2>&1 | tee "$LOG/gpu_tests.log" | tail -25
fi
if [ "${KB_EXCHANGE:-0}" = 1 ]; then
    section "what the judge/runner boundary costs a call"
    python bench/exchange.py --device cuda --out "$LOG/exchange.md" 2>&1 | tail -12
fi
python scripts/kernelbench.py refs "$TREE" .gpu/kb_refs
for p in ${KB_PROFILE:-}; do
    section "profile of $p"
    python scripts/profile_eval.py "$TREE/level${p%%/*}/${p#*/}.py" ".gpu/kb_refs/level${p%%/*}/${p#*/}/reference.py" \
        --memory-limit 80 --top 30 2>&1 | tee "$LOG/profile_${p//\//_}.log" | head -60
done
LOADERS=()
if [ "${KB_LOAD:-0}" -gt 0 ]; then
    INCLUDES=$(python -c "from torch.utils.cpp_extension import include_paths; print(' '.join('-I' + p for p in include_paths()))")
    echo '#include <torch/extension.h>' > .gpu/load.cpp
    for _ in $(seq "$KB_LOAD"); do
        (while true; do c++ -O2 -std=c++17 $INCLUDES -c .gpu/load.cpp -o /dev/null 2>/dev/null; done) &
        LOADERS+=($!)
    done
    section "$KB_LOAD compile jobs keep the CPU busy"
    sleep 5; uptime
fi
section "kb sweep of the references, store $STORE"
timeout -s INT $(( $(left) - 25 )) $KB sweep ${KB_SWEEP_PATHS:-.gpu/kb_refs} --problems-dir "$TREE" --device cuda --memory-limit 80 \
    --store "$STORE" --time-budget "${KB_TIME_BUDGET:-2}" ${KB_SWEEP_ARGS:-} -q > "$LOG/sweep.log" 2>&1
echo "sweep exit $?"; tail -5 "$LOG/sweep.log"
for pid in "${LOADERS[@]}"; do kill -- "$pid" 2>/dev/null; done
pkill -f load.cpp 2>/dev/null
uptime
python scripts/kernelbench.py summary "$STORE" ${KB_AGAINST:-} | tee "$LOG/summary.md"
cp "$STORE" "$OUT/"
