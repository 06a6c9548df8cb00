#!/usr/bin/env bash
# Where a sweep's time goes around and inside its evaluations on the GPU
# (scripts/sweep_overhead.py: CUDA contexts made alone and at once, each evaluation's time
# outside its record's wall_s, each record's phase_s), and a cProfile of one small evaluation
# (scripts/profile_eval.py). KB_AB="2/79 ..." picks the KernelBench references.
#   bash scripts/gpu_overhead.sh   (carry .kernelbench and .bwrap)
source scripts/gpu_common.sh overhead
TREE=${KB_TREE:-.kernelbench/KernelBench}
PICK=${KB_AB:-1/1 1/12 1/54 1/95 2/6 2/14 2/53 2/79 3/1 3/4 3/28}
pick_refs "$TREE" .gpu/overhead_refs "$PICK"
section "contexts, and each evaluation's time around its wall_s"
python scripts/sweep_overhead.py .gpu/overhead_refs "$TREE" --device cuda --memory-limit 80 2>&1 | tee "$LOG/overhead.md"
for p in ${KB_PROFILE:-2/79}; do
    section "profile of $p"
    src=$(ls -d .gpu/kb_refs/level${p%%/*}/${p#*/}_* | head -1)
    python scripts/profile_eval.py "$TREE/level${p%%/*}/$(basename "$src").py" "$src/reference.py" \
        --memory-limit 80 --time-budget 2 --top 45 2>&1 | tee "$LOG/profile_${p//\//_}.log" | head -80
done
