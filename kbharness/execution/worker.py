"""The judge's process: forked from the fork server, which calls ``main``, or started as
``python -m kbharness.execution.worker RUN_DIR``.

It forks its runner first (``launch.start``), while it holds nothing of the
evaluation, then takes the key its parent left in the run folder (the runner never saw it)
and evaluates through the runner. It writes its current phase to ``phase`` (so the parent
can tell a compile that hangs from a kernel that hangs) and the record to ``result.json``
with ``result.sig``, its HMAC under that key, each renamed into place: the parent believes a
record only with a signature it can verify, so one a candidate wrote into the folder is
recognised as forged. A runner that dies ends this process the same way, for the parent to
classify as it classifies any worker's death.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
from pathlib import Path

KEY_FILE = "key"
SIGNATURE_FILE = "result.sig"


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def sign(key: bytes, text: bytes) -> str:
    return hmac.new(key, text, hashlib.sha256).hexdigest()


def main(run_dir: str) -> int:
    from kbharness.boundary import confine, runner_client
    from kbharness.runner import launch

    root = Path(run_dir)
    _write_atomic(root / "phase", "start")
    corner = os.environ.pop(confine.ENV, "")
    runner = launch.start(root / "runner", json.loads(corner) if corner else None)
    key = _take_key(root)
    from kbharness.judge.evaluate import evaluate
    from kbharness.common.spec import EvalSpec

    spec = EvalSpec.from_json((root / "spec.json").read_text())
    try:
        record = evaluate(spec, root, phase=lambda p: _write_atomic(root / "phase", p), runner=runner)
    except runner_client.Gone as gone:
        runner_client.end_as(gone.status)
    runner.stop()
    text = json.dumps(record.to_dict())
    _write_atomic(root / SIGNATURE_FILE, sign(key, text.encode()))
    _write_atomic(root / "result.json", text)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: a candidate's broken extension must not turn a finished
    # evaluation into a crash at exit.
    os._exit(0)


def _take_key(root: Path) -> bytes:
    path = root / KEY_FILE
    try:
        key = bytes.fromhex(path.read_text())
    except (OSError, ValueError):
        return b""
    path.unlink(missing_ok=True)
    return key


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
