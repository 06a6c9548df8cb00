"""What to evaluate and how: the frozen run specification, with every default stated once."""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

# Each precision and the name of its torch dtype.
_DTYPE_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
PRECISIONS = tuple(_DTYPE_NAMES)


class _Dtypes(Mapping):
    """Precision name -> torch dtype (``DTYPES["bf16"]``); torch is imported on the first lookup, so
    importing the spec (the CLI does) does not cost torch's seconds of start-up."""

    def __getitem__(self, precision: str) -> Any:
        import torch

        return getattr(torch, _DTYPE_NAMES[precision])

    def __iter__(self) -> Iterator[str]:
        return iter(_DTYPE_NAMES)

    def __len__(self) -> int:
        return len(_DTYPE_NAMES)


DTYPES = _Dtypes()
# "reference": within tolerance of the reference's output; "fp64": judged against a float64
# run of the reference, the reference's own error being the noise floor.
JUDGES = ("reference", "fp64")
BASELINES = ("eager", "compile", "best")
# KernelBench's current evaluation; its v0/v0.1 used 1e-2 for fp32 (offered as --tolerance 1e-2).
DEFAULT_TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}


class SpecError(ValueError):
    """Settings that make no sense; the message is one line for the user."""


@dataclass(frozen=True)
class Settings:
    """How a candidate is judged and timed. Counts are ``n_*``; budgets carry their unit."""

    device: str = "cpu"
    precision: str = "fp32"
    atol: float | None = None
    rtol: float | None = None
    seed: int = 42
    n_trials: int = 5
    n_warmup: int = 5
    n_runs: int = 1000
    min_runs: int = 10
    target_ci: float = 0.01
    baseline: str = "eager"
    cuda_graph: bool = False
    time_budget_s: float = 10.0
    timeout_s: float = 600.0
    compile_timeout_s: float = 900.0
    size_overrides: dict[str, Any] = field(default_factory=dict)
    judge: str = "reference"
    backward: bool = False
    max_speedup: float = 10.0
    ceilings_file: str = ""
    # GiB torch may allocate on the device (0: all of it), to reproduce a smaller GPU's runs.
    memory_limit_gib: float = 0.0

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise SpecError(f"precision {self.precision!r}: choose one of {', '.join(PRECISIONS)}")
        if self.device.split(":")[0] not in ("cpu", "cuda"):
            raise SpecError(f"device {self.device!r}: choose cpu or cuda")
        for name in ("n_trials", "n_runs", "min_runs"):
            if getattr(self, name) < 1:
                raise SpecError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.baseline not in BASELINES:
            raise SpecError(f"baseline {self.baseline!r}: choose one of {', '.join(BASELINES)}")
        if self.judge not in JUDGES:
            raise SpecError(f"check {self.judge!r}: choose one of {', '.join(JUDGES)}")
        if not 0 <= self.target_ci < 1:
            raise SpecError(f"target_ci must be in [0, 1), got {self.target_ci}")
        if self.memory_limit_gib < 0:
            raise SpecError(f"memory limit must be non-negative GiB, got {self.memory_limit_gib}")
        for name in ("atol", "rtol"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise SpecError(f"{name} must be non-negative, got {v}")

    @property
    def tolerance(self) -> tuple[float, float]:
        """(atol, rtol): explicit values win, else the precision's default."""
        default = DEFAULT_TOLERANCE[self.precision]
        return (default if self.atol is None else self.atol, default if self.rtol is None else self.rtol)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def key(self) -> str:
        """Hash of what changes a verdict or a timing; a sweep skips work whose key it has seen."""
        judged = {k: v for k, v in self.to_dict().items() if k not in ("timeout_s", "compile_timeout_s")}
        return hashlib.sha256(json.dumps(judged, sort_keys=True).encode()).hexdigest()[:16]


def default(name: str) -> Any:
    """A ``Settings`` field's default, for front ends (the CLI, the pytest plugin) to show and use
    rather than restate."""
    f = {f.name: f for f in dataclasses.fields(Settings)}[name]
    return f.default_factory() if f.default is dataclasses.MISSING else f.default


@dataclass(frozen=True)
class EvalSpec:
    """One candidate against one problem; what the worker process is handed."""

    problem_path: Path
    solution_path: Path
    settings: Settings
    cache_dir: Path
    # The candidate's kernel language by name (kbharness.common.languages); "" detects it from the source.
    language: str = ""

    def to_json(self) -> str:
        return json.dumps({
            "problem_path": str(self.problem_path),
            "solution_path": str(self.solution_path),
            "settings": self.settings.to_dict(),
            "cache_dir": str(self.cache_dir),
            "language": self.language,
        })

    @classmethod
    def from_json(cls, text: str) -> EvalSpec:
        d = json.loads(text)
        return cls(Path(d["problem_path"]), Path(d["solution_path"]), Settings(**d["settings"]), Path(d["cache_dir"]),
                   d.get("language", ""))


def parse_sizes(items: Sequence[str], option: str = "--size") -> dict[str, Any]:
    """``NAME=VALUE`` strings (``option``'s, named in errors) as size overrides, values as Python literals."""
    parsed = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise SpecError(f"{option} {item!r}: expected NAME=VALUE, e.g. batch_size=8")
        try:
            parsed[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise SpecError(f"{option} {item!r}: {value!r} is not a number, tuple or string literal") from None
    return parsed


def check_size_overrides(problem_path: Path, overrides: dict[str, Any]) -> None:
    """Raise SpecError when an override names no module-level assignment of the problem file.

    Read with ast before anything runs: a mistyped name would otherwise become a stored
    load error of every candidate. A file that does not parse is left to the evaluation."""
    if not overrides:
        return
    try:
        tree = ast.parse(Path(problem_path).read_text(), str(problem_path))
    except (OSError, SyntaxError, ValueError):
        return
    names = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
             for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
             for t in ast.walk(target) if isinstance(t, ast.Name)}
    for name in overrides:
        if name not in names:
            known = ", ".join(sorted(names)) or "none"
            raise SpecError(f"{problem_path}: no module constant {name!r} to override with a size (it has: {known})")
