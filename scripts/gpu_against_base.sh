#!/usr/bin/env bash
# This tree against an earlier one on the same GPU, same problems, one after the other: each
# KernelBench reference judged against itself by both (`kb sweep`), then the time per
# evaluation of each problem side by side, the sweeps' own walls, and any verdict or flag
# that differs. The earlier tree's `kbharness/` is carried in .base/ (git-ignored):
#   git -C BASE_CHECKOUT archive HEAD kbharness | tar x -C .base
# KB_AB="1/1 1/12 2/6 ..." picks the problems (default: a mix of the three levels);
# KB_GPU_TESTS=1 runs the GPU tests after, in the time left; KB_PROFILE="1/12 ..." profiles this tree's
# evaluations of those (scripts/profile_eval.py).
#   KB_DEADLINE=560 bash scripts/gpu_against_base.sh
source scripts/gpu_common.sh against_base
TREE=${KB_TREE:-.kernelbench/KernelBench}
ROOT=$PWD
PICK=${KB_AB:-1/1 1/12 1/19 1/23 1/40 1/54 1/63 1/76 1/87 1/95 2/6 2/14 2/53 2/79 2/10 3/1 3/4 3/9 3/20 3/28 3/35 3/44}
section "what a fresh process's first call of each library costs"
python - <<'PY' 2>&1 | tee "$LOG/first_calls.log"
import time
t = time.perf_counter()
import torch
import torch.nn.functional as F
print(f"import torch {time.perf_counter() - t:.3f} s")
def first(name, fn):
    t = time.perf_counter(); fn(); torch.cuda.synchronize(); print(f"{name} {time.perf_counter() - t:.3f} s")
first("context", lambda: torch.ones(1, device="cuda"))
x = torch.ones(1, 8, 8, 8, device="cuda")
first("matmul (cuBLAS)", lambda: x.flatten(1) @ torch.ones(512, 8, device="cuda"))
first("conv2d (cuDNN)", lambda: F.conv2d(x, torch.ones(8, 8, 3, 3, device="cuda")))
first("conv_transpose2d", lambda: F.conv_transpose2d(x, torch.ones(8, 8, 3, 3, device="cuda")))
first("conv3d", lambda: F.conv3d(torch.ones(1, 8, 4, 8, 8, device="cuda"), torch.ones(8, 8, 3, 3, 3, device="cuda")))
first("lstm (cuDNN RNN)", lambda: torch.nn.LSTM(8, 8).cuda()(torch.ones(4, 2, 8, device="cuda")))
first("second conv2d", lambda: F.conv2d(x, torch.ones(8, 8, 3, 3, device="cuda")))
PY
pick_refs "$TREE" .gpu/ab_refs "$PICK"
for p in ${KB_PROFILE:-}; do
    section "profile of $p"
    src=$(ls -d .gpu/kb_refs/level${p%%/*}/${p#*/}_* | head -1)
    python scripts/profile_eval.py "$TREE/level${p%%/*}/$(basename "$src").py" "$src/reference.py" \
        --memory-limit 80 --time-budget 2 --top 40 2>&1 | tee "$LOG/profile_${p//\//_}.log" | head -70
done
for side in base head; do
    section "kb sweep of $(ls .gpu/ab_refs/level*/ | grep -c _) references by $side"
    [ "$side" = base ] && path=$ROOT/.base || path=$ROOT
    t0=$(date +%s.%N)
    (cd "$path" && PYTHONPATH=$path timeout -s INT $(( $(left) - 20 )) python -m kbharness.cli sweep "$ROOT/.gpu/ab_refs" \
        --problems-dir "$ROOT/$TREE" --device cuda --memory-limit 80 --store "$ROOT/$LOG/$side.jsonl" --time-budget 2 -q \
        > "$ROOT/$LOG/sweep_$side.log" 2>&1)
    echo "exit $?, $(python -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s"; tail -3 "$LOG/sweep_$side.log"
done
python - "$LOG/base.jsonl" "$LOG/head.jsonl" <<'PY' | tee "$LOG/against_base.md"
import json, statistics, sys
def load(p):
    try:
        return {r["problem"]: r for r in map(json.loads, open(p))}
    except FileNotFoundError:
        return {}
base, head = load(sys.argv[1]), load(sys.argv[2])
key = lambda p: tuple(int(x) for x in p.split("/"))
print("| problem | base s | head s | head/base | base verdict | head verdict | flags only in head |")
print("|---|---|---|---|---|---|---|")
both = []
for p in sorted(set(base) | set(head), key=key):
    b, h = base.get(p), head.get(p)
    bs, hs = (b or {}).get("wall_s"), (h or {}).get("wall_s")
    ratio = f"{hs / bs:.2f}" if bs and hs else ""
    if bs and hs:
        both.append((bs, hs))
    extra = sorted({f.split(":")[0] for f in (h or {}).get("flags", [])} - {f.split(":")[0] for f in (b or {}).get("flags", [])})
    print(f"| {p} | {bs or 0:.2f} | {hs or 0:.2f} | {ratio} | {(b or {}).get('verdict', '-')} | {(h or {}).get('verdict', '-')} | {'; '.join(extra)} |")
print("\nWhere each evaluation's time went (s), by side:\n")
for p in sorted(set(base) | set(head), key=key):
    for side, records in (("base", base), ("head", head)):
        phases = (records.get(p) or {}).get("phase_s") or {}
        if phases:
            print(f"- {p} {side}: " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()))
if both:
    sb, sh = sum(b for b, _ in both), sum(h for _, h in both)
    print(f"\n{len(both)} problems by both: {sb:.1f} s against {sh:.1f} s ({sh / sb - 1:+.0%}); "
          f"median ratio {statistics.median(h / b for b, h in both):.2f}")
PY
if [ "${KB_GPU_TESTS:-0}" = 1 ]; then
    section "GPU tests (their CUDA fixtures built in parallel first)"
    $KB build --device cuda --jobs 15 tests/fixtures/gpu/*.py > "$LOG/build.log" 2>&1
    tail -3 "$LOG/build.log"
    timeout $(( $(left) - 10 )) python -m pytest -q -m gpu tests/test_gpu.py -rf 2>&1 | tee "$LOG/gpu_tests.log" | tail -25
fi
