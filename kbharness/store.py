"""The results store: one JSON object per line in ``results/evals.jsonl``, append-only.

Each record is written with a single ``write`` on a file opened for appending and then
fsync'd, so an interrupted run loses no finished record and never leaves half of one; a
torn last line (power loss mid-write) is skipped on reading, not fatal.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from kbharness.results import EvalRecord

DEFAULT_STORE = Path("results") / "evals.jsonl"


class Store:
    def __init__(self, path: Path = DEFAULT_STORE):
        self.path = Path(path)

    def append(self, record: EvalRecord) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(record.to_dict(), allow_nan=True) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def __iter__(self) -> Iterator[EvalRecord]:
        if not self.path.exists():
            return
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                if not line.endswith("\n"):
                    break
                try:
                    yield EvalRecord.from_dict(json.loads(line))
                except (ValueError, KeyError, TypeError):
                    continue

    def records(self) -> list[EvalRecord]:
        return list(self)

    def done_keys(self) -> set[tuple[str, str, str]]:
        """(problem, solution hash, settings key) of every finished evaluation, for resuming."""
        return {(r.problem, r.solution_sha256, r.settings_key) for r in self}
