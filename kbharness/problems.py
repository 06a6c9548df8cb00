"""Finding reference problems and naming them.

A problem lives at ``levelN/ID_Name.py`` (KernelBench's own layout, loaded unchanged);
users name one by ``LEVEL/ID`` (``2/71``), a unique part of its name, or a path.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_LEVEL_DIR = re.compile(r"^level(\d+)$")
_PROBLEM_FILE = re.compile(r"^(\d+)_(.+)\.py$")
_LEVEL_ID = re.compile(r"^(\d+)/(\d+)$")


class ProblemError(ValueError):
    """A problem that cannot be found or named unambiguously; the message is one line."""


@dataclass(frozen=True, order=True)
class Problem:
    level: int
    id: int
    name: str
    path: Path

    @property
    def key(self) -> str:
        """Stable short name, ``level/id``, used in the store and on the command line."""
        return f"{self.level}/{self.id}"

    @property
    def stem(self) -> str:
        return self.path.stem


def problem_from_path(path: Path) -> Problem:
    """A problem file, its level read from the parent folder (``level0`` when it has none)."""
    path = Path(path)
    if not path.is_file():
        raise ProblemError(f"{path}: no such problem file")
    m = _PROBLEM_FILE.match(path.name)
    level_m = _LEVEL_DIR.match(path.parent.name)
    level = int(level_m.group(1)) if level_m else 0
    if m:
        return Problem(level, int(m.group(1)), m.group(2), path)
    return Problem(level, 0, path.stem, path)


def discover(problems_dir: Path) -> list[Problem]:
    """Every ``levelN/ID_Name.py`` under ``problems_dir``, sorted by level then id."""
    problems_dir = Path(problems_dir)
    if not problems_dir.is_dir():
        raise ProblemError(f"{problems_dir}: no such problems directory")
    found = []
    for level_dir in problems_dir.iterdir():
        if not (level_dir.is_dir() and _LEVEL_DIR.match(level_dir.name)):
            continue
        for f in level_dir.glob("*.py"):
            if _PROBLEM_FILE.match(f.name):
                found.append(problem_from_path(f))
    return sorted(found)


def resolve(spec: str, problems_dir: Path) -> Problem:
    """Turn what a user typed into exactly one problem, or say why not in one line."""
    as_path = Path(spec)
    if spec.endswith(".py") or as_path.is_file():
        return problem_from_path(as_path)
    problems = discover(problems_dir)
    m = _LEVEL_ID.match(spec)
    if m:
        level, pid = int(m.group(1)), int(m.group(2))
        hits = [p for p in problems if p.level == level and p.id == pid]
        if not hits:
            raise ProblemError(f"{spec}: no problem with level {level} and id {pid} under {problems_dir}")
        return hits[0]
    needle = spec.lower()
    hits = [p for p in problems if needle in p.stem.lower()]
    exact = [p for p in hits if p.stem.lower() == needle or p.name.lower() == needle]
    if len(exact) == 1:
        return exact[0]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise ProblemError(f"{spec}: no problem under {problems_dir} has that in its name")
    names = ", ".join(f"{p.key} {p.name}" for p in hits[:5])
    raise ProblemError(f"{spec}: matches {len(hits)} problems ({names}{', ...' if len(hits) > 5 else ''}); be more specific")


def solutions_for(problem: Problem, solutions_dir: Path) -> list[Path]:
    """Candidate files for a problem: ``solutions/levelN/<problem stem>/*.{py,txt,md}``."""
    folder = Path(solutions_dir) / f"level{problem.level}" / problem.stem
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in {".py", ".txt", ".md"} and p.is_file())
