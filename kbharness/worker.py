"""The process candidate code runs in: forked from the fork server, which calls ``main``,
or started as ``python -m kbharness.worker RUN_DIR``.

It reads ``spec.json``, writes its current phase to ``phase`` (so the parent can tell a
compile that hangs from a kernel that hangs) and the record to ``result.json``, renamed
into place so the parent never reads half a file.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(run_dir: str) -> int:
    root = Path(run_dir)
    _write_atomic(root / "phase", "start")
    notes = _confined()
    # Everything the checks and the timer use is bound here, before candidate code exists.
    from kbharness.evaluate import evaluate
    from kbharness.spec import EvalSpec

    spec = EvalSpec.from_json((root / "spec.json").read_text())
    record = evaluate(spec, root, phase=lambda p: _write_atomic(root / "phase", p), notes=notes)
    _write_atomic(root / "result.json", json.dumps(record.to_dict()))
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: a candidate's broken extension must not turn a finished
    # evaluation into a crash at exit.
    os._exit(0)


def _confined() -> tuple[str, ...]:
    """A worker forked in the fork server's sandbox is told (``confine.ENV``) what of it to
    keep writable; a note when that could not be done."""
    from kbharness import confine

    asked = os.environ.pop(confine.ENV, "")
    if not asked:
        return ()
    try:
        confine.confine(**json.loads(asked))
    except OSError as e:
        return (f"not confined to its run folder and cache entry ({e}): it could write the fork server's "
                "other run folders and cache entries",)
    return ()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
