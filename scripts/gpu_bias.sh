#!/usr/bin/env bash
# A KernelBench reference judged against itself that comes out off 1.00x with a tight
# interval (2/77 ConvTranspose3d 0.77x on the H200, 3/32 0.96x on the H100): each problem
# under `kb compare` as sweeps judge it, with plain worker starts (KB_FORKSERVER=0), and
# without the sandbox and without the 80 GiB cap, one after the other, to tell which part of
# the boundary moves the runner's time; then bench/self_speedup.py on the first problem (two
# plain processes taking turns beside the harness, no cap). Logs in $OUT/gpu_bias.tgz.
#   KB_DEADLINE=300 KB_BIAS="2/77 3/32" bash scripts/gpu_bias.sh
source scripts/gpu_common.sh bias
TREE=${KB_TREE:-.kernelbench/KernelBench}
python scripts/kernelbench.py refs "$TREE" .gpu/kb_refs > /dev/null
for p in ${KB_BIAS:-2/77 3/32}; do
    problem=$(ls "$TREE/level${p%%/*}/${p#*/}"_*.py | head -1)
    candidate=$(ls -d ".gpu/kb_refs/level${p%%/*}/${p#*/}"_* | head -1)/reference.py
    for mode in default KB_FORKSERVER=0 --no-sandbox --memory-limit=0; do
        [ "$(left)" -lt 40 ] && { echo "deadline: $p $mode not run"; continue; }
        section "$p, $mode"
        case $mode in
            KB_FORKSERVER=0) env=("$mode"); args=() ;;
            --*) env=(); args=("$mode") ;;
            *) env=(); args=() ;;
        esac
        log="$LOG/${p//\//_}_${mode//[^a-z0-9]/}.log"
        env "${env[@]}" $KB compare "$problem" "$candidate" --device cuda --memory-limit 80 --time-budget 3 \
            --no-store "${args[@]}" > "$log" 2>&1
        grep -E "times (faster|slower)|^[^ ]+: " "$log" | head -6
    done
done
first=${KB_BIAS:-2/77}; first=${first%% *}
section "$first: the harness beside two plain processes (bench/self_speedup.py)"
timeout $(( $(left) > 30 ? $(left) : 30 )) python bench/self_speedup.py "$(ls "$TREE/level${first%%/*}/${first#*/}"_*.py | head -1)" \
    --device cuda --runs 3 --out "$LOG/self_speedup.md" 2>&1 | tee "$LOG/self_speedup.log" | grep -E "^run |^\|"
