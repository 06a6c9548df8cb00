# Sourced by scripts/gpu_check.sh, gpu_reproduce.sh and gpu_bench.sh with a name: logs go to .gpu/NAME
# and, as one archive on exit (the device tool returns few files), to $OUT/gpu_NAME.tgz;
# a time budget of $KB_DEADLINE seconds (default 520); the CUDA candidates and seeds; the
# folder of this GPU model's committed record (results/h100, results/h200: the second word of its name).
set -uo pipefail
RUN_NAME=$1
LOG=.gpu/$RUN_NAME
rm -rf "$LOG"; mkdir -p "$LOG" "${OUT:=.gpu}"
trap 'tar czf "$OUT/gpu_$RUN_NAME.tgz" -C "$LOG" .' EXIT
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KB_CACHE_DIR=$PWD/.gpu/cache KB_TEST_CACHE=$PWD/.gpu/cache
KB="python -m kbharness.cli"
T0=$(date +%s)
DEADLINE=${KB_DEADLINE:-520}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
section() { echo; echo "=== $* ($(date -u +%H:%M:%S), $(left) s left)"; }
CANDIDATES=$(ls solutions/level*/*/cuda_*.py solutions/level*/*/triton_*.py)
SEEDS=$(ls solutions/level2/*/seed_*.txt)
# A bwrap binary carried in .bwrap/bin (git-ignored) sandboxes GPU runs on a machine without one.
[ -x .bwrap/bin/bwrap ] && ! command -v bwrap >/dev/null && export PATH=$PWD/.bwrap/bin:$PATH
RECORD=results/$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
# Workers are forked from a server that imported torch without touching the GPU; prove a
# forked child can still create its CUDA context, else fall back to plain worker starts.
if ! python -c "
import os, torch, kbharness.judge.evaluate
pid = os.fork()
if pid == 0:
    os._exit(0 if torch.ones(4, device='cuda').sum().item() == 4 else 1)
raise SystemExit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"; then
    echo "forked workers cannot use CUDA here: KB_FORKSERVER=0"; export KB_FORKSERVER=0
fi
# Candidates run in the bwrap sandbox (GPU device nodes bound in); prove a sandboxed worker
# can create its CUDA context, else say so loudly and run this session's scripts unsandboxed.
if ! python -c "
import subprocess, sys
from kbharness.execution import sandbox
sandbox.check()
probe = \"import torch; raise SystemExit(0 if torch.ones(4, device='cuda').sum().item() == 4 else 1)\"
box = sandbox.Sandbox(writable=(str(sandbox.scratch_root()),))
env = sandbox.environment(dict(__import__('os').environ), sandbox.scratch_root() / 'home')
raise SystemExit(subprocess.run(box.wrap([sys.executable, '-c', probe]), env=env).returncode)
"; then
    echo "!!!!! SANDBOXED WORKERS CANNOT USE CUDA HERE: KB_SANDBOX=0, candidates run UNSANDBOXED this session !!!!!"
    export KB_SANDBOX=0
fi
# pick_refs TREE DEST "1/1 2/6 ...": KernelBench's references as candidates (scripts/kernelbench.py
# refs, under .gpu/kb_refs) and a copy of those picked under DEST, for a sweep of them alone.
pick_refs() {
    python scripts/kernelbench.py refs "$1" .gpu/kb_refs > /dev/null
    rm -rf "$2"
    for p in $3; do
        src=$(ls -d .gpu/kb_refs/level${p%%/*}/${p#*/}_* | head -1)
        mkdir -p "$2/level${p%%/*}" && cp -r "$src" "$2/level${p%%/*}/"
    done
}
