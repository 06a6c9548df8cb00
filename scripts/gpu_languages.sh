#!/usr/bin/env bash
# The kernel languages on the GPU, in one call: DSL wheels carried in .whl/ (git-ignored)
# installed into .gpu/pylib first (a wheel, or an unpacked wheel as NAME.tar.xz, possibly
# split as NAME.tar.xz.partN over several calls); the GPU tests of the lazy languages
# (KB_TESTS_K, default "triton or cute or tilelang"); every non-CUDA candidate of solutions/
# swept with the pool compiling Triton kernels beside the GPU (flags and custom kernels of
# each record); then, unless KB_THROUGHPUT=0, bench/throughput.py on the Triton candidates
# (KB_COPIES copies each, default 4): candidates per hour and the GPU idle fraction.
#   KB_DEADLINE=400 bash scripts/gpu_languages.sh
source scripts/gpu_common.sh languages
STORE="$LOG/evals.jsonl"
mkdir -p .gpu/pylib
for whl in .whl/*.whl; do
    [ -f "$whl" ] && pip install -q --no-index --no-deps --target .gpu/pylib "$whl" 2>&1 | tail -2
done
for first in .whl/*.tar.xz.part1 .whl/*.tar.xz; do
    [ -f "$first" ] || continue
    base=${first%.part1}
    [ -f ".gpu/pylib/.unpacked_${base##*/}" ] && continue
    if [ "$first" != "$base" ]; then
        n=$(ls "$base".part* | wc -l); want=${KB_PARTS:-2}
        [ "$n" -lt "$want" ] && { echo "$base: $n of $want parts here, not unpacked yet"; continue; }
        cat $(ls "$base".part* | sort -V) | tar xJf - -C .gpu/pylib
    else
        tar xJf "$first" -C .gpu/pylib
    fi
    touch ".gpu/pylib/.unpacked_${base##*/}"; echo "unpacked $base"
done
# A target folder's .pth files are not read from PYTHONPATH: CuTe DSL's puts its packages on the path.
export PYTHONPATH=$PWD/.gpu/pylib:$PWD/.gpu/pylib/nvidia_cutlass_dsl/dsl_packages:$PYTHONPATH
python - <<'PY' | tee "$LOG/languages.txt"
from kbharness.common.languages import REGISTRY
import importlib
for lang in REGISTRY:
    for module, pip in lang.packages:
        try:
            m = importlib.import_module(module)
            print(f"{lang.label}: {module} {getattr(m, '__version__', '?')}")
        except Exception as e:
            print(f"{lang.label}: {module} NOT importable: {type(e).__name__}: {str(e)[:200]}")
PY

section "GPU tests of the lazy languages"
timeout $(( $(left) / 3 )) python -m pytest -q -m gpu tests/test_gpu.py -k "${KB_TESTS_K:-triton or cute or tilelang}" 2>&1 | tail -15 | tee "$LOG/gpu_tests.log"

section "sweep of every non-CUDA candidate, the pool compiling beside the GPU"
NONCUDA=$(ls solutions/level*/*/{triton,cute,tilelang}_*.py 2>/dev/null)
timeout $(( $(left) / 2 )) $KB sweep $NONCUDA --device cuda --time-budget 2 --build-jobs 15 --store "$STORE" -q > "$LOG/sweep.log" 2>&1
tail -12 "$LOG/sweep.log"
python - "$STORE" <<'PY' | tee "$LOG/flags.log"
import sys
from kbharness.orchestration.store import Store
for r in Store(sys.argv[1]):
    print(f"{r.problem} {r.solution_path.split('/')[-1]} [{r.language}]: {r.verdict.value} {r.speedup or 0:.2f}x "
          f"build {r.build_s or 0:.2f} s; tier {r.precision_tier or '-'}; flags {list(r.flags)}; "
          f"custom {r.kernels.get('custom', [])[:2]}; {r.message[:200]}")
PY

if [ "${KB_THROUGHPUT:-1}" = 1 ]; then
    section "throughput of the Triton candidates, cold and warm"
    timeout $(( $(left) - 20 )) python bench/throughput.py --device cuda --name triton_fused.py --copies "${KB_COPIES:-4}" \
        --sequential-sample 2 --build-jobs 15 --out "$LOG/throughput_triton.md" > "$LOG/throughput.log" 2>&1
    cat "$LOG/throughput_triton.md"
fi
for p in ${KB_PROFILE:-}; do
    [ "$(left)" -lt 60 ] && break
    section "profile of KernelBench $p"
    python scripts/kernelbench.py refs .kernelbench/KernelBench .gpu/kb_refs > /dev/null
    timeout $(( $(left) - 10 )) python scripts/profile_eval.py ".kernelbench/KernelBench/level${p%%/*}/${p#*/}.py" \
        ".gpu/kb_refs/level${p%%/*}/${p#*/}/reference.py" --memory-limit 80 --top 30 2>&1 | tee "$LOG/profile_${p//\//_}.log" | head -50
done
section "done"
