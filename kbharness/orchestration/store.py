"""The results store: one JSON object per line in ``results/evals.jsonl``, append-only.

Each record is written with a single ``write`` on a file opened for appending and then
fsync'd, so an interrupted run loses no finished record and never leaves half of one. A
torn last line (power loss mid-write) is set apart with a newline before the next record
is appended, so it stays one unreadable line instead of swallowing the record after it.
Unreadable lines are skipped on reading and counted by line number, for the caller to
report, with the reason where there is one beyond damage (a record of a newer schema); a
file that is not text at all (a NUL byte near its start, or no record and lines that are
not UTF-8) is refused.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from kbharness.common.results import EvalRecord, SchemaError

DEFAULT_STORE = Path("results") / "evals.jsonl"
# A NUL byte in the first this many bytes marks a binary file (git's heuristic); other damage is per line.
_SNIFF_BYTES = 8000
_LINES_NAMED = 10


class StoreError(ValueError):
    """A store that cannot be read at all; the message is one line naming the file."""


@dataclass(frozen=True)
class Contents:
    """The readable records of a store, the 1-based numbers of the lines that were not, and the
    reason of each skipped line that is whole but refused (``(7, "schema 3 is newer ...")``)."""

    records: list[EvalRecord]
    unreadable: tuple[int, ...]
    refused: tuple[tuple[int, str], ...] = ()

    def warning(self, path: Path) -> str:
        """One line naming the skipped lines and why each refused one was, or '' when every line was a record."""
        n = len(self.unreadable)
        if not n:
            return ""
        named = ", ".join(map(str, self.unreadable[:_LINES_NAMED])) + (", ..." if n > _LINES_NAMED else "")
        why = "".join(f"; line {number}: {reason}" for number, reason in self.refused[:_LINES_NAMED])
        return f"{path}: {n} unreadable line{'s' if n > 1 else ''} skipped (line{'s' if n > 1 else ''} {named}){why}"


def _parse(raw: bytes) -> EvalRecord | str | None:
    """The line's record, the reason a whole record was refused, or None for a damaged line."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError both are
        return None
    if not isinstance(doc, dict):
        return None
    try:
        return EvalRecord.from_dict(doc)
    except SchemaError as e:
        return str(e)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


class Store:
    def __init__(self, path: Path = DEFAULT_STORE):
        self.path = Path(path)

    def append(self, record: EvalRecord) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(record.to_dict(), allow_nan=True) + "\n").encode()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line  # a torn tail stays its own line
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self) -> Contents:
        """Every readable record, in file order; raises StoreError for a file that is not text."""
        if not self.path.exists():
            return Contents([], ())
        records, unreadable, refused, binary = [], [], [], False
        try:
            with open(self.path, "rb") as f:
                if b"\0" in f.read(_SNIFF_BYTES):
                    raise StoreError(f"{self.path}: not a results store (binary data, not JSON lines)")
                f.seek(0)
                for number, raw in enumerate(f, start=1):
                    if not raw.strip():
                        continue
                    record = _parse(raw)
                    if isinstance(record, EvalRecord):
                        records.append(record)
                        continue
                    unreadable.append(number)
                    if record is None:
                        binary = binary or not _is_utf8(raw)
                    else:
                        refused.append((number, record))
        except OSError as e:
            raise StoreError(f"{self.path}: cannot read the results store ({e.strerror})") from None
        if binary and not records:
            raise StoreError(f"{self.path}: not a results store (not UTF-8 text, no record in it)")
        return Contents(records, tuple(unreadable), tuple(refused))

    def __iter__(self) -> Iterator[EvalRecord]:
        return iter(self.read().records)

    def records(self) -> list[EvalRecord]:
        return self.read().records

    def done_keys(self) -> set[tuple[str, str, str]]:
        """(problem, solution hash, settings key) of every finished evaluation, for resuming."""
        return {(r.problem, r.solution_sha256, r.settings_key) for r in self}


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False
