"""Finding reference problems and naming them.

A problem lives at ``levelN/ID_Name.py`` (KernelBench's own layout, loaded unchanged) and
is keyed ``LEVEL/ID`` (``2/71``). Any other problem file (a scratch problem) is keyed by its
name and a short hash of its content (``x_scale-3fa9c2d1``): two different files never share
a key, so their records never share a leaderboard row, and none collides with a suite
problem. Users name a problem by its key, a unique part of its name, or a path.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

_LEVEL_DIR = re.compile(r"^level(\d+)$")
_PROBLEM_FILE = re.compile(r"^(\d+)_(.+)\.py$")
_LEVEL_ID = re.compile(r"^(\d+)/(\d+)$")
_SCRATCH_KEY = re.compile(r"^(.+)-([0-9a-f]{8})$")
_DIGEST_CHARS = 8


class ProblemError(ValueError):
    """A problem that cannot be found or named unambiguously; the message is one line."""


@dataclass(frozen=True, order=True)
class Problem:
    level: int
    id: int
    name: str
    path: Path
    # Short content hash of a problem outside a levelN/ID_Name.py tree; '' inside one.
    digest: str = ""

    @property
    def key(self) -> str:
        """Stable short name used in the store, in every table and on the command line:
        ``level/id`` in a levelN tree, else ``stem-digest``."""
        return f"{self.stem}-{self.digest}" if self.digest else f"{self.level}/{self.id}"

    @property
    def stem(self) -> str:
        return self.path.stem


def problem_from_path(path: Path) -> Problem:
    """A problem file: ``levelN/ID_Name.py`` gives level and id, any other file a content digest."""
    path = Path(path)
    if not path.is_file():
        raise ProblemError(f"{path}: no such problem file")
    m = _PROBLEM_FILE.match(path.name)
    level_m = _LEVEL_DIR.match(path.parent.name)
    if m and level_m:
        return Problem(int(level_m.group(1)), int(m.group(1)), m.group(2), path)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:_DIGEST_CHARS]
    except OSError as e:
        raise ProblemError(f"{path}: cannot read the problem file ({e.strerror})") from None
    return Problem(0, 0, path.stem, path, digest)


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
    scratch = _SCRATCH_KEY.match(spec)
    if scratch:
        return _scratch(spec, scratch.group(1), problems_dir)
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


def _scratch(key: str, stem: str, problems_dir: Path) -> Problem:
    """The file printed as ``key``: named ``stem.py``, under ``problems_dir`` or here."""
    places = [Path(f"{stem}.py"), *Path(problems_dir).rglob(f"{stem}.py")] if Path(problems_dir).is_dir() \
        else [Path(f"{stem}.py")]
    for path in places:
        if path.is_file() and problem_from_path(path).key == key:
            return problem_from_path(path)
    raise ProblemError(f"{key}: no {stem}.py with that content under {problems_dir} or here; pass its path")


def solutions_for(problem: Problem, solutions_dir: Path) -> list[Path]:
    """Candidate files for a problem: ``solutions/levelN/<problem stem>/*.{py,txt,md}``."""
    folder = Path(solutions_dir) / f"level{problem.level}" / problem.stem
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in {".py", ".txt", ".md"} and p.is_file())
