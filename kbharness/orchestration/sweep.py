"""Which problem each candidate of a sweep belongs to.

A sweep is handed files and folders; every ``.py``, ``.txt`` or ``.md`` file under them is a
candidate. Its problem is found, in this order, from:

1. a manifest (``--manifest FILE``): JSON mapping candidate paths, relative to the
   manifest's folder and possibly with ``*`` wildcards, to a problem: its key (``"2/71"``,
   or a scratch problem's ``"x_scale-3fa9c2d1"``) or the path of its file (relative to the
   manifest's folder);
2. the folder it sits in: ``.../levelN/<ID>_<Name>/candidate.py``, the layout of
   ``solutions/`` (the folder name is the problem file's stem; its id is what counts);
3. its file name: ``level_2_problem_71_sample_0.py`` or ``level2_problem71...``, the names
   KernelBench's generation scripts write.

A candidate none of these place is reported, never guessed.
"""
from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from kbharness.common.problems import ProblemError, discover, resolve
from kbharness.orchestration.jobs import Job

SUFFIXES = {".py", ".txt", ".md"}
_FOLDER = re.compile(r"^(\d+)_")
_LEVEL = re.compile(r"^level(\d+)$")
_NAME = re.compile(r"level_?(\d+)_problem_?(\d+)(?:\D|$)")


class SweepError(ValueError):
    """A manifest or path that cannot be used; the message is one line naming the file."""


@dataclass(frozen=True)
class Unplaced:
    path: Path
    reason: str


def candidates(paths: Iterable[Path]) -> list[Path]:
    found = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES
                            and not any(part.startswith(".") for part in p.relative_to(path).parts))
        elif path.is_file():
            found.append(path)
        else:
            raise SweepError(f"{path}: no such file or folder")
    return list(dict.fromkeys(found))


def load_manifest(path: Path) -> list[tuple[str, str]]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SweepError(f"{path}: not a readable JSON manifest ({e})") from None
    if not isinstance(doc, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
        raise SweepError(f'{path}: a manifest maps candidate paths to problems, e.g. {{"a.py": "2/71"}}')
    base = Path(path).resolve().parent
    return [(str(base / pattern), str(base / problem) if problem.endswith(".py") else problem)
            for pattern, problem in doc.items()]


def place(files: list[Path], problems_dir: Path, manifest: Path | None = None) -> tuple[list[Job], list[Unplaced]]:
    """Pair each candidate with its problem; the ones that cannot be paired come back apart."""
    try:
        by_key = {p.key: p for p in discover(problems_dir)}
    except ProblemError as e:
        raise SweepError(str(e)) from None
    rules = load_manifest(manifest) if manifest else []
    jobs, unplaced = [], []
    for f in files:
        named = _from_manifest(f, rules)
        key = named or _from_folder(f) or _from_name(f)
        if key is None:
            unplaced.append(Unplaced(f, "no manifest entry, levelN/ID_Name/ folder or level_N_problem_ID name"))
        elif key in by_key:
            jobs.append(Job(by_key[key], f))
        elif named:  # a path or a scratch problem's key
            try:
                jobs.append(Job(resolve(key, problems_dir), f))
            except ProblemError as e:
                unplaced.append(Unplaced(f, str(e)))
        else:
            unplaced.append(Unplaced(f, f"problem {key} is not under {problems_dir}"))
    return jobs, unplaced


def _from_manifest(f: Path, rules: list[tuple[str, str]]) -> str | None:
    full = str(f.resolve())
    return next((problem for pattern, problem in rules if fnmatch.fnmatch(full, pattern)), None)


def _from_folder(f: Path) -> str | None:
    folder, level = _FOLDER.match(f.parent.name), _LEVEL.match(f.parent.parent.name)
    return f"{level.group(1)}/{int(folder.group(1))}" if folder and level else None


def _from_name(f: Path) -> str | None:
    m = _NAME.search(f.name)
    return f"{m.group(1)}/{int(m.group(2))}" if m else None
