"""The ``kb`` command: parses arguments and calls the library. Results go to stdout,
progress and diagnostics to stderr."""
from __future__ import annotations

from dataclasses import dataclass, fields
import os
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeRemainingColumn

from kbharness.reporting import leaderboard as lb
from kbharness.reporting import render
from kbharness.orchestration import utilization
from kbharness.orchestration.backends import BACKENDS, DEFAULT_MAX_RETRIES
from kbharness.orchestration.build import build_all, entry_of
from kbharness.common.buildcache import DEFAULT_CACHE_DIR, clear_entry, entries
from kbharness.common.env import default_device
from kbharness.reporting.history import DEFAULT_THRESHOLD, against
from kbharness.common.languages import NAMES as LANGUAGE_NAMES
from kbharness.common.problems import ProblemError, discover, resolve, solutions_for
from kbharness.orchestration.prompt import LANGUAGES as PROMPT_LANGUAGES
from kbharness.orchestration.jobs import Job, evaluate_jobs
from kbharness.common.spec import (BASELINES, JUDGES, PRECISIONS, Settings, SpecError, check_size_overrides, default,
                            parse_sizes)
from kbharness.orchestration.store import DEFAULT_STORE, Store, StoreError

out = Console(soft_wrap=False, width=200)
err = Console(stderr=True, soft_wrap=True)

ExistingFile = click.Path(exists=True, dir_okay=False, path_type=Path)


def _fail(message: str) -> None:
    """One line on stderr and exit 2: bad input is the user's to fix, not a traceback."""
    err.print(f"[red]error:[/red] {message}", highlight=False)
    sys.exit(2)


def _read_store(path: Path) -> list:
    """The store's records; its unreadable lines named in one warning, a file that is not a store refused."""
    store = Store(path)
    try:
        contents = store.read()
    except StoreError as e:
        _fail(str(e))
    if contents.unreadable:
        err.print(f"[yellow]warning:[/yellow] {contents.warning(path)}", highlight=False)
    return contents.records


