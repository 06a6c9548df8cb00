"""One evaluation, in the judge: reference, build, check, time, as named steps.

The judge never imports candidate code. It loads the problem, draws the inputs, runs the
reference (and float64, and the null candidates), and asks its runner (``candidate``, a
process of its own) to build the candidate and call it on the same inputs; every output
the runner hands back is compared here, and only this process writes the record. The
reference's trials are run before the runner is asked to load the candidate, and the
seeds of the timed calls are drawn after, so no answer exists while the candidate could
precompute it. Timing interleaves the reference (timed here) and the candidate (timed by
the runner) on inputs made fresh for each call, checks every timed output too, and ends
with batches of back-to-back calls of both that the judge times with its own clock: a
runner whose times disagree with that clock gets a flag and no speedup.

Memory stays near one trial's working set: a trial's inputs are redrawn from its seed
when needed, the reference's outputs wait on the host once they would take more than half
of the judge's cap, and float64 runs one trial at a time; the judge's clock batches only as
many calls as fit. Both models start every call from the same RNG state, so a reference that draws
random numbers (dropout) is matched by a candidate that draws them the same way.
"""
from __future__ import annotations

import re
import secrets
import statistics
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import torch
import torch._dynamo  # noqa: F401  (wraps torch.manual_seed when imported: done before the integrity snapshot)
import torch.profiler  # noqa: F401

from kbharness.judge import check, checks, controls, roofline, stops
from kbharness.common import env, kernels, languages, memory, timing
from kbharness.common.calls import (CALL_SEED_OFFSET, Graphed, Staged, build_model, classify_exception, clone, detach,
                             gradients, seed_rng)
from kbharness.common.calls import sync as _sync
from kbharness.judge.candidate import RemoteCandidate
from kbharness.common.views import flat as _flat, shares as _shares, tensors as _tensors
from kbharness.common.loading import LoadError, SolutionSource, load_problem, read_solution
from kbharness.common.results import (FLAG_CANNOT_DISCRIMINATE, FLAG_CLOCK_UNAVAILABLE, FLAG_IMPOSSIBLE,
                               FLAG_JUDGE_STOPPED, FLAG_LESS_WORK, FLAG_STOCHASTIC, FLAG_TIMING_DISAGREES,
                               CheckResult, EvalRecord, Timing, TrialError, Verdict)
from kbharness.boundary.runner_client import Exchange, Failed, Gone, Runner
from kbharness.boundary.sharedmem import OUT_OF_MEMORY, SharedMemoryError
from kbharness.common.spec import DTYPES, EvalSpec, Settings

# Trials also run in float64 for the precision report (all of them under --check fp64).
FP64_TRIALS = 2
# Under --check fp64 a candidate may be this many times further from float64 than the reference.
FLOOR_FACTOR = 10.0
# The judge's clock: back-to-back calls per batch (fewer when large), rounds of fresh inputs,
# candidate batch pairs per round (more in one round: the median of two differences on the
# host wandered from 1.3x to 2x its event time for an honest 16 ms call), and how much faster
# than that clock a runner's event times may make the candidate look.
CLOCK_MAX_CALLS = 8
CLOCK_BATCH_MS = 20.0
CLOCK_ROUNDS = 3
CLOCK_REPEATS = 2
CLOCK_REPEATS_ONE_ROUND = 6
CLOCK_TOLERANCE = 1.5
# The share of a batch's time that an honest runner's request, and the host around it, may
# take beyond its calls (a 64 MB output's batch on the host: 5-10 ms of 40).
CLOCK_BATCH_SLACK = 0.25
# What a request costs an honest runner beyond its calls, at least (milliseconds); measured
# as twice the slowest of the pings it answered before it held candidate code.
CLOCK_REQUEST_MS = 0.5
# What an evaluation needs of the device beside the reference's kept answers, in the
# reference's own working sets (its parameters, inputs, output and temporaries): the judge's
# current trial, the buffers it shares with the runner, and the runner's (the candidate's,
# and the output it keeps for the repeat check); and what the two processes' contexts and
# library workspaces take outside torch's counts.
WORKING_SETS = 4
CONTEXTS_BYTES = 2 * memory.GIB
# Calls shorter than this on the judge's clock are mostly host overhead there (Python and
# launches, which the event timer's lead hides): the comparison is recorded, never decisive.
# On the CPU the runner's own work around each call of a batch (seeding, copying the output
# out) put an honest 5 us call at 0.3-0.4 ms on the clock of a two-core host, so its floor is
# a millisecond.
CLOCK_MIN_MS = {"cuda": 0.5, "cpu": 1.0}
# A reference whose call is this many times shorter than the candidate's on the clock is short
# beside it: its clock time cannot be compared with its event time to judge the candidate's.
CLOCK_SHORT_REF = 10.0
# A call timed alone decides only from this many times the request's own cost (``_new_floor``).
CLOCK_LONE_REQUESTS = 3.0


class Stop(Exception):
    """Ends an evaluation early with a verdict; what was gathered so far is kept."""

    def __init__(self, verdict: Verdict, message: str, log: str = ""):
        super().__init__(message)
        self.verdict, self.message, self.log = verdict, message, log


@dataclass
class Trial:
    """What is kept of one check trial between the reference phase and the candidate's: its
    seeds and the reference's answers (parked on the host when large), not its inputs."""

    seed: int
    ref_out: Any
    inputs: list | None = None
    ref_inputs_after: list | None = None
    ref_aliases_input: bool = False
    out64: Any = None
    ref_err64: tuple[float, float] | None = None
    ref_grads: list | None = None

    @property
    def call_seed(self) -> int:
        return self.seed + CALL_SEED_OFFSET


@dataclass
class Findings:
    trials: list[TrialError] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ref_ms: list[float] = field(default_factory=list)
    new_ms: list[float] = field(default_factory=list)
    compiled_ms: list[float] = field(default_factory=list)
    build_s: float | None = None
    language: str = ""
    tier_error: float = 0.0
    ref_err64: float | None = None
    new_err64: float | None = None
    judged_by_fp64: int = 0
    kernels: dict[str, Any] = field(default_factory=dict)
    roofline: dict[str, Any] = field(default_factory=dict)
    work: roofline.Work | None = None
    ceilings: roofline.Ceilings | None = None
    gpu_state: dict[str, Any] = field(default_factory=dict)
    meter: memory.PeakMeter | None = None
    candidate_memory: dict[str, Any] = field(default_factory=dict)
    clock: dict[str, Any] = field(default_factory=dict)
    request_ms: float = CLOCK_REQUEST_MS
    exchange: Exchange | None = None
    phase_s: dict[str, float] = field(default_factory=dict)
    lapped: float = field(default_factory=time.perf_counter)

    def lap(self, part: str) -> None:
        """The seconds since the last lap, added to ``part``."""
        now = time.perf_counter()
        self.phase_s[part] = round(self.phase_s.get(part, 0.0) + now - self.lapped, 4)
        self.lapped = now

    def fail(self, name: str, detail: str) -> None:
        self.checks.append(CheckResult(name, False, detail))
        raise Stop(Verdict.INCORRECT, f"{name}: {detail}")

    def ok(self, name: str, detail: str = "") -> None:
        self.checks.append(CheckResult(name, True, detail))


