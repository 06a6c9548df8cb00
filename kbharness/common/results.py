"""The records an evaluation produces: plain frozen dataclasses that round-trip through JSON.

Raw samples are kept (``times_ms``); statistics are derived from them, never stored
rounded, so a record can always be re-summarised. A record carries the schema it was written
under; ``from_dict`` migrates an older one step by step and refuses a newer one by name.
"""
from __future__ import annotations

import dataclasses
import enum
import math
import statistics
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 2


class SchemaError(ValueError):
    """A record written by a newer kbharness: its fields cannot be trusted to mean what this one reads."""


def _v1_to_v2(d: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 added peak memory, the judge of a verdict and notes."""
    return {"memory": {}, "judged_by": "reference", "notes": [], **d, "schema_version": 2}


# Version -> the step that lifts a record of that version to the next one.
_MIGRATIONS = {1: _v1_to_v2}


def migrate(d: dict[str, Any]) -> dict[str, Any]:
    """The record as this schema reads it; one without ``schema_version`` predates the field (1)."""
    version = d.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SchemaError(f"schema {version!r} is not a schema version")
    if version > SCHEMA_VERSION:
        raise SchemaError(f"schema {version} is newer than this kbharness reads ({SCHEMA_VERSION})")
    while version < SCHEMA_VERSION:
        d = _MIGRATIONS[version](d)
        version = d["schema_version"]
    return d


class Verdict(str, enum.Enum):
    """One class per way an evaluation can end; the CI gate passes only ``CORRECT``."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    NO_CODE = "no code"
    LOAD_ERROR = "load error"
    COMPILE_ERROR = "compile error"
    COMPILE_TIMEOUT = "compile timeout"
    RUNTIME_ERROR = "runtime error"
    NEEDS_CUDA = "needs CUDA"
    # The candidate's kernel language is not installed (pip install '.[triton]', say).
    NEEDS_PACKAGE = "needs package"
    TIMEOUT = "timeout"
    CRASH = "crash"
    CUDA_ERROR = "cuda error"
    OOM = "oom"
    LOST = "lost"
    # A limit of the harness, never the candidate's: the reference alone does not fit the device
    # (or --memory-limit).
    TOO_LARGE = "too large for device"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Timing:
    """Per-call device times of one model, in milliseconds, in the order they were taken."""

    times_ms: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.times_ms)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def min_ms(self) -> float:
        return min(self.times_ms)

    @property
    def max_ms(self) -> float:
        return max(self.times_ms)

    @property
    def mean_ms(self) -> float:
        return statistics.fmean(self.times_ms)

    @property
    def iqr_ms(self) -> float:
        """Interquartile range: the spread that outliers (a context switch, a clock dip) barely move."""
        if self.n < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.times_ms, n=4, method="inclusive")
        return q3 - q1

    @property
    def sem_ms(self) -> float:
        """Standard error of the mean, the figure GPU MODE's leaderboard stops on."""
        return statistics.stdev(self.times_ms) / math.sqrt(self.n) if self.n > 1 else math.inf

    def median_ci(self) -> tuple[float, float]:
        """95% interval of the median from order statistics: distribution-free and cheap
        enough to recompute after every timed call."""
        xs = sorted(self.times_ms)
        half = 1.96 * math.sqrt(self.n) / 2
        lo = max(0, math.floor(self.n / 2 - half) - 1)
        hi = min(self.n - 1, math.ceil(self.n / 2 + half))
        return xs[lo], xs[hi]

    @property
    def ci_rel(self) -> float:
        """Half-width of the median's 95% interval over the median."""
        lo, hi = self.median_ci()
        med = self.median_ms
        return (hi - lo) / 2 / med if med > 0 else math.inf

    def summary(self) -> dict[str, float]:
        lo, hi = self.median_ci()
        return {
            "n": self.n,
            "median_ms": self.median_ms,
            "min_ms": self.min_ms,
            "max_ms": self.max_ms,
            "mean_ms": self.mean_ms,
            "iqr_ms": self.iqr_ms,
            "sem_ms": self.sem_ms,
            "median_ci_low_ms": lo,
            "median_ci_high_ms": hi,
        }


@dataclass(frozen=True)
class TrialError:
    """How far the candidate's output was from the reference's on one input set."""

    seed: int
    passed: bool
    max_abs: float
    max_rel: float
    reason: str = ""


@dataclass(frozen=True)
class CheckResult:
    """One named check (e.g. ``input mutation``); ``detail`` says what was seen when it failed."""

    name: str
    passed: bool
    detail: str = ""


# Flag of a timing below a bound every correct candidate obeys (roofline.impossible): the CI gate fails it.
FLAG_IMPOSSIBLE = "faster than the hardware floor"
# Flag of a problem where a null candidate (zeros, the mean, the input) passes: no verdict on it means
# anything, so leaderboards leave it out and the gate fails it.
FLAG_CANNOT_DISCRIMINATE = "problem cannot discriminate"
# Flag of a problem whose reference differs from itself under the same RNG state: its verdicts are marked
# and left out of leaderboards.
FLAG_STOCHASTIC = "stochastic reference"
# Information only: the candidate beat the floor of the reference's own operators but not the output-write
# bound (an algebraic rewrite that does less work, worth a look). Fails nothing.
FLAG_LESS_WORK = "less work than the reference's operators"
# Flag of a runner whose event times make the candidate faster than the judge's own clock over
# back-to-back calls does: its record keeps no speedup.
FLAG_TIMING_DISAGREES = "timing disagrees with the judge's clock"
# Information: the judge's clock did not fit on the device beside the evaluation, so the runner's
# times are not cross-checked and the record keeps no speedup (the verdict stands).
FLAG_CLOCK_UNAVAILABLE = "judge's clock did not run"
# Flag of a judge stopped and continued during the evaluation (a signal from outside): its times
# are not kept, and the record keeps no speedup (the verdict stands).
FLAG_JUDGE_STOPPED = "the judge was stopped"
# Flags whose record's speedup cannot be trusted: such records are listed apart from leaderboards and fast_p.
UNTRUSTED_FLAGS = (FLAG_CANNOT_DISCRIMINATE, FLAG_STOCHASTIC, FLAG_IMPOSSIBLE, FLAG_TIMING_DISAGREES)