def eval_options(fn):
    options = [
        click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None,
                     help="Where to run; default cuda when a GPU is visible, else cpu."),
        click.option("--precision", type=click.Choice(PRECISIONS), default=default("precision"), show_default=True,
                     help="Cast floating-point inputs and both models to this dtype."),
        click.option("--tolerance", type=float, default=None,
                     help="Set atol and rtol together (KernelBench v0 used 1e-2); default by precision."),
        click.option("--atol", type=float, default=None, help="Absolute tolerance (overrides --tolerance)."),
        click.option("--rtol", type=float, default=None, help="Relative tolerance (overrides --tolerance)."),
        click.option("--trials", "n_trials", type=int, default=default("n_trials"), show_default=True,
                     help="Fresh random input sets checked before timing (plus one unseeded)."),
        click.option("--runs", "n_runs", type=int, default=default("n_runs"), show_default=True,
                     help="Timed calls per model, at most."),
        click.option("--target-ci", type=float, default=default("target_ci"), show_default=True,
                     help="Stop timing once both medians' 95%% intervals are within this fraction (0: run to --runs "
                          "or the budget)."),
        click.option("--warmup", "n_warmup", type=int, default=default("n_warmup"), show_default=True,
                     help="Untimed calls per model first."),
        click.option("--time-budget", "time_budget_s", type=float, default=default("time_budget_s"), show_default=True,
                     help=f"Seconds of timed calls after which timing stops (at least {default('min_runs')} runs are "
                          "kept)."),
        click.option("--seed", type=int, default=default("seed"), show_default=True,
                     help="Seed for weights and input sets."),
        click.option("--timeout", "timeout_s", type=float, default=default("timeout_s"), show_default=True,
                     help="Seconds a candidate may run (per phase) before it is killed."),
        click.option("--compile-timeout", "compile_timeout_s", type=float, default=default("compile_timeout_s"),
                     show_default=True, help="Seconds a candidate's build may take."),
        click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_STORE,
                     show_default=True, help="JSON-lines file every record is appended to."),
        click.option("--no-store", is_flag=True, help="Do not record results."),
        click.option("--force", is_flag=True, help="Evaluate again candidates the store already has for these settings."),
        click.option("--baseline", "baseline", type=click.Choice(BASELINES), default=default("baseline"), show_default=True,
                     help="Time the reference as written, under torch.compile, or the faster of the two; the speedup "
                          "is against that (both shown when compiled)."),
        click.option("--cuda-graph", is_flag=True,
                     help="Time both models as CUDA graph replays (for problems made of many tiny launches); "
                          "falls back, with a note, when the candidate cannot be captured."),
        click.option("--check", "judge", type=click.Choice(JUDGES), default=default("judge"), show_default=True,
                     help="Judge against the reference output, or against float64 with the reference's error as floor."),
        click.option("--backward", is_flag=True, help="Also compare gradients of inputs and parameters."),
        click.option("--max-speedup", type=float, default=default("max_speedup"), show_default=True,
                     help="Flag speedups above this for review."),
        click.option("--memory-limit", "memory_limit_gib", type=click.FloatRange(min=0),
                     default=default("memory_limit_gib"), show_default=True,
                     help="GiB the evaluation may allocate on the GPU (0: all), e.g. 80 to reproduce an 80 GB H100's "
                          "runs on a larger GPU."),
        click.option("--ceilings", "ceilings_file", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="JSON of datasheet peaks (bandwidth_gbs, fp32/tf32/fp16/bf16_tflops) instead of measured ones."),
        click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE_DIR,
                     show_default=True, help="Where compiled extensions are kept between runs."),
        click.option("--size", "sizes", multiple=True, metavar="NAME=VALUE",
                     help="Override a problem's module constant, e.g. --size batch_size=8 (repeatable)."),
        click.option("--backend", type=click.Choice(BACKENDS), default=BACKENDS[0], show_default=True,
                     help="local: a process per evaluation, one worker per visible GPU; ray: a Ray task per evaluation."),
        click.option("--build-jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2), show_default=True,
                     help="Local backend: compile pending candidates this many at a time and evaluate each once "
                          "built (0: compile inside each evaluation)."),
        click.option("--address", default=None, help="Ray cluster to join (auto or HOST:PORT); default a local one."),
        click.option("--max-retries", type=int, default=DEFAULT_MAX_RETRIES, show_default=True,
                     help="Ray: times a task whose worker was lost is retried before it is recorded as lost."),
        click.option("--against", "against_path", type=ExistingFile, default=None,
                     help="A saved results store to compare with; regressions beyond the speedup's CI are marked."),
        click.option("--against-threshold", type=click.FloatRange(min=0), default=100 * DEFAULT_THRESHOLD,
                     show_default=True,
                     help="Percent a speedup must move, beyond its CI, to count as changed against --against."),
        click.option("--quiet", "-q", is_flag=True, help="No progress output."),
        click.option("--no-sandbox", is_flag=True,
                     help="Run candidates without the bwrap sandbox, with all your permissions (also KB_SANDBOX=0)."),
        click.option("--language", type=click.Choice(LANGUAGE_NAMES), default=None,
                     help="The candidates' kernel language; default: read from each one's source."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _settings(device, precision, tolerance, atol, rtol, n_trials, n_runs, target_ci, n_warmup, time_budget_s, seed,
              timeout_s, compile_timeout_s, sizes, judge, backward, max_speedup, ceilings_file, baseline, memory_limit_gib,
              cuda_graph) -> Settings:
    device = device or default_device()
    if tolerance is not None:
        atol = tolerance if atol is None else atol
        rtol = tolerance if rtol is None else rtol
    try:
        return Settings(device=device, precision=precision, atol=atol, rtol=rtol, seed=seed, n_trials=n_trials,
                        n_warmup=n_warmup, n_runs=n_runs, min_runs=min(default("min_runs"), n_runs), target_ci=target_ci,
                        time_budget_s=time_budget_s,
                        timeout_s=timeout_s, compile_timeout_s=compile_timeout_s, size_overrides=parse_sizes(sizes),
                        judge=judge, backward=backward, max_speedup=max_speedup, baseline=baseline,
                        memory_limit_gib=memory_limit_gib,
                        cuda_graph=cuda_graph,
                        ceilings_file=str(Path(ceilings_file).resolve()) if ceilings_file else "")
    except SpecError as e:
        _fail(str(e))


@dataclass(frozen=True)
class RunOptions:
    """How jobs run and where results go, as opposed to ``Settings`` (how a candidate is judged)."""

    store_path: Path
    no_store: bool
    force: bool
    cache_dir: Path
    quiet: bool
    backend: str
    address: str | None
    max_retries: int
    against_path: Path | None
    against_threshold: float
    build_jobs: int
    no_sandbox: bool
    language: str | None


def _split(kw: dict) -> tuple[RunOptions, Settings]:
    """The evaluation options' values, parted into run options and judging settings."""
    options = RunOptions(**{f.name: kw.pop(f.name) for f in fields(RunOptions)})
    if options.backend == "local":
        _check_device(kw["device"])
        _check_sandbox(options.no_sandbox)
    return options, _settings(**kw)


def _check_sandbox(no_sandbox: bool) -> None:
    """Sandboxed unless asked otherwise, and never silently not: no bwrap is the user's to fix."""
    from kbharness.execution import sandbox

    if sandbox.wanted(False if no_sandbox else None):
        try:
            sandbox.check()
        except sandbox.SandboxError as e:
            _fail(str(e))


def _sandboxed(o: RunOptions) -> bool | None:
    """``--no-sandbox`` as the library takes it: False, or None (``KB_SANDBOX`` decides, default on)."""
    return False if o.no_sandbox else None


def _check_device(device: str | None) -> None:
    """--device cuda on a machine without a GPU is the user's mistake, not every candidate's load
    error (a Ray cluster's GPUs are elsewhere, so only the local backend checks)."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        _fail("--device cuda: no GPU visible to torch here (torch.cuda.is_available() is False); "
              "use --device cpu or a machine with a GPU")


def _progress() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[failed]} failed"), TextColumn("{task.fields[rate]}"),
                    TimeRemainingColumn(), console=err, transient=True)


def _run_jobs(jobs: list[Job], settings: Settings, o: RunOptions) -> list:
    """Evaluate with a progress bar (done, failed, rate, time left); on Ctrl-C, exit 130 with
    every finished record kept."""
    from kbharness.orchestration.backends import make_backend

    store = None if o.no_store else Store(o.store_path)
    if store is not None:
        _read_store(o.store_path)  # warns of damaged lines, refuses a file that is not a store, before any work
    progress = None if o.quiet else _progress()
    task = progress.add_task("evaluating", total=len(jobs), failed=0, rate="") if progress else None
    started, failed = time.monotonic(), 0

    def on_done(job: Job, outcome) -> None:
        nonlocal failed
        failed += not outcome.record.correct
        if progress is None:
            return
        origin = " (from the store)" if outcome.from_store else ""
        progress.console.print(f"[{outcome.record.verdict.value}] {job.problem.key} {job.solution}{origin}",
                               highlight=False)
        done = progress.tasks[0].completed + 1
        rate = done / max(time.monotonic() - started, 1e-9) * 3600
        progress.update(task, advance=1, failed=failed, rate=f"{rate:.0f}/h",
                        description=f"{job.problem.key} {job.solution.name}")

    backend = make_backend(o.backend, o.address, o.max_retries, _sandboxed(o))
    try:
        if progress is not None:
            progress.start()
        outcomes = evaluate_jobs(jobs, settings, store, o.cache_dir, o.force, backend, on_done,
                                 build_jobs=o.build_jobs if o.backend == "local" else 0, sandboxed=_sandboxed(o),
                                 language=o.language or "")
    except KeyboardInterrupt:
        kept = "nothing was stored (--no-store)" if o.no_store else f"every finished evaluation is in the store ({o.store_path})"
        err.print(f"interrupted; {kept}", highlight=False)
        sys.exit(130)  # 128 + SIGINT, as shells report a Ctrl-C; 2 is a usage error
    except ImportError as e:
        _fail(f"backend {o.backend!r} needs a package that is not installed ({e.name}); pip install 'kbharness[ray]'")
    finally:
        if progress is not None:
            progress.stop()
    idle = utilization.describe(getattr(backend, "spans", []), started, time.monotonic())
    if idle:
        err.print(idle, highlight=False)
    return outcomes


def _evaluate(jobs: list[Job], settings: Settings, o: RunOptions, title: str) -> list:
    for problem_path in dict.fromkeys(j.problem.path for j in jobs):
        try:
            check_size_overrides(problem_path, settings.size_overrides)
        except SpecError as e:
            _fail(str(e))
    outcomes = _run_jobs(jobs, settings, o)
    records = [o.record for o in outcomes]
    device = records[0].env.get("gpu") or settings.device if records else settings.device
    atol, rtol = settings.tolerance
    out.print(render.results_table(records, title=f"{title} on {device}, {settings.precision}, atol={atol:g} rtol={rtol:g}"))
    for line in render.notes(records):
        out.print(line, highlight=False)
    if o.against_path is not None:
        for change in against(records, _read_store(o.against_path), o.against_threshold / 100):
            style = {"regression": "bold red", "improvement": "green"}.get(change.status, "")
            out.print(f"[{style}]{change.text()}[/{style}]" if style else change.text(), highlight=False)
    reused = sum(o.from_store for o in outcomes)
    if reused:
        out.print(f"{reused} of {len(outcomes)} results are from {o.store_path} (same candidate, problem and settings); "
                  "--force evaluates them again", highlight=False)
    return records


class _Commands(click.Group):
    """Ctrl-C in any command ends it in one line with 130, as shells report an interrupt
    (click's own abort says "Aborted!" and exits 1)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            err.print("interrupted", highlight=False)
            ctx.exit(130)


@click.group(cls=_Commands)
@click.version_option(package_name="kbharness")
def main() -> None:
    """kbharness: does a custom kernel compute the same thing, and how much faster is it?"""


@main.command("list")
@click.option("--problems-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("problems"),
              show_default=True, help="Root holding levelN/ID_Name.py files (KernelBench's layout works).")
def list_problems(problems_dir: Path) -> None:
    """Show the problems found under the problems directory."""
    try:
        out.print(render.problems_table(discover(problems_dir)))
    except ProblemError as e:
        _fail(str(e))


@main.command()
@click.argument("problem")
@click.option("--solution", "solutions", multiple=True, type=ExistingFile,
              help="Evaluate only this candidate (repeatable); default: every file under solutions/.")
@click.option("--problems-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("problems"), show_default=True)
@click.option("--solutions-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("solutions"), show_default=True)
@eval_options
def run(problem, solutions, problems_dir, solutions_dir, **kw) -> None:
    """Evaluate the candidates of PROBLEM (LEVEL/ID, part of a name, or a path)."""
    try:
        prob = resolve(problem, problems_dir)
    except ProblemError as e:
        _fail(str(e))
    files = list(solutions) or solutions_for(prob, solutions_dir)
    if not files:
        _fail(f"{prob.key} {prob.name}: no candidates under {solutions_dir}/level{prob.level}/{prob.stem}/; pass --solution FILE")
    options, settings = _split(kw)
    _evaluate([Job(prob, f) for f in files], settings, options, title=f"{prob.key} {prob.name}")


@main.command()
@click.argument("ref")
@click.argument("new", type=ExistingFile)
@click.option("--problems-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("problems"), show_default=True)
@eval_options
def compare(ref, new, problems_dir, **kw) -> None:
    """Evaluate candidate NEW against problem REF (LEVEL/ID, part of a name, or a path), as kb run names it."""
    try:
        prob = resolve(ref, problems_dir)
    except ProblemError as e:
        _fail(str(e))
    options, settings = _split(kw)
    _evaluate([Job(prob, new)], settings, options, title=f"{prob.key} {prob.name}")


@main.command()
@click.argument("solutions", nargs=-1, required=True, type=ExistingFile)
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None, help="Build for this device's architecture.")
@click.option("--jobs", "-j", type=int, default=max(1, (os.cpu_count() or 2) // 2), show_default=True,
              help="Parallel builds (each nvcc/g++ build uses about one core and 1-2 GB).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE_DIR, show_default=True)
@click.option("--no-sandbox", is_flag=True, help="Build without the bwrap sandbox (also KB_SANDBOX=0).")
@click.option("--problems-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("problems"), show_default=True,
              help="Where a candidate's problem is found (by its folder or name, as kb sweep does): a Triton "
                   "candidate's kernels are compiled for its shapes too.")
def build(solutions, device, jobs, cache_dir, no_sandbox, problems_dir) -> None:
    """Compile candidates into the build cache in parallel, so evaluating them later is fast."""
    from kbharness.orchestration.sweep import SweepError, place

    device = device or default_device()
    _check_sandbox(no_sandbox)
    failed = 0
    try:
        placed, _ = place(list(solutions), problems_dir)
    except SweepError:
        placed = []  # no problems there: extensions are built all the same
    problems = {str(job.solution): job.problem.path for job in placed}
    for result in build_all(list(solutions), device, cache_dir, jobs, sandboxed=False if no_sandbox else None,
                            problems=problems):
        failed += not result.ok
        status = "failed" if not result.ok else "cached" if result.cached else "built"
        out.print(f"{status:6} {result.seconds:6.1f} s  {result.solution}  {result.message}", highlight=False)
    if failed:
        err.print(f"{failed} of {len(solutions)} builds failed")
        sys.exit(1)


@main.group()
def cache() -> None:
    """The build cache: one entry of compiled extensions per candidate and toolchain."""


@cache.command("clear")
@click.argument("solutions", nargs=-1, type=ExistingFile)
@click.option("--all", "everything", is_flag=True, help="Clear every entry, not only the named candidates'.")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None,
              help="The named candidates' entries for this device's architecture.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE_DIR, show_default=True)
def cache_clear(solutions, everything, device, cache_dir) -> None:
    """Remove build cache entries so they compile afresh; one a build is running in is left (exit 1)."""
    if bool(solutions) == everything:
        _fail("name the candidates whose entries to clear, or pass --all")
    if everything:
        targets = {str(e): e for e in entries(cache_dir)}
    else:
        device = device or default_device()
        targets = {str(s): entry_of(s, device, cache_dir) for s in solutions}
    busy = 0
    for name, entry in targets.items():
        if entry is None or not entry.is_dir():
            out.print(f"not cached  {name}", highlight=False)
        elif clear_entry(entry):
            out.print(f"cleared     {name}", highlight=False)
        else:
            busy += 1
            err.print(f"busy: a build is running in {entry}; not cleared", highlight=False)
    if busy:
        sys.exit(1)


@main.command("baseline")
@click.argument("problems", nargs=-1)
@click.option("--problems-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("problems"), show_default=True)
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None)
@click.option("--runs", "n_runs", type=int, default=default("n_runs"), show_default=True)
@click.option("--time-budget", "time_budget_s", type=float, default=5.0, show_default=True)
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="JSON file to write; default results/baseline_<device>.json.")
def baseline_cmd(problems, problems_dir, device, n_runs, time_budget_s, out_path) -> None:
    """Time the references alone (every problem when none is named) and write the baseline file."""
    from kbharness.orchestration import baseline

    try:
        chosen = [resolve(p, problems_dir) for p in problems] or discover(problems_dir)
    except ProblemError as e:
        _fail(str(e))
    _check_device(device)
    device = device or default_device()
    settings = Settings(device=device, n_runs=n_runs, min_runs=min(default("min_runs"), n_runs), time_budget_s=time_budget_s)
    results = []
    for b in baseline.run(chosen, settings):
        results.append(b)
        err.print(f"{b.problem} {b.name}: " + (render.fmt_ms(b.median_ms) if b.times_ms else b.error), highlight=False)
    out_path = out_path or Path("results") / f"baseline_{device}.json"
    baseline.write(results, out_path, settings)
    out.print(render.baseline_table(results))
    err.print(f"wrote {out_path}")


@main.command("roofline")
@click.argument("problems", nargs=-1)
@click.option("--all", "all_problems", is_flag=True, help="Every problem under --problems-dir.")
@click.option("--problems-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("problems"), show_default=True)
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None)
@click.option("--precision", type=click.Choice(PRECISIONS), default=default("precision"), show_default=True)
@click.option("--ceilings", "ceilings_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Reference times to set against the floor; default results/baseline_<device>.json if present.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE_DIR, show_default=True)
def roofline_cmd(problems, all_problems, problems_dir, device, precision, ceilings_file, baseline_file, cache_dir) -> None:
    """Work, bytes, hardware floor and bound of problems (no candidate needed)."""
    import torch

    from kbharness.orchestration import baseline
    from kbharness.judge import roofline
    from kbharness.common.loading import LoadError, load_problem

    if not problems and not all_problems:
        _fail("name problems or pass --all")
    try:
        chosen = discover(problems_dir) if all_problems else [resolve(p, problems_dir) for p in problems]
    except ProblemError as e:
        _fail(str(e))
    device = device or default_device()
    try:
        ceilings = roofline.load_ceilings(torch.device(device), cache_dir, ceilings_file)
    except ValueError as e:
        _fail(str(e))
    baseline_file = baseline_file or Path("results") / f"baseline_{device}.json"
    ref_ms = {}
    if baseline_file.exists():
        try:
            ref_ms = baseline.read(baseline_file, ceilings.device_name if device.startswith("cuda") else None)
        except ValueError as e:
            _fail(str(e))
    rows = []
    for p in chosen:
        try:
            work = roofline.count_work(load_problem(p.path), precision)
        except (LoadError, RuntimeError, NotImplementedError, TypeError, ValueError) as e:
            err.print(f"{p.key} {p.name}: cannot count on the meta device ({type(e).__name__}: {e})"[:200], highlight=False)
            continue
        rows.append((p, work, roofline.floor(work, ceilings, precision), ref_ms.get(p.key)))
    out.print(render.roofline_table(rows, ceilings))


@main.command("leaderboard")
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_STORE, show_default=True)
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the leaderboard to this CSV file.")
@click.option("--device", default=None, help="Only records made on this device (cpu, cuda).")
def leaderboard_cmd(store_path: Path, csv_path: Path | None, device: str | None) -> None:
    """Best correct candidate per problem and measured settings, fast_p and the geometric-mean
    speedup; records whose speedup cannot be trusted are listed apart."""
    if not store_path.exists():
        _fail(f"{store_path}: no results store yet; run kb run or kb compare first")
    frame = lb.records_frame(_read_store(store_path))
    if device:
        frame = frame[frame["device"].str.startswith(device)]
    if frame.empty:
        _fail(f"{store_path}: no records{' for device ' + device if device else ''}")
    board = _print_leaderboard(frame)
    if csv_path is not None:
        board.to_csv(csv_path, index=False)
        err.print(f"wrote {csv_path}")



def _sweep_jobs(paths, problems_dir: Path, manifest: Path | None) -> tuple[list[Job], list]:
    from kbharness.orchestration.sweep import SweepError, candidates, place

    try:
        return place(candidates(paths), problems_dir, manifest)
    except SweepError as e:
        _fail(str(e))


sweep_options = [
    click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path)),
    click.option("--problems-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("problems"),
                 show_default=True),
    click.option("--manifest", type=ExistingFile, default=None,
                 help='JSON mapping candidate paths (globs, relative to the file) to problems: {"gen/*.txt": "2/71"}.'),
]


def with_sweep_options(fn):
    for option in reversed(sweep_options):
        fn = option(fn)
    return fn


@main.command()
@with_sweep_options
@eval_options
def sweep(paths, problems_dir, manifest, **kw) -> None:
    """Evaluate every candidate under PATHS; already evaluated ones (same content, problem and
    settings) are taken from the store. A candidate's problem comes from a manifest, its
    levelN/ID_Name/ folder, or a level_N_problem_ID file name."""
    jobs, unplaced = _sweep_jobs(paths, problems_dir, manifest)
    for u in unplaced:
        err.print(f"skipped {u.path}: {u.reason}", highlight=False)
    if not jobs:
        _fail(f"no candidates with a known problem under {', '.join(map(str, paths))}")
    options, settings = _split(kw)
    records = _evaluate(jobs, settings, options, title="sweep")
    _print_leaderboard(lb.records_frame(records))


def _print_leaderboard(frame):
    """The leaderboard of ``frame`` with fast_p and geomean, then the records left out of it, and why."""
    board = lb.leaderboard(frame)
    out.print(render.leaderboard_table(board, lb.fast_p(board), lb.geomean_speedup(board)))
    for line in render.left_out_lines(lb.left_out(frame)):
        out.print(line, highlight=False)
    return board


@main.command()
@with_sweep_options
@click.option("--min-speedup", type=float, default=None, help="Also fail candidates slower than this.")
@click.option("--strict", is_flag=True, help="Also fail candidates with any flag (no custom kernel, implausible speedup).")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write JUnit XML for CI systems to display.")
@eval_options
def check(paths, problems_dir, manifest, min_speedup, strict, junit_path, **kw) -> None:
    """CI gate: exit 0 when every candidate under PATHS is correct (and fast enough), 1 when
    any is not, 2 on a usage error."""
    from kbharness.reporting import gate

    jobs, unplaced = _sweep_jobs(paths, problems_dir, manifest)
    if unplaced:
        _fail(f"{unplaced[0].path}: {unplaced[0].reason}"
              + (f" (and {len(unplaced) - 1} more)" if len(unplaced) > 1 else ""))
    if not jobs:
        _fail(f"no candidates under {', '.join(map(str, paths))}")
    options, settings = _split(kw)
    records = _evaluate(jobs, settings, options, title="check")
    results = [gate.judge(r, min_speedup, strict) for r in records]
    if junit_path is not None:
        junit_path.write_text(gate.junit_xml(results))
        err.print(f"wrote {junit_path}")
    failing = [r for r in results if not r.passed]
    for r in failing:
        out.print(f"FAIL {r.record.problem} {r.record.solution_path}: {r.reason}", highlight=False)
    out.print(f"{len(results) - len(failing)} of {len(results)} candidates pass", highlight=False)
    sys.exit(1 if failing else 0)


@main.command()
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_STORE,
              show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results") / "report",
              show_default=True, help="Folder for report.csv, report.json and report.md.")
@click.option("--device", default=None, help="Only records made on this device (cpu, cuda).")
@click.option("--html", "with_html", is_flag=True, help="Also write report.html with plots (needs matplotlib).")
def report(store_path: Path, out_dir: Path, device: str | None, with_html: bool) -> None:
    """Write CSV (one row per evaluation), JSON (full records) and a Markdown summary."""
    from kbharness.reporting import report as rep

    if not store_path.exists():
        _fail(f"{store_path}: no results store yet; run kb run, kb sweep or kb compare first")
    records = [r for r in _read_store(store_path) if device is None or str(r.env.get("device", "")).startswith(device)]
    if not records:
        _fail(f"{store_path}: no records{' for device ' + device if device else ''}")
    out_dir.mkdir(parents=True, exist_ok=True)
    rep.write_csv(records, out_dir / "report.csv")
    rep.write_json(records, out_dir / "report.json")
    (out_dir / "report.md").write_text(rep.markdown(records, str(store_path)) + "\n")
    written = "report.csv, report.json and report.md"
    if with_html:
        try:
            from kbharness.reporting import html_report
        except ImportError as e:
            _fail(f"--html needs matplotlib ({e.name} is not installed); pip install 'kbharness[report]'")
        (out_dir / "report.html").write_text(html_report.render(records, str(store_path)))
        written = "report.csv, report.json, report.md and report.html"
    out.print(f"wrote {written} in {out_dir} ({len(records)} records)", highlight=False)


@main.command()
@click.argument("problem")
@click.option("--problems-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("problems"), show_default=True)
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
              help="Ask for CUDA kernels, or C++ for the CPU.")
@click.option("--language", type=click.Choice(PROMPT_LANGUAGES), default=None,
              help="The kernel language to ask for, with its worked example (default: --device's).")
def prompt(problem, problems_dir, device, language) -> None:
    """Print a KernelBench-style prompt asking an LLM to write ModelNew for PROBLEM."""
    from kbharness.orchestration.prompt import make_prompt

    try:
        prob = resolve(problem, problems_dir)
    except ProblemError as e:
        _fail(str(e))
    click.echo(make_prompt(prob.path, device, language or ""))


if __name__ == "__main__":
    main()