def evaluate(spec: EvalSpec, run_dir: Path, phase: Callable[[str], None] = lambda p: None,
             runner: Runner | None = None) -> EvalRecord:
    """Evaluate one candidate through ``runner`` (forked by the worker before anything of the
    evaluation existed); never raises for anything the candidate or problem does, except
    ``runner_client.Gone`` when the runner died (its death is the worker's to classify)."""
    started = time.perf_counter()
    settings = spec.settings
    found = Findings()
    source = None
    with stops.watched() as stopped:
        try:
            source = read_solution(spec.solution_path)
            verdict, message, log = _run(spec, source, run_dir, found, phase, runner)
        except Stop as stop:
            verdict, message, log = stop.verdict, stop.message, stop.log
        except Failed as f:
            verdict, message, log = f.verdict, f.message, f.log
        except Gone:
            raise
        except LoadError as e:
            verdict = Verdict.COMPILE_ERROR if e.compile else Verdict.LOAD_ERROR
            message, log = str(e), e.log
        except SharedMemoryError as e:
            # The judge's own buffers, never the candidate's allocation.
            what = "do not fit" if e.errno == OUT_OF_MEMORY else "could not be made"
            verdict, message, log = Verdict.TOO_LARGE, f"the judge's buffers shared with the runner {what}: {e}", ""
        except Exception as e:
            verdict, message, log = classify_exception(e)
            if verdict is Verdict.OOM:
                # Raised in the judge, which runs no candidate code: the harness's limit.
                verdict, message = Verdict.TOO_LARGE, f"the judge's own work does not fit on the device: {message}"
    if stopped.count:
        found.flags.append(f"{FLAG_JUDGE_STOPPED} and continued {stopped.count} time(s) during the evaluation "
                           "(a signal from another process): its times are not kept, no speedup is recorded")
    if verdict is Verdict.OOM and found.meter is not None and found.meter.cuda:
        index = torch.cuda.current_device()
        judge = torch.cuda.memory_reserved(index) + (found.exchange.nbytes() if found.exchange is not None else 0)
        verdict, message = _whose_oom(message, found.meter.limit, torch.cuda.get_device_properties(index).total_memory,
                                      judge, found.meter.peaks.get("reference", 0))
    errors = found.trials
    return EvalRecord(
        problem=_problem_key(spec.problem_path),
        problem_path=str(spec.problem_path),
        solution_path=str(spec.solution_path),
        solution_sha256=source.sha256 if source else "",
        verdict=verdict,
        message=message,
        log_tail=_tail(log),
        settings=settings.to_dict(),
        settings_key=settings.key(),
        env={**env.describe(settings.device), **({"gpu_state": found.gpu_state} if found.gpu_state else {})},
        trials=tuple(errors),
        checks=tuple(found.checks),
        max_abs=max((t.max_abs for t in errors), default=None),
        max_rel=max((t.max_rel for t in errors), default=None),
        **_reference_timings(found, settings),
        new_timing=Timing(tuple(found.new_ms)) if found.new_ms and not _disagrees(found) else None,
        build_s=found.build_s,
        language=found.language,
        wall_s=time.perf_counter() - started,
        precision_tier=check.precision_tier(found.tier_error) if errors else "",
        ref_err_fp64=found.ref_err64,
        new_err_fp64=found.new_err64,
        flags=tuple(found.flags),
        kernels=found.kernels,
        roofline=found.roofline,
        memory=_memory(found),
        judge_clock=found.clock,
        phase_s=found.phase_s,
        judged_by="fp64" if found.judged_by_fp64 else "reference",
        notes=tuple(found.notes),
        timestamp_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def _memory(found: Findings) -> dict[str, Any]:
    """The judge's peaks (the reference's) and the runner's (the candidate's); each process's
    own peak under ``judge`` and ``runner`` (each is capped), the evaluation's their sum."""
    if found.meter is None:
        return {}
    out = found.meter.summary()
    theirs = found.candidate_memory
    if out and isinstance(theirs.get("candidate"), int):
        out["candidate"] = theirs["candidate"]
    if out and isinstance(theirs.get("evaluation"), int):
        out["judge"], out["runner"] = out.get("evaluation", 0), theirs["evaluation"]
        out["evaluation"] = out["judge"] + out["runner"]
    return out


def _whose_oom(message: str, limit: int | None, total: int, judge: int, reference: int) -> tuple[Verdict, str]:
    """The candidate's out-of-memory (in the runner, or the reference's beside it) is charged
    to it only where the judge, holding ``judge`` bytes of a device of ``total``, left the runner
    room for twice the reference's own working set (``reference``: the runner's copy of it and
    the output it keeps for the repeat check); with less, the device is too small for the two
    processes of this evaluation, a limit of the harness (large level-1 references judged
    against themselves on an 80 GB H100, 1/19 among them)."""
    room = min(limit or total, total - judge - CONTEXTS_BYTES)
    if room >= 2 * reference:
        return Verdict.OOM, message
    return Verdict.TOO_LARGE, (f"the candidate ran out of memory with {max(room, 0) / memory.GIB:.1f} GiB of the device "
                               f"left to it beside the judge's {judge / memory.GIB:.1f} GiB, less than twice the "
                               f"reference's own working set ({reference / memory.GIB:.1f} GiB): the device is too "
                               f"small for this evaluation, a limit of the harness ({message[:300]})")


def _disagrees(found: Findings) -> bool:
    return any(f.startswith((FLAG_TIMING_DISAGREES, FLAG_CLOCK_UNAVAILABLE, FLAG_JUDGE_STOPPED)) for f in found.flags)


def _run(spec: EvalSpec, source: SolutionSource, run_dir: Path, found: Findings,
         phase: Callable[[str], None], runner: Runner | None) -> tuple[Verdict, str, str]:
    settings = spec.settings
    device = torch.device(settings.device)
    if source.code is None:
        raise Stop(Verdict.NO_CODE, source.reason)
    lang = _language(spec, source.code)
    found.language = lang.name
    if lang.needs_cuda and (device.type != "cuda" or not torch.cuda.is_available()):
        raise Stop(Verdict.NEEDS_CUDA, "needs CUDA; no GPU visible" if not torch.cuda.is_available()
                   else f"needs CUDA; evaluated on {device}")
    needs = lang.needs()
    if needs:
        raise Stop(Verdict.NEEDS_PACKAGE, needs)
    if runner is None:
        raise RuntimeError("an evaluation that loads its candidate needs a runner")
    cand = RemoteCandidate(runner, device)
    found.exchange = cand.exchange
    runner.on_phase = phase
    cand.begin(spec.to_json(), str(run_dir / "runner"), _libraries(spec.problem_path))
    phase("reference")
    limit = memory.configure_allocator(device, settings.memory_limit_gib)
    found.meter = memory.PeakMeter(device, limit)
    problem = load_problem(spec.problem_path, settings.size_overrides)
    init_inputs = _guarded("reference", problem.get_init_inputs)
    ref_model, on_device = build_reference(problem, init_inputs, settings, device, found)
    ref = _Reference(problem, ref_model, settings, device, found, on_device)
    ref.build_float64(init_inputs)
    trials = _reference_trials(ref)
    if device.type == "cuda":
        # The reference phase's freed blocks, given back: cached in the judge they are memory the
        # runner cannot have (13 GiB of 1/19's, which ran its candidate out of memory on an H100).
        torch.cuda.empty_cache()
    _count_work(problem, spec, device, found)
    found.lap("reference")
    notes, sees_gpu = cand.started()
    found.lap("waiting for the runner's start")
    found.request_ms = _request_ms(cand)
    found.lap("judge's clock")
    found.notes.extend(notes)
    if device.type == "cuda" and not sees_gpu:
        raise Stop(Verdict.NEEDS_CUDA, "needs CUDA; the runner's sandbox hides the GPU on this machine "
                                       "(a limit of the harness here: --no-sandbox runs it)")

    phase("build")
    t0 = time.perf_counter()
    cand.load()
    ref.beside_candidate = True
    built = False
    if lang.lazy:
        # Its kernels compile (and autotune) at their first call: that call is the build's, under
        # its time limit, on inputs of the timing warm-up's seed, never a checked trial's.
        _construct(cand, init_inputs, ref)
        built = True
        with torch.no_grad():
            cand.call("warm", make_inputs(problem, settings.seed, settings, device), settings.seed, None)
    found.build_s = time.perf_counter() - t0
    found.lap("build")
    phase("check")
    _check_integrity(cand, "importing the candidate", found)
    if not built:
        _construct(cand, init_inputs, ref)
    with torch.no_grad():
        _check_trials(cand, trials, ref, found)
        _check_determinism(cand, trials[0], ref, found)
    if settings.backward:
        _check_gradients(cand, trials, ref, found)
    del trials
    if device.type == "cuda":
        # The reference's answers and both processes' check-phase caches, given back: 30 GiB of
        # 1/19's stayed cached in the judge while its candidate ran out of memory in the timed
        # calls on an H100.
        cand.release()
    _check_integrity(cand, "the checked calls", found)
    found.lap("check")
    phase("time")
    found.gpu_state["start"] = env.gpu_state(settings.device)
    with torch.set_grad_enabled(settings.backward):
        _time_interleaved(ref, cand, found)
    found.gpu_state["end"] = env.gpu_state(settings.device)
    drift = env.state_drift(found.gpu_state["start"], found.gpu_state["end"])
    if drift:
        found.flags.append(drift)
    _check_integrity(cand, "the timed calls", found)
    found.lap("time")
    if not settings.backward:
        if device.type == "cuda":
            # The timed calls' caches, given back: kept, they left no room for the clock's one
            # call of 10 of KernelBench's largest level-1 references on an H100.
            cand.release()
        with torch.no_grad():
            try:
                _judge_clock(ref, cand, found)
            except (SharedMemoryError, torch.OutOfMemoryError, Failed) as e:
                if isinstance(e, Failed) and e.verdict is not Verdict.OOM:
                    raise
                found.flags.append(f"{FLAG_CLOCK_UNAVAILABLE}: its batches do not fit on the device beside the "
                                   f"evaluation ({_first_line(e)}): "
                                   "no speedup is recorded")
            if device.type == "cuda":
                cand.release()
        found.lap("judge's clock")
    if device.type == "cuda":
        try:
            _profile_kernels(problem, ref_model, cand, settings, device, found, source.code)
        except (torch.OutOfMemoryError, Failed) as e:
            if isinstance(e, Failed) and e.verdict is not Verdict.OOM:
                raise
            # Listing kernels runs both models once more under a profiler, after the verdict is
            # made: 1/45's 16 GiB input did not fit a third time on an H100.
            found.notes.append(f"kernels not listed: a profiled call does not fit on the device beside the evaluation "
                               f"({_first_line(e)})")
        found.lap("kernels")
    found.candidate_memory = cand.memory()
    _speed_of_light(settings, found)
    found.lap("rest")
    if not found.new_ms:
        raise Stop(Verdict.RUNTIME_ERROR, "no timed run completed")
    return Verdict.CORRECT, "", ""


# A problem whose source names one of these calls cuDNN (convolutions, recurrent layers,
# batch and instance norm).
_CUDNN_OPS = re.compile(r"conv|lstm|gru|rnn|batch_?norm|instance_?norm", re.IGNORECASE)


def _libraries(problem_path: Path) -> tuple[str, ...]:
    """What the runner loads before the candidate while the judge runs the reference: cuDNN
    costs a fresh process 0.4 s on an H200, which only a problem that calls it should wait for
    (a candidate that calls it anyway pays it in its first call, as the reference did)."""
    try:
        return ("cudnn",) if _CUDNN_OPS.search(problem_path.read_text()) else ()
    except (OSError, UnicodeDecodeError):
        return ()


def _language(spec: EvalSpec, code: str) -> languages.Language:
    try:
        return languages.of(code, spec.language)
    except languages.UnknownLanguage as e:
        raise Stop(Verdict.LOAD_ERROR, str(e)) from None


def build_reference(problem: Any, init_inputs: list, settings: Settings, device: torch.device,
                     found: Findings) -> tuple[torch.nn.Module, bool]:
    """The reference model and whether it was built on the device; one whose construction
    fails there (a host-only op in ``__init__``) is built on the host, and so is the candidate."""
    try:
        return build_model(problem.Model, init_inputs, settings, device), True
    except Exception as e:  # noqa: BLE001  (problem code; the host build below raises what is real)
        if device.type == "cpu" or memory.is_oom(e):
            raise
        model = _guarded("reference", lambda: build_model(problem.Model, init_inputs, settings, device, on_device=False))
        found.notes.append(f"the reference cannot be constructed on {device} ({type(e).__name__}); "
                           "both models are constructed on the host and moved")
        return model, False


def _construct(cand: RemoteCandidate, init_inputs: list, ref: _Reference) -> None:
    """Built where the reference was, from the same seed (the runner falls back to the host,
    with a note, where the device refuses the candidate's construction)."""
    note = cand.construct(init_inputs, ref.on_device)
    if note:
        ref.found.notes.append(note)


def make_inputs(problem: Any, seed: int, settings: Settings, device: torch.device, who: str = "reference") -> list:
    """A fresh input set from the problem's ``get_inputs`` under ``seed``, on the device, cast to the precision."""
    seed_rng(seed, device)
    if device.type == "cuda":
        # Drawn on the GPU directly: a fresh set per timed call must not cost seconds of host RNG.
        with device:
            inputs = _guarded(who, problem.get_inputs)
    else:
        inputs = _guarded(who, problem.get_inputs)
    dtype = DTYPES[settings.precision]
    return [_cast(x.to(device), dtype) if isinstance(x, torch.Tensor) else x for x in inputs]


def _cast(x: Any, dtype: torch.dtype) -> Any:
    return x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x


def _cast_all(out: Any, dtype: torch.dtype) -> Any:
    if isinstance(out, (tuple, list)):
        return type(out)(_cast_all(o, dtype) for o in out)
    return _cast(out, dtype)


def _buffers_like(inputs: list) -> list:
    """Uninitialized buffers for a timed call's inputs, which the timer's stage fills."""
    return [torch.empty_like(x) if isinstance(x, torch.Tensor) else x for x in inputs]


class _Reference:
    """The problem's side of an evaluation: its inputs, the reference model and its float64 twin.

    Float64 is auxiliary: a model that cannot run in float64 (a plain tensor attribute that
    ``.to(float64)`` leaves in float32, an op without a float64 kernel) or does not fit leaves
    a note and the verdict to the comparison with the reference."""

    def __init__(self, problem: Any, model: torch.nn.Module, settings: Settings, device: torch.device,
                 found: Findings, on_device: bool = True):
        self.problem, self.model, self.settings, self.device, self.found = problem, model, settings, device, found
        self.on_device = on_device
        self.model64: torch.nn.Module | None = None
        self.redraw = True
        self.stochastic = False
        self.beside_candidate = False
        self.keeper = memory.Keeper(device, found.meter.limit)

    @property
    def who(self) -> str:
        return "reference beside the candidate" if self.beside_candidate else "reference"

    def inputs(self, trial: Trial) -> list:
        if trial.inputs is not None:
            return memory.to_device(trial.inputs, self.device)
        return make_inputs(self.problem, trial.seed, self.settings, self.device, self.who)

    def call(self, inputs: list, call_seed: int) -> Any:
        seed_rng(call_seed, self.device)
        return detach(_guarded(self.who, lambda: self.found.meter.call(
            "reference", self.model, inputs, lambda: self.model(*inputs))))

    def build_float64(self, init_inputs: list) -> None:
        try:
            self.model64 = build_model(self.problem.Model, init_inputs, self.settings, self.device, torch.float64,
                                       on_device=self.on_device)
        except Exception as e:  # noqa: BLE001  (problem code: any failure only costs the float64 figures)
            self._drop64(e)

    def float64(self, inputs: list, call_seed: int) -> Any:
        """The reference's float64 output on ``inputs``, or None (with a note) when it cannot be made."""
        if self.model64 is None:
            return None
        try:
            with torch.no_grad():
                seed_rng(call_seed, self.device)
                args = [x.to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point()
                        else x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
                return detach(self.model64(*args))
        except Exception as e:  # noqa: BLE001
            self._drop64(e)
            return None

    def _drop64(self, e: BaseException) -> None:
        self.model64 = None
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        why = "does not fit on the device" if memory.is_oom(e) else f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        self.found.notes.append(f"float64 run skipped ({why}); the verdict rests on the comparison with the reference")


def _reference_trials(ref: _Reference) -> list[Trial]:
    """Reference outputs (and float64 outputs, gradients, null-candidate controls) for every
    trial, one trial on the device at a time."""
    settings, found = ref.settings, ref.found
    seeds = [settings.seed + 1 + i for i in range(settings.n_trials)] + [secrets.randbits(31)]
    n64 = len(seeds) if settings.judge == "fp64" else FP64_TRIALS
    atol, rtol = settings.tolerance
    passing: set[str] | None = None
    trials = []
    dropped64 = 0
    for i, seed in enumerate(seeds):
        inputs = make_inputs(ref.problem, seed, settings, ref.device)
        if i == 0:
            again = make_inputs(ref.problem, seed, settings, ref.device)
            ref.redraw = check.compare(_tensors(inputs), _tensors(again), 0.0, 0.0).passed
            del again
            if not ref.redraw:
                found.notes.append("get_inputs() draws different inputs from the same seed; each trial's inputs are kept")
        trial = Trial(seed, None)
        ref_in = clone(inputs)
        with torch.no_grad():
            out = ref.call(ref_in, trial.call_seed)
            if i == 0:
                _check_stochastic(ref, inputs, out, trial.call_seed)
                ref.keeper.leave(WORKING_SETS * found.meter.peaks.get("reference", 0) + CONTEXTS_BYTES)
            out64 = ref.float64(inputs, trial.call_seed) if i < n64 else None
            if out64 is not None:
                trial.ref_err64 = check.error_vs(out64, out)
        if settings.backward:
            trial.ref_grads = ref.keeper.keep(_guarded(ref.who, lambda: gradients(ref.model, inputs, seed)))
        names = controls.passing_on(inputs, out, atol, rtol, among=passing)
        passing = names if passing is None else passing & names
        trial.ref_aliases_input = any(_shares(r, x) for r in _flat(out) for x in ref_in)
        if not check.compare(_tensors(inputs), _tensors(ref_in), 0.0, 0.0).passed:
            trial.ref_inputs_after = ref.keeper.keep(ref_in)
        if not ref.redraw:
            trial.inputs = ref.keeper.keep(inputs)
        trial.ref_out = ref.keeper.keep(out)
        if out64 is not None:
            # Auxiliary: kept only where the answers the later trials' verdicts need leave room on
            # the device (a host round trip of a 12 GiB float64 output costs more than the evaluation).
            if ref.keeper.fits(out64, reserve=memory.nbytes(out) * (len(seeds) - 1 - i)):
                trial.out64 = ref.keeper.keep(out64)
            else:
                dropped64 += 1
        del inputs, ref_in, out, out64
        trials.append(trial)
    if dropped64:
        found.notes.append(f"float64 answers of {dropped64} trials not kept (no room beside the reference's answers): "
                           "the candidate's float64 error is not reported, and float64 is run again only to arbitrate")
    if not ref.stochastic:
        for name in sorted(passing or ()):
            found.flags.append(f"{FLAG_CANNOT_DISCRIMINATE}: {name} passes the check")
    return trials


def _check_stochastic(ref: _Reference, inputs: list, out: Any, call_seed: int) -> None:
    """A reference that differs from itself from the same RNG state cannot judge values; one
    that only changes with the state draws random numbers, which both models share."""
    atol, rtol = ref.settings.tolerance
    again = check.compare(out, ref.call(clone(inputs), call_seed), atol, rtol)
    if not again.passed:
        ref.stochastic = True
        ref.found.flags.append(f"{FLAG_STOCHASTIC}: two calls from the same RNG state differ ({again.reason}); "
                               "only shapes, dtypes and finiteness are checked")
        return
    if not check.compare(out, ref.call(clone(inputs), call_seed + 1), atol, rtol).passed:
        ref.found.notes.append("the reference draws random numbers: both models start every call from the same "
                               "RNG state, so a candidate must draw them the same way")


@dataclass(frozen=True)
class _Judged:
    result: check.Comparison
    by_fp64: bool = False
    out64: Any = None


def _judge(ref: _Reference, ref_out: Any, out: Any, inputs: list, call_seed: int,
           out64: Any = None, ref_err64: float | None = None) -> _Judged:
    """The verdict on one output. Against the reference first; a candidate outside the
    tolerance there but within it against float64 (computed for this call when not at hand)
    is closer to the exact answer than the reference and passes, judged by float64. Under
    --check fp64 it may also be up to FLOOR_FACTOR times the reference's own float64 error."""
    settings = ref.settings
    atol, rtol = settings.tolerance
    result = check.compare(ref_out, out, atol, rtol)
    if result.passed or result.max_abs == float("inf"):
        return _Judged(result)
    if ref.stochastic:
        return _Judged(check.Comparison(True, result.max_abs, result.max_rel,
                                        "values not compared: stochastic reference"))
    if out64 is None:
        out64 = ref.float64(inputs, call_seed)
    if out64 is None:
        return _Judged(result)
    if check.compare(out64, _cast_all(out, torch.float64), atol, rtol).passed:
        return _Judged(check.Comparison(True, result.max_abs, result.max_rel, "within tolerance of float64"),
                       True, out64)
    if settings.judge == "fp64" and ref_err64 is not None:
        cand_abs, _ = check.error_vs(out64, out)
        if cand_abs <= FLOOR_FACTOR * max(ref_err64, 1e-30):
            return _Judged(check.Comparison(True, result.max_abs, result.max_rel,
                                            f"within {FLOOR_FACTOR:g}x the reference's own float64 error"), True, out64)
    return _Judged(result, out64=out64)


def _check_trials(cand: RemoteCandidate, trials: list[Trial], ref: _Reference, found: Findings) -> None:
    for t in trials:
        inputs = ref.inputs(t)
        called = cand.call("check", inputs, t.call_seed, t.ref_out)
        out = called.out
        judged = _judge(ref, t.ref_out, out, inputs, t.call_seed, t.out64, t.ref_err64 and t.ref_err64[0])
        result = judged.result
        found.trials.append(TrialError(t.seed, result.passed, result.max_abs, result.max_rel, result.reason))
        found.tier_error = max(found.tier_error, check.error_vs(t.ref_out, out)[1])
        out64 = t.out64 if t.out64 is not None else judged.out64
        if out64 is not None:
            found.new_err64 = max(found.new_err64 or 0.0, check.error_vs(out64, out)[0])
        if t.ref_err64 is not None:
            found.ref_err64 = max(found.ref_err64 or 0.0, t.ref_err64[0])
        if not result.passed:
            found.fail("output matches reference", f"trial seed {t.seed}: {result.reason}")
        found.judged_by_fp64 += judged.by_fp64
        expected_in = t.ref_inputs_after if t.ref_inputs_after is not None else inputs
        _run_checks("trial", checks.TrialCall(t.seed, expected_in, called.inputs_after, called.aliases_input,
                                              called.aliases_param, t.ref_aliases_input), found)
        del inputs, called, out, judged, out64
    detail = f"{len(trials)} trials, one from a fresh random seed"
    if found.judged_by_fp64:
        detail += (f"; {found.judged_by_fp64} judged against float64 (outside the tolerance of the reference, "
                   "within it of the exact answer)")
        found.notes.append(f"judged by float64 on {found.judged_by_fp64} of {len(trials)} trials: the candidate is "
                           "outside the tolerance of the reference but within it of the float64 answer")
    found.ok("output matches reference", detail)
    _passed("trial", found)


def _check_determinism(cand: RemoteCandidate, trial: Trial, ref: _Reference, found: Findings) -> None:
    inputs = ref.inputs(trial)
    first = cand.call("repeat", inputs, trial.call_seed, trial.ref_out, keep=True)
    first_out = _owned(first.out)  # the next call reuses the buffers
    second = cand.call("repeat", inputs, trial.call_seed, trial.ref_out, keep=True)
    atol, rtol = ref.settings.tolerance
    _run_checks("repeat", checks.RepeatCall(trial.seed, first_out, second.out, atol, rtol, ref.stochastic,
                                            second.same_memory), found)
    _passed("repeat", found)


def _owned(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return out.clone()
    if isinstance(out, (tuple, list)):
        return type(out)(_owned(o) for o in out)
    return out


def _check_gradients(cand: RemoteCandidate, trials: list[Trial], ref: _Reference, found: Findings) -> None:
    atol, rtol = ref.settings.tolerance
    for t in trials:
        grads = cand.gradients(ref.inputs(t), t.seed, t.ref_grads)
        grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
        if len(grads) != len(t.ref_grads):
            found.fail("gradients match", f"{len(grads)} input and parameter gradients, reference has {len(t.ref_grads)}")
        result = check.compare(t.ref_grads, grads, atol, rtol)
        if not result.passed:
            found.fail("gradients match", f"trial seed {t.seed}: {result.reason}")
    found.ok("gradients match", f"inputs and parameters, {len(trials)} trials")


def _check_integrity(cand: RemoteCandidate, when: str, found: Findings) -> None:
    """The runner's own guard (its word: a candidate that patched the guard too is left to the
    judge's clock and the comparisons)."""
    changes = cand.integrity()
    if changes:
        found.fail("harness integrity", f"after {when}: " + "; ".join(changes))


def _time_interleaved(ref: _Reference, cand: RemoteCandidate, found: Findings) -> None:
    """Reference then candidate on each fresh input set, each after a cache flush and from the
    same RNG state; every output compared."""
    problem, ref_model, settings, device = ref.problem, ref.model, ref.settings, ref.device
    timer = timing.timer_for(device)
    warm_inputs = make_inputs(problem, settings.seed, settings, device)
    # torch.compile is lazy: a backend that cannot compile this problem fails at the first warm-up call.
    compiled = torch.compile(ref_model) if settings.baseline != "eager" else None
    cand.warm(warm_inputs, settings.n_warmup)
    for _ in range(settings.n_warmup):
        ref_model(*clone(warm_inputs))
        if compiled is not None:
            try:
                compiled(*clone(warm_inputs))
            except Exception as e:  # noqa: BLE001  (inductor failing on this problem or machine)
                found.flags.append(f"torch.compile baseline unavailable: {type(e).__name__}: {str(e)[:200]}")
                compiled = None
    _sync(device)
    graph = _graphs(cand, ref_model, warm_inputs, settings, device, found) if settings.cuda_graph else None
    del warm_inputs
    pending_new, pending_ref = [], []
    host_bound = 0
    deadline = time.perf_counter() + settings.time_budget_s
    # Drawn now, after the candidate is loaded: inputs it could predict it could answer from a
    # table computed at import (tests/fixtures/candidates/lookup_table.py).
    base = secrets.randbits(31)

    def reference_call(i: int) -> tuple[list, Any]:
        inputs = make_inputs(problem, base + i, settings, device, ref.who)
        if graph is not None:
            ref_in, ref_call = graph.static_in, graph
        else:
            ref_in = _buffers_like(inputs)
            ref_call = lambda: ref_model(*ref_in)  # noqa: E731
        _sync(device)
        seed_rng(base + i + CALL_SEED_OFFSET, device)
        return inputs, _guarded(ref.who, lambda: timer.time(ref_call, stage=Staged(ref_in, inputs), key="reference"))

    for i in range(settings.n_runs):
        call_seed = base + i + CALL_SEED_OFFSET
        try:
            inputs, timed_ref = reference_call(i)
        except (Stop, torch.OutOfMemoryError) as e:
            if isinstance(e, Stop) and e.verdict is not Verdict.OOM:
                raise
            # Out of memory beside the candidate: tried once more after both processes give
            # their caches back (the runner's held 1/38's check-phase copies on an H100).
            cand.release()
            inputs, timed_ref = reference_call(i)
        ref_out = memory.compact(detach(timed_ref.output))
        new = cand.time(inputs, call_seed, ref_out, grad=settings.backward)
        host_bound += new.time.host_bound
        if compiled is not None:
            comp_in = clone(inputs)
            seed_rng(call_seed, device)
            found.compiled_ms.append(timer.time(lambda: compiled(*comp_in), key="compiled").time.call_ms)
        found.new_ms.append(new.time.call_ms)
        found.ref_ms.append(timed_ref.time.call_ms)
        pending_new.append(new.time.pending_ms)
        pending_ref.append(timed_ref.time.pending_ms)
        if new.changed_after_return:
            found.fail("no hidden work", f"timed call {i}: output changed after the call returned "
                       "(asynchronous work outside the timed region)")
        result = _judge(ref, ref_out, new.out, inputs, call_seed, ref_err64=found.ref_err64).result
        if not result.passed:
            found.fail("timed outputs match", f"timed call {i}: {result.reason}")
        del inputs, new, timed_ref, ref_out
        if i + 1 >= settings.min_runs and (time.perf_counter() > deadline or _settled(found, settings)):
            break
    found.ok("timed outputs match", f"all {len(found.new_ms)} timed calls")
    _run_checks("timing", checks.TimingRun(tuple(found.new_ms), tuple(found.ref_ms), tuple(pending_new),
                                           tuple(pending_ref), host_bound, settings.max_speedup), found)
    _passed("timing", found)


def _judge_clock(ref: _Reference, cand: RemoteCandidate, found: Findings) -> None:
    """The judge's own clock over back-to-back calls on fresh inputs: the reference's batch
    timed around its calls here, the candidate's from request until the judge holds its own copy
    of every output (work the runner defers past its reply is either in that copy, and so on
    the clock, or not, and so wrong), once with ``calls`` calls and once with one, so that the
    difference is ``calls - 1`` calls and the request's own cost cancels (a call long enough to
    fill a batch is timed alone, whole, twice, and the shorter kept). Every copy is verified. Where the candidate's calls are long
    enough for the clock to see past the host's overhead, a runner whose times make them more
    than ``CLOCK_TOLERANCE`` times shorter than the clock, and its speedup as many times
    larger, is flagged and the record keeps no speedup. A candidate call that a round puts under
    ``CLOCK_MIN_MS`` cannot be decided by more rounds (they can only lower the least batches),
    and ends the clock there (the runner cannot make its calls shorter on this clock than they are). A clock that
    disagrees is measured once more, and only a second disagreement counts: on a two-core host
    a burst of other work put an honest candidate's 0.12 ms calls at 6 ms for a whole clock
    (its batches' requests waited for the CPU), where a forged time disagrees every time."""
    ref_ms, new_ms = statistics.median(found.ref_ms), statistics.median(found.new_ms)
    device_type = ref.device.type
    clock = _clock_once(ref, cand, found, ref_ms, new_ms)
    measured = 1

    def disagreeing(c: dict[str, Any]) -> bool:
        return _clock_disagrees(ref_ms, new_ms, c["ref_ms"], c["new_ms"], device_type, _new_floor(c, device_type))

    disagrees = disagreeing(clock)
    if disagrees:
        clock = _clock_once(ref, cand, found, ref_ms, new_ms)
        measured = 2
        disagrees = disagreeing(clock)
    clock_ref, clock_new = clock["ref_ms"], clock["new_ms"]
    slower = clock_new / new_ms
    agreement = (ref_ms / new_ms) / (clock_ref / clock_new)
    decisive = clock_new >= _new_floor(clock, device_type)
    found.clock = {**clock, "measured": measured, "new_over_events": slower if decisive else None,
                   "agreement": agreement if decisive else None}
    if disagrees:
        found.flags.append(f"{FLAG_TIMING_DISAGREES}: the judge's clock times a candidate call at {clock_new:.3g} ms, "
                           f"{slower:.2f}x the runner's {new_ms:.3g} ms, and its speedup at {clock_ref / clock_new:.3g}x "
                           f"against {ref_ms / new_ms:.3g}x by the runner's times (measured twice): no speedup is recorded")


def _clock_once(ref: _Reference, cand: RemoteCandidate, found: Findings, ref_ms: float, new_ms: float) -> dict[str, Any]:
    """One measurement of the judge's clock (``_judge_clock``), its batches sized by the two
    models' median event times: the batches' sizes and rounds, and a call of each model's time,
    each from its least batches (the median of the reference's rounds, against the candidate's
    least, let a loaded host put a 0.05 ms reference call over 1 ms and a forger pass)."""
    problem, model, settings, device = ref.problem, ref.model, ref.settings, ref.device
    # A candidate call that fills a batch by itself is timed alone, whole: the request's own
    # cost (a millisecond) is lost in it, and batches of it would cost calls of seconds on a host.
    # So is one where two calls do not fit: forced into a batch of two, 1/63's second call on an
    # H100 had no room for cuDNN's workspace, ran another algorithm and missed the tolerance.
    alone = new_ms >= CLOCK_BATCH_MS
    fit = CLOCK_MAX_CALLS if alone else _calls_that_fit(ref)
    alone = alone or fit < 2
    calls = 1 if alone else max(2, min(CLOCK_MAX_CALLS, int(CLOCK_BATCH_MS / max(new_ms, 1e-3)),
                                       int(10 * CLOCK_BATCH_MS / max(ref_ms, 1e-3)), fit))
    rounds = CLOCK_ROUNDS if not alone and calls * max(ref_ms, new_ms) <= 1.5 * CLOCK_BATCH_MS else 1
    batches = (1,) if alone else (calls, 1)
    ref_walls, fulls, singles, copies = [], [], [], []
    # Both batches seed the RNG before each call, the runner copies each output into the judge's
    # buffers and the judge copies it out: those, timed here, are neither model's.
    seeding = _seeding_ms(device)
    on_clock = lambda: max(_clock_call_ms(fulls, singles, calls, found.request_ms)  # noqa: E731
                           - seeding - 2 * statistics.median(copies), 1e-6)
    floor = CLOCK_MIN_MS.get(device.type, 0.0)
    draw = lambda: [make_inputs(problem, base + k, settings, device, ref.who) for k in range(calls)]  # noqa: E731
    for r in range(rounds):
        base = secrets.randbits(31)
        seeds = [base + CALL_SEED_OFFSET + k for k in range(calls)]
        # The reference's batch runs on the inputs themselves. On a GPU they are then drawn again
        # from their seeds for the candidate, which costs no memory and little time; on the host,
        # or where get_inputs() cannot redraw them, copies are kept (host RNG is slow).
        sets = draw()
        kept = [clone(s) for s in sets] if not ref.redraw or device.type != "cuda" else None
        outs = [None] * calls
        _sync(device)
        t0 = time.perf_counter_ns()
        for k in range(calls):
            seed_rng(seeds[k], device)
            outs[k] = _guarded(ref.who, lambda: detach(model(*sets[k])))
        _sync(device)
        ref_walls.append((time.perf_counter_ns() - t0) / 1e6 / calls)
        del sets
        sets = kept if kept is not None else draw()
        del kept
        # The judge's own copies of the candidate's outputs go into buffers made (and touched)
        # before the clock starts: allocating them inside it cost a 65 MB output on the host
        # 25 ms of fresh pages a call, which the copy's own time, subtracted, did not hold.
        targets = [_owned(o) for o in outs]
        copies.append(_copy_ms(outs, targets, device))
        for _ in range(CLOCK_REPEATS if alone or rounds > 1 else CLOCK_REPEATS_ONE_ROUND):
            walls = []
            for n in batches:
                refs, out_ids = cand.stage_batch(sets[:n], outs[:n])
                _sync(device)
                t0 = time.perf_counter_ns()
                cand.batch(refs, out_ids, seeds[0])
                delivered = cand.batch_outputs(outs[:n])
                sealed = _seal(delivered, targets)
                _sync(device)
                walls.append((time.perf_counter_ns() - t0) / 1e6)
                for k, out in enumerate(sealed):
                    _judge_sealed(ref, outs[k], out, delivered[k], sets[k], seeds[k], f"batch {r} call {k}", found)
                del delivered, sealed
            fulls.append(walls[0])
            singles.extend(walls[1:])
        del sets, outs, targets
        if on_clock() < floor:
            break
    return {"calls": calls, "rounds": len(ref_walls), "ref_ms": max(min(ref_walls) - seeding, 1e-6),
            "new_ms": on_clock(), "copy_ms": statistics.median(copies), "request_ms": found.request_ms}


def _clock_call_ms(fulls: list[float], singles: list[float], calls: int, request_ms: float) -> float:
    """A candidate call's time from the least full batch and the least one-call batch (a lone
    call's, without one-call batches, from its least): the host's noise only ever adds to a
    batch, so each least is its cleanest measure. Differences taken pair by pair, and the
    median of them, put an honest reference against itself at 0.3-0.4 ms a call on a two-core
    host, 3x its event time; the least of them let one pair whose one-call batch a stalled host
    had slowed put a 2 ms call under the CPU's 1 ms floor, and a forgery went undecided."""
    if not singles:
        return min(fulls)
    return _per_call_ms(min(fulls), min(singles), calls, request_ms)


def _per_call_ms(full_ms: float, single_ms: float, calls: int, request_ms: float) -> float:
    """A candidate call's time from a batch of ``calls`` calls and one of a single call: their
    difference per call, the request's own cost cancelled. The single call's batch is the
    runner's to slow down, which would shrink the difference to nothing, so the full batch
    bounds a call from below whatever the runner does: its time less what an honest request
    costs (``request_ms``, measured before the candidate existed), less the slack the host
    may add around a large output. Without that request cost taken off, microsecond calls on
    a busy host came out at a quarter of a millisecond each, over the 0.2 ms floor the CPU's
    clock had then."""
    return max((full_ms - single_ms) / (calls - 1), (1 - CLOCK_BATCH_SLACK) * max(full_ms - request_ms, 0.0) / calls)


def _request_ms(cand: RemoteCandidate, n: int = 10) -> float:
    """Twice the median of ``n`` pings, at least ``CLOCK_REQUEST_MS``: asked before the runner
    imports the candidate, so the answers are the harness's, never the candidate's. Twice the
    slowest, as it was, let one ping stalled by a busy host (6 ms on the two-core CI) take a
    2 ms call's forged times under the clock's floor, undecided, and keep their speedup."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        cand.ping()
        times.append((time.perf_counter_ns() - t0) / 1e6)
    return max(CLOCK_REQUEST_MS, 2 * statistics.median(times))


def _new_floor(clock: dict[str, Any], device_type: str) -> float:
    """The least candidate call the clock decides on: its floor, and for a call timed alone,
    which carries its request's cost whole, ``CLOCK_LONE_REQUESTS`` times that cost (an honest
    microsecond call, alone where two did not fit, came out over the CPU's floor on a busy
    two-core host and was flagged)."""
    floor = CLOCK_MIN_MS.get(device_type, 0.0)
    return floor if clock["calls"] > 1 else max(floor, CLOCK_LONE_REQUESTS * clock["request_ms"])


def _clock_disagrees(ref_ms: float, new_ms: float, clock_ref: float, clock_new: float, device_type: str,
                     new_floor: float) -> bool:
    """Two ratios, both 1 for a runner that tells the truth about a device-bound call: the
    clock's time of a candidate call over its event time, and the events' speedup over the
    clock's. Forged times raise both; a cold cache (the events flush it, a batch does not) lowers
    the first, and a reference slower when flushed only raises the second. Calls shorter than
    ``CLOCK_MIN_MS`` are mostly the host's overhead on the clock: a candidate's decides nothing,
    and against a reference's the speedups cannot be compared, so a candidate call the clock
    times as clearly longer than the reference's decides. Where the reference itself takes
    longer on the clock than on its events (launch-bound: ResNet18 at batch 2 took 4.4 times),
    the clock sees host time, which varied by a factor of two between the judge's process and
    the runner's for the same model (3/28 on the H200): the second ratio is allowed that much more.
    A reference whose clock time is a small part of the candidate's (under ``1 / CLOCK_SHORT_REF``)
    is short beside it whatever the floor: its overhead says nothing of a call that long (a
    60 ms call reported as 24 ms passed against a 0.1 ms reference whose clock time was 0.2 ms,
    over the floor it had then)."""
    floor = CLOCK_MIN_MS.get(device_type, 0.0)
    if clock_new < new_floor or clock_new / new_ms <= CLOCK_TOLERANCE:
        return False
    if clock_ref < floor or clock_new > CLOCK_SHORT_REF * clock_ref:
        return clock_new > CLOCK_TOLERANCE * clock_ref
    host_bound = max(1.0, clock_ref / ref_ms)
    return (ref_ms / new_ms) / (clock_ref / clock_new) > CLOCK_TOLERANCE * host_bound


def _calls_that_fit(ref: _Reference) -> int:
    """Calls of a batch whose memory fits on the device: per call, the judge holds its inputs,
    the reference's output and its sealed copy of the candidate's, and shares an input and an
    output buffer with the runner; one call's worth is left for the models' own temporaries.
    The room is the judge's cap less what it holds, and no more than the device has free
    (the runner's memory is not under the judge's cap)."""
    if ref.device.type != "cuda":
        return CLOCK_MAX_CALLS
    example = make_inputs(ref.problem, ref.settings.seed, ref.settings, ref.device, ref.who)
    in_bytes = memory.nbytes(example)
    with torch.no_grad():
        out_bytes = memory.nbytes(detach(ref.call(example, CALL_SEED_OFFSET)))
    del example
    index = ref.device.index if ref.device.index is not None else torch.cuda.current_device()
    cap = ref.found.meter.limit or torch.cuda.get_device_properties(index).total_memory
    allocated = torch.cuda.memory_allocated(index)
    free, _ = torch.cuda.mem_get_info(index)
    room = min(cap - allocated, free + torch.cuda.memory_reserved(index) - allocated)
    return int(room // max(1, 2 * in_bytes + 3 * out_bytes)) - 1


def _judge_sealed(ref: _Reference, ref_out: Any, sealed: Any, delivered: Any, inputs: list, call_seed: int,
                  where: str, found: Findings) -> None:
    """Judge the copy the judge's clock sealed before it stopped: the runner keeps its mapping of
    the buffers, and anything it writes there later was outside the clock. A wrong copy whose
    buffer has since become right is named for that."""
    result = _judge(ref, ref_out, sealed, inputs, call_seed, ref_err64=found.ref_err64).result
    if result.passed:
        return
    if _judge(ref, ref_out, delivered, inputs, call_seed, ref_err64=found.ref_err64).result.passed:
        found.fail("no hidden work", f"the judge's clock, {where}: the output was written after the runner had "
                   "replied (work outside the judge's clock)")
    found.fail("timed outputs match", f"the judge's clock, {where}: {result.reason}")


def _seeding_ms(device: torch.device, groups: int = 5, n: int = 8) -> float:
    """A call's seeding, from the least of ``groups`` timed groups: the host's noise only adds,
    and the mean of one group, stalled on a busy host, came out over the reference's whole call
    (its clock at 1e-6 ms) and took a third of a millisecond off the candidate's."""
    least = float("inf")
    for _ in range(groups):
        t0 = time.perf_counter_ns()
        for i in range(n):
            seed_rng(i, device)
        least = min(least, (time.perf_counter_ns() - t0) / 1e6 / n)
    return least


def _seal(delivered: list, targets: list) -> list:
    """The judge's own copy of each delivered output, in its target where it has the target's
    layout (the reference's), else a fresh one (an output of another layout fails anyway)."""
    sealed = []
    for out, target in zip(delivered, targets):
        if _same_layout(out, target):
            for t, o in zip(_flat(target), _flat(out)):
                if isinstance(t, torch.Tensor):
                    t.copy_(o)
            sealed.append(target)
        else:
            sealed.append(_owned(out))
    return sealed


def _same_layout(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and a.dtype == b.dtype and a.device == b.device)
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same_layout(x, y) for x, y in zip(a, b))
    return False


def _copy_ms(outs: list, targets: list, device: torch.device) -> float:
    """Time of one output copy (per call) into ``targets``, the mean over ``outs``."""
    _sync(device)
    t0 = time.perf_counter_ns()
    for target, out in zip(targets, outs):
        for t, o in zip(_flat(target), _flat(out)):
            if isinstance(t, torch.Tensor):
                t.copy_(o)
    _sync(device)
    return (time.perf_counter_ns() - t0) / 1e6 / len(outs)


def _run_checks(phase: str, context: Any, found: Findings) -> None:
    """The registered checks of ``phase``: a failing ``fail`` check ends the evaluation as
    incorrect under its name, a ``flag`` check's finding is kept for review."""
    for c in checks.for_phase(phase):
        seen = c.run(context)
        if not seen:
            continue
        if c.severity == "fail":
            found.fail(c.name, seen)
        found.flags.append(seen)


def _passed(phase: str, found: Findings) -> None:
    """Record the phase's fail checks as passed, once per name."""
    recorded = {c.name for c in found.checks}
    for name in dict.fromkeys(c.name for c in checks.for_phase(phase) if c.severity == "fail"):
        if name not in recorded:
            found.ok(name)


def _graphs(cand: RemoteCandidate, ref_model, example: list, settings: Settings, device, found: Findings):
    """The reference as a CUDA graph here and the candidate's in the runner, or None (both
    timed as launched) with a note saying why."""
    if device.type != "cuda":
        found.flags.append("CUDA graphs need a GPU; timed without them")
        return None
    why = cand.capture(example)
    if why:
        found.flags.append(f"the candidate cannot be captured in a CUDA graph ({why}); both models timed without graphs")
        return None
    try:
        return Graphed(ref_model, example)
    except Exception as e:  # noqa: BLE001  (capture forbids syncs, host reads, other streams)
        torch.cuda.synchronize()
        cand.drop_graph()
        found.flags.append(f"the reference cannot be captured in a CUDA graph ({type(e).__name__}: "
                           f"{str(e)[:160]}); both models timed without graphs")
        return None


def _reference_timings(found: Findings, settings: Settings) -> dict[str, Any]:
    """The reference timing the speedup is against: eager, torch.compile, or the faster."""
    eager = Timing(tuple(found.ref_ms)) if found.ref_ms else None
    if settings.baseline == "eager" or not found.compiled_ms or eager is None:
        return {"ref_timing": eager}
    compiled = Timing(tuple(found.compiled_ms))
    use_compiled = settings.baseline == "compile" or compiled.median_ms < eager.median_ms
    return {"ref_timing": compiled if use_compiled else eager, "eager_timing": eager, "compiled_timing": compiled,
            "baseline_used": "compile" if use_compiled else "eager"}


def _settled(found: Findings, settings: Settings) -> bool:
    """Both medians known to ``target_ci`` (95% interval half-width over the median)."""
    series = [found.new_ms, found.ref_ms] + ([found.compiled_ms] if found.compiled_ms else [])
    return settings.target_ci > 0 and all(Timing(tuple(ms)).ci_rel <= settings.target_ci for ms in series)


def _profile_kernels(problem, ref_model, cand: RemoteCandidate, settings: Settings, device, found: Findings,
                     source_code: str) -> None:
    """List both models' kernels (the candidate's as its runner's profiler saw them); flag a
    candidate that launched none of its own."""
    inputs = make_inputs(problem, settings.seed, settings, device)
    new_k = cand.kernels(inputs)
    with torch.no_grad():
        ref_k = kernels.launched_kernels(lambda: ref_model(*clone(inputs)))
    custom = kernels.custom_kernels(new_k, source_code)
    found.kernels = {"candidate": [[n, us] for n, us in new_k[:10]], "reference": [[n, us] for n, us in ref_k[:10]],
                     "custom": custom[:10]}
    if not custom:
        found.flags.append("no custom kernel: the candidate launched only library kernels (ATen, cuBLAS, cuDNN)")


def _count_work(problem, spec: EvalSpec, device, found: Findings) -> None:
    """Work and ceilings for the speed-of-light figures; never decides a verdict by itself."""
    try:
        found.work = roofline.count_work(problem, spec.settings.precision)
        override = Path(spec.settings.ceilings_file) if spec.settings.ceilings_file else None
        found.ceilings = roofline.load_ceilings(device, spec.cache_dir, override)
    except roofline.WorkUncounted as e:
        found.roofline = {"error": str(e)}
        found.notes.append(f"{e}: no speed-of-light figures or hardware-floor check for this problem")
    except Exception as e:
        found.roofline = {"error": f"{type(e).__name__}: {e}"[:300]}


def _speed_of_light(settings: Settings, found: Findings) -> None:
    if found.work is None or found.ceilings is None:
        return
    fl = roofline.floor(found.work, found.ceilings, settings.precision)
    found.roofline = {"tensor_flops": found.work.tensor_flops, "other_flops": found.work.other_flops,
                      "bytes": found.work.bytes, "output_bytes": found.work.output_bytes, "floor_ms": fl.floor_ms,
                      "compute_ms": fl.compute_ms, "memory_ms": fl.memory_ms, "write_ms": fl.write_ms,
                      "bound": fl.bound, "ceilings": found.ceilings.__dict__}
    median_ms = statistics.median(found.new_ms) if found.new_ms else None
    if median_ms is None:
        return
    where = f"on {found.ceilings.device_name}"
    if roofline.impossible(median_ms, fl):
        found.flags.append(f"{FLAG_IMPOSSIBLE}: {median_ms:.4g} ms measured, writing the output alone takes "
                           f"{fl.write_ms:.4g} ms ({found.work.output_bytes:.3g} B {where}): physically impossible")
    elif roofline.less_work(median_ms, fl):
        found.flags.append(f"{FLAG_LESS_WORK}: {median_ms:.4g} ms measured, their floor {fl.floor_ms:.4g} ms "
                           f"({found.work.flops:.3g} flop, {found.work.bytes:.3g} B, {fl.bound}-bound {where}): "
                           "an algebraic rewrite, worth a look")


def _guarded(who: str, fn: Callable[[], Any]) -> Any:
    """Run trusted problem code; its failure is the problem's fault, reported as a load error,
    and a reference that alone does not fit is the device's limit, never the candidate's."""
    try:
        return fn()
    except Exception as e:
        if memory.is_oom(e):
            if who == "reference":
                raise Stop(Verdict.TOO_LARGE, f"the reference alone does not fit: {type(e).__name__}: "
                           f"{str(e).splitlines()[0][:200] if str(e) else ''}") from None
            raise Stop(Verdict.OOM, f"out of memory in the {who}: {str(e).splitlines()[0][:200]}") from None
        raise Stop(Verdict.LOAD_ERROR, f"{who} failed: {type(e).__name__}: {e}") from None


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}"


def _problem_key(path: Path) -> str:
    from kbharness.common.problems import problem_from_path

    return problem_from_path(path).key


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:]) if text else ""
