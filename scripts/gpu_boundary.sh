#!/usr/bin/env bash
# The judge/runner boundary on the GPU, step by step, each step's failure printed in full:
# a shared CUDA buffer across processes, then one honest candidate through `kb compare`,
# unsandboxed and sandboxed, with the record's message and log.
#   bash scripts/gpu_boundary.sh
source scripts/gpu_common.sh boundary
section "a CUDA buffer shared with another process"
python -m pytest -q -m gpu tests/test_gpu.py -k one_device_allocation 2>&1 | tail -30 | tee "$LOG/sharedmem.log"
for sandbox in 0 1; do
    section "kb compare, KB_SANDBOX=$sandbox"
    rm -f "$LOG/store.jsonl"
    KB_SANDBOX=$sandbox timeout 300 $KB compare "${KB_BOUNDARY_PROBLEM:-tests/fixtures/problems/level1/1_Scale_shift.py}" \
        "${KB_BOUNDARY_CANDIDATE:-tests/fixtures/candidates/correct.py}" --device cuda --time-budget 1 --store "$LOG/store.jsonl" 2>&1 | tail -15
    python - "$LOG/store.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["verdict"], "|", r["message"][:1500], "| notes:", r.get("notes"), "| judge clock:", r.get("judge_clock"))
    print((r.get("log") or "")[-4000:])
PY
done
section "which step of the runner's confinement hides the GPU"
python - <<'PY'
import os, subprocess, sys
from kbharness.execution import sandbox
scratch = sandbox.scratch_root() / "probe"
scratch.mkdir(parents=True, exist_ok=True)
box = sandbox.Sandbox(writable=(str(sandbox.scratch_root()),))
locked = [os.path.realpath(str(sandbox.scratch_root())), *box.hidden, "/dev/shm"]
env = sandbox.environment(dict(os.environ), sandbox.scratch_root() / "home")
subprocess.run(box.wrap([sys.executable, "scripts/confine_probe.py", str(scratch), *locked]), env=env)
PY