def untrusted_reason(flags: tuple[str, ...] | list[str]) -> str:
    """The first flag that keeps a record out of leaderboards and fast_p, or ''."""
    return next((f for f in flags if f.startswith(UNTRUSTED_FLAGS)), "")


TIMING_FIELDS = ("ref_timing", "new_timing", "eager_timing", "compiled_timing")


@dataclass(frozen=True)
class EvalRecord:
    """Everything one evaluation of one candidate against one problem produced."""

    problem: str
    problem_path: str
    solution_path: str
    solution_sha256: str
    verdict: Verdict
    message: str = ""
    log_tail: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    settings_key: str = ""
    env: dict[str, Any] = field(default_factory=dict)
    trials: tuple[TrialError, ...] = ()
    checks: tuple[CheckResult, ...] = ()
    max_abs: float | None = None
    max_rel: float | None = None
    ref_timing: Timing | None = None
    new_timing: Timing | None = None
    eager_timing: Timing | None = None
    compiled_timing: Timing | None = None
    baseline_used: str = "eager"
    build_s: float | None = None
    # The candidate's kernel language (kbharness.common.languages), "" before it was known.
    language: str = ""
    wall_s: float | None = None
    precision_tier: str = ""
    ref_err_fp64: float | None = None
    new_err_fp64: float | None = None
    flags: tuple[str, ...] = ()
    kernels: dict[str, Any] = field(default_factory=dict)
    roofline: dict[str, Any] = field(default_factory=dict)
    # Peak device memory of each model (bytes): "reference", "candidate", and "limit" when capped.
    memory: dict[str, Any] = field(default_factory=dict)
    # "reference", or "fp64" when the candidate failed against the reference but met the tolerance
    # against float64 on the trials it failed.
    judged_by: str = "reference"
    # Information that changes no verdict (a float64 run that could not be made, for instance).
    notes: tuple[str, ...] = ()
    # The judge's own clock over back-to-back calls (evaluate._judge_clock): per-call ms of both
    # models, and how far the runner's event speedup exceeds the clock's ("agreement", 1 = equal).
    judge_clock: dict[str, Any] = field(default_factory=dict)
    # Where the evaluation's wall time went: seconds of each of its parts, in order.
    phase_s: dict[str, float] = field(default_factory=dict)
    timestamp_utc: str = ""
    schema_version: int = SCHEMA_VERSION

    @property
    def speedup(self) -> float | None:
        """Reference median over candidate median; only meaningful for a correct candidate."""
        if self.ref_timing is None or self.new_timing is None or not self.new_timing.n:
            return None
        return self.ref_timing.median_ms / self.new_timing.median_ms

    def speedup_over(self, which: str) -> float | None:
        """Speedup against the eager or the torch.compile reference, when that one was timed."""
        base = self.eager_timing if which == "eager" else self.compiled_timing
        if base is None or self.new_timing is None or not self.new_timing.n:
            return None
        return base.median_ms / self.new_timing.median_ms

    @property
    def floor_multiple(self) -> float | None:
        """Candidate's error against float64 as a multiple of the reference's own (the noise floor)."""
        if self.new_err_fp64 is None or self.ref_err_fp64 is None:
            return None
        if self.ref_err_fp64 == 0:
            return 0.0 if self.new_err_fp64 == 0 else float("inf")
        return self.new_err_fp64 / self.ref_err_fp64

    @property
    def floor_ms(self) -> float | None:
        return self.roofline.get("floor_ms")

    def sol(self, which: str = "new") -> float | None:
        """Fraction of speed of light: the hardware floor over the model's median time."""
        timing = self.new_timing if which == "new" else self.ref_timing
        if self.floor_ms is None or timing is None or not timing.n:
            return None
        return self.floor_ms / timing.median_ms

    @property
    def correct(self) -> bool:
        return self.verdict is Verdict.CORRECT

    def failed_checks(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["verdict"] = self.verdict.value
        for key in TIMING_FIELDS:
            timing = getattr(self, key)
            if timing is not None:
                d[key] = {"times_ms": list(timing.times_ms), **timing.summary()}
        d["speedup"] = self.speedup
        d["floor_multiple"] = self.floor_multiple
        d["sol"] = self.sol("new")
        d["ref_sol"] = self.sol("ref")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalRecord:
        """The record of a stored dict, migrated to this schema; raises SchemaError for a newer one."""
        d = migrate(d)
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        kw["verdict"] = Verdict(d["verdict"])
        kw["trials"] = tuple(TrialError(**t) for t in d.get("trials", ()))
        kw["checks"] = tuple(CheckResult(**c) for c in d.get("checks", ()))
        kw["flags"] = tuple(d.get("flags", ()))
        kw["notes"] = tuple(d.get("notes", ()))
        for key in TIMING_FIELDS:
            t = d.get(key)
            kw[key] = Timing(tuple(t["times_ms"])) if t else None
        return cls(**kw)
