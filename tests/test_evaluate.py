"""End-to-end evaluations in real worker processes on the CPU: every verdict class, and
the cheats the checks exist for."""
import os
import statistics
import time
import types

import pytest
import torch

from conftest import CANDIDATES, FIXTURES, TINY_PROBLEM, reference_as_candidate

from kbharness.common.results import Verdict
from kbharness.common.spec import EvalSpec, Settings


def test_correct_candidate_gets_errors_timings_and_speedup(evaluate):
    r = evaluate("correct.py")
    assert r.verdict is Verdict.CORRECT, r.message
    assert r.max_abs == 0.0 and r.max_rel == 0.0
    assert len(r.trials) == 4  # 3 seeded trials and one from a fresh random seed
    assert len({t.seed for t in r.trials}) == 4
    assert r.ref_timing.n == r.new_timing.n == 10
    assert r.speedup == pytest.approx(r.ref_timing.median_ms / r.new_timing.median_ms)
    assert {c.name for c in r.checks} >= {"output matches reference", "no input mutation", "no output aliasing",
                                          "deterministic", "timed outputs match", "no hidden work"}
    assert all(c.passed for c in r.checks)
    assert r.env["torch"] and r.env["device"] == "cpu"


def test_the_record_says_where_the_evaluations_time_went(evaluate):
    r = evaluate("correct.py")
    assert list(r.phase_s)[:2] == ["reference", "waiting for the runner's start"]
    assert {"build", "check", "time", "judge's clock"} <= set(r.phase_s)
    assert all(v >= 0 for v in r.phase_s.values()) and sum(r.phase_s.values()) <= r.wall_s


def test_the_runner_loads_cudnn_only_for_a_problem_that_names_its_ops(tmp_path):
    from kbharness.judge.evaluate import _libraries

    conv = tmp_path / "conv.py"
    conv.write_text("self.conv = nn.Conv2d(3, 8, 3)")
    assert _libraries(conv) == ("cudnn",) and _libraries(TINY_PROBLEM) == ()
    assert _libraries(tmp_path / "missing.py") == ()


def test_cpu_timing_path_sees_a_5ms_sleep(evaluate):
    r = evaluate("slow.py")
    assert r.verdict is Verdict.CORRECT
    assert r.new_timing.min_ms >= 5.0
    assert statistics.median(r.ref_timing.times_ms) < 5.0
    assert r.speedup < 1.0


def test_timing_stops_when_both_medians_are_known_to_the_target_or_the_budget_ends(evaluate):
    settled = evaluate("slow.py", n_runs=1000, target_ci=0.05, time_budget_s=30)
    assert settled.verdict is Verdict.CORRECT
    # 1000 calls of 5 ms fit the budget, so stopping earlier means the intervals were met
    assert 10 <= settled.new_timing.n < 1000
    assert settled.new_timing.ci_rel <= 0.05 and settled.ref_timing.ci_rel <= 0.05
    budget = evaluate("slow.py", n_runs=1000, target_ci=0.0, time_budget_s=0.5)
    assert budget.new_timing.n > 10 and budget.new_timing.n < 200  # 5 ms calls for 0.5 s, not 1000 runs


def test_torch_compile_baseline_is_timed_beside_eager_and_best_takes_the_faster(evaluate):
    r = evaluate("correct.py", baseline="best")
    assert r.verdict is Verdict.CORRECT, r.message
    assert r.eager_timing.n == r.compiled_timing.n == r.new_timing.n
    faster = min((r.eager_timing, "eager"), (r.compiled_timing, "compile"), key=lambda t: t[0].median_ms)
    assert (r.ref_timing, r.baseline_used) == faster
    assert r.speedup_over("compile") == pytest.approx(r.compiled_timing.median_ms / r.new_timing.median_ms)
    plain = evaluate("correct.py")
    assert plain.compiled_timing is None and plain.baseline_used == "eager"


def test_cuda_graph_mode_on_the_cpu_says_it_timed_without_graphs(evaluate):
    r = evaluate("correct.py", cuda_graph=True)
    assert r.verdict is Verdict.CORRECT
    assert "CUDA graphs need a GPU; timed without them" in r.flags


def test_incorrect_candidate_reports_worst_error(evaluate):
    r = evaluate("wrong.py")
    assert r.verdict is Verdict.INCORRECT
    assert r.max_abs == pytest.approx(0.01, rel=1e-3)
    assert "elements outside atol=0.0001" in r.message
    assert r.new_timing is None
    assert r.failed_checks()[0].name == "output matches reference"


def test_looser_tolerance_accepts_what_the_default_rejects(evaluate):
    assert evaluate("wrong.py", atol=2e-2, rtol=2e-2).verdict is Verdict.CORRECT


def test_nan_never_passes(evaluate):
    r = evaluate("nan.py", atol=1e3, rtol=1e3)
    assert r.verdict is Verdict.INCORRECT and "NaN/Inf" in r.message


@pytest.mark.parametrize("name, verdict, text", [
    ("runtime_error.py", Verdict.RUNTIME_ERROR, "ValueError: kernel launch failed: bad grid"),
    ("syntax_error.py", Verdict.LOAD_ERROR, "SyntaxError"),
    ("no_modelnew.py", Verdict.LOAD_ERROR, "defines no class ModelNew"),
    ("import_error.py", Verdict.LOAD_ERROR, "No module named 'kbharness_no_such_module'"),
    ("cuda_kernel.py", Verdict.NEEDS_CUDA, "needs CUDA"),
])
def test_failure_classes(evaluate, name, verdict, text):
    r = evaluate(name)
    assert r.verdict is verdict
    assert text in r.message


def test_completion_without_code_is_no_code(evaluate, tmp_path):
    f = tmp_path / "cut.txt"
    f.write_text("Okay, let me think about fusing the kernels. First the conv")
    r = evaluate(f)
    assert r.verdict is Verdict.NO_CODE
    assert r.message == "response ends inside the reasoning; no final code block"


@pytest.mark.parametrize("name, check", [
    ("mutates_input.py", "no input mutation"),
    ("aliases_buffer.py", "no output aliasing"),
    ("caches_by_shape.py", "output matches reference"),
    ("subclass_output.py", "output matches reference"),
    ("late_thread.py", "output matches reference"),
    ("phase_detect.py", "timed outputs match"),
    ("nondeterministic.py", "deterministic"),
    ("patches_torch.py", "harness integrity"),
    ("patches_timer.py", "harness integrity"),
    ("../gpu/stale_empty.py", "output matches reference"),
])
def test_cheats_are_caught_by_name(evaluate, name, check):
    r = evaluate(name)
    assert r.verdict is Verdict.INCORRECT, r.message
    assert [c.name for c in r.failed_checks()] == [check]
    assert r.message.startswith(check)


def test_replay_keyed_by_pointer_is_caught(evaluate):
    r = evaluate("caches_by_pointer.py")
    assert r.verdict is Verdict.INCORRECT
    # whichever call first lands on a reused address replays a stale answer
    assert r.failed_checks()[0].name in {"output matches reference", "deterministic", "timed outputs match"}


def test_patched_torch_is_named_in_the_failure(evaluate):
    r = evaluate("patches_torch.py")
    assert "torch.allclose was replaced" in r.message and "torch.Tensor.__sub__ was replaced" in r.message


def test_timed_inputs_cannot_be_predicted_and_answered_from_a_table(evaluate, monkeypatch):
    """The table the candidate computes at import holds the answers for the timed seeds the
    harness used to derive from its settings; drawn at timing time, none of them is asked, so
    every timed call takes its honest 5 ms path (with them it timed as fast as the reference)."""
    monkeypatch.setenv("KB_TEST_PROBLEM", str(TINY_PROBLEM))
    r = evaluate("lookup_table.py")
    assert r.verdict is Verdict.CORRECT, r.message
    assert r.new_timing.median_ms >= 4.5 and r.speedup < 0.1


def test_a_candidate_forging_its_times_through_the_harness_timer_is_caught(evaluate):
    """Unwatched, the patched timer made a PyTorch-speed candidate 18x faster, correct."""
    r = evaluate("patches_timer.py")
    assert "kbharness.common.timing.CpuTimer.time was replaced" in r.message and r.speedup is None


def test_times_forged_inside_the_runner_disagree_with_the_judges_clock(evaluate):
    """The runner's timers and its own guard silenced from inside: its times say 20x faster,
    the judge's clock over back-to-back calls says otherwise, and the record keeps no speedup.
    A slow honest candidate is timed the same way and not flagged."""
    r = evaluate("forges_timing.py")
    assert r.verdict is Verdict.CORRECT and r.speedup is None, r.judge_clock
    assert any(f.startswith("timing disagrees with the judge's clock") for f in r.flags), r.flags
    assert r.judge_clock["new_over_events"] > 10 and r.judge_clock["measured"] == 2
    honest = evaluate("slow.py")
    assert honest.speedup is not None, honest.judge_clock
    assert not [f for f in honest.flags if f.startswith("timing disagrees")], honest.flags


def test_a_runner_that_slows_the_clocks_single_call_batch_is_still_caught(evaluate):
    """Forged times, and the one-call batch slowed by as long as the full batch's other calls
    take: the difference between the two came out near nothing, not decisive, and the
    forgery kept its 20x. Three quarters of the full batch's time per call bounds it."""
    r = evaluate("forges_timing_and_clock.py")
    assert r.verdict is Verdict.CORRECT and r.speedup is None, r.judge_clock
    assert any(f.startswith("timing disagrees with the judge's clock") for f in r.flags), (r.flags, r.judge_clock)


def test_one_stalled_ping_or_seeding_does_not_lower_the_clocks_bound(monkeypatch):
    """On the two-core CI one ping stalled 6 ms: twice the slowest ping, taken off the full
    batch, put a forger's 2 ms calls at 0.54 ms, under the floor, and its speedup was kept.
    A stalled seeding, the mean of one group then, took a third of a millisecond off a call."""
    from kbharness.judge import evaluate as judge

    pings = iter([0.1] * 4 + [6.0] + [0.1] * 5)

    class Runner:
        def ping(self):
            time.sleep(next(pings) / 1e3)

    assert judge._request_ms(Runner()) == judge.CLOCK_REQUEST_MS
    stalls = iter([0.05] + [0.0] * 100)
    monkeypatch.setattr(judge, "seed_rng", lambda seed, device: time.sleep(next(stalls)))
    assert judge._seeding_ms(torch.device("cpu")) < 0.5


def test_a_clock_batch_of_microsecond_calls_on_a_busy_host_stays_under_the_floor():
    """Eight 5 us calls whose request took 3 ms of a loaded two-core host (an honest reference
    against itself was flagged so, its call put at 0.28 ms on the clock, over the 0.2 ms floor
    the CPU had then); a runner that slows its one-call batch to hide eight 2 ms calls is still
    bounded."""
    from kbharness.judge.evaluate import _per_call_ms

    assert _per_call_ms(full_ms=3.04, single_ms=3.0, calls=8, request_ms=2 * 1.4) < 0.2
    assert _per_call_ms(full_ms=16.6, single_ms=16.5, calls=8, request_ms=1.0) > 1.4
    assert _per_call_ms(full_ms=10.6, single_ms=1.9, calls=8, request_ms=1.0) == pytest.approx(8.7 / 7)


def test_a_one_call_batch_slowed_by_a_stalled_host_does_not_put_a_call_under_the_floor():
    """Eight 2 ms calls (forges_timing.py) on a host stalled through one one-call batch and the
    pings that set the request's cost: taken pair by pair, that pair put the call at 0.84 ms,
    under the CPU's 1 ms floor, and the forgery went undecided in a full test run; the least
    full batch against the least one-call batch still gives the 2 ms."""
    from kbharness.judge.evaluate import CLOCK_MIN_MS, _clock_call_ms, _per_call_ms

    fulls, singles = [17.0, 17.1], [13.0, 2.2]
    assert min(_per_call_ms(f, s, 8, request_ms=8.0) for f, s in zip(fulls, singles)) < CLOCK_MIN_MS["cpu"]
    assert _clock_call_ms(fulls, singles, calls=8, request_ms=8.0) == pytest.approx((17.0 - 2.2) / 7)
    assert _clock_call_ms([9.0, 8.5], [], calls=1, request_ms=8.0) == 8.5


def test_the_judges_clock_stops_after_a_round_that_cannot_decide(evaluate):
    """Microsecond calls are far under the clock's floor: more rounds could not decide and
    only cost the sweep, so the clock stops once a round says so; 5 ms calls get all three."""
    tiny, slow = evaluate("correct.py"), evaluate("slow.py")
    assert tiny.judge_clock["rounds"] < 3 and tiny.judge_clock["new_over_events"] is None, tiny.judge_clock
    assert slow.judge_clock["rounds"] == 3 and slow.judge_clock["new_over_events"] is not None, slow.judge_clock


@pytest.mark.parametrize("reported", [1, 2.5])
def test_a_call_that_fills_the_clocks_batch_is_timed_once_whole(evaluate, tmp_path, reported):
    """60 ms calls (reported whole, or as 24 ms): batches of one call on the judge's clock, two
    calls in all, not eleven, and the forged one still caught."""
    slow = tmp_path / f"takes_60ms_reports_1_in_{reported}.py"
    slow.write_text((CANDIDATES / "forges_timing.py").read_text()
                    .replace("time.sleep(0.002)", "time.sleep(0.06)").replace("call_ms / 20", f"call_ms / {reported}"))
    r = evaluate(slow)
    assert r.verdict is Verdict.CORRECT and r.judge_clock["calls"] == 1 and r.judge_clock["rounds"] == 1, r.judge_clock
    disagrees = [f for f in r.flags if f.startswith("timing disagrees with the judge's clock")]
    assert bool(disagrees) is (reported > 1) and (r.speedup is None) is (reported > 1), (r.flags, r.judge_clock)


def test_a_clock_with_room_for_one_call_times_it_alone(tmp_path, monkeypatch):
    """1/63 judged against itself on an H100: two calls did not fit but were batched anyway,
    and the runner's second call, with no room left for cuDNN's workspace, ran another algorithm
    and was judged wrong. Where fewer than two fit, one call is timed alone; a microsecond call
    alone is mostly its request's cost, and keeps its speedup (it was flagged on a busy host)."""
    from conftest import FAST, evaluate_here
    from kbharness.judge import evaluate as judge

    monkeypatch.setattr(judge, "_calls_that_fit", lambda ref: 1)
    spec = EvalSpec(TINY_PROBLEM, CANDIDATES / "correct.py", Settings(device="cpu", **FAST), tmp_path / "cache")
    honest = evaluate_here(spec, tmp_path)
    assert honest.verdict is Verdict.CORRECT and honest.speedup is not None, (honest.flags, honest.judge_clock)
    assert honest.judge_clock["calls"] == 1 and honest.judge_clock["rounds"] == 1, honest.judge_clock


def test_a_call_timed_alone_decides_only_past_its_requests_cost():
    """A lone call carries its request's cost whole: on a busy two-core host (1.6 ms a request)
    an honest 0.01 ms call came out at 1.2 ms on the clock, over the CPU's 1 ms floor, and was
    flagged. From three requests' cost it decides: a 10 ms call reported as 0.5 ms is caught.
    Batched, the request's cost cancels and the floor stays the clock's own."""
    from kbharness.judge.evaluate import CLOCK_MIN_MS, _clock_disagrees, _new_floor

    lone, batched = {"calls": 1, "request_ms": 1.6}, {"calls": 8, "request_ms": 1.6}
    assert _new_floor(lone, "cpu") == pytest.approx(4.8) and _new_floor(batched, "cpu") == CLOCK_MIN_MS["cpu"]
    assert not _clock_disagrees(ref_ms=0.005, new_ms=0.01, clock_ref=0.02, clock_new=1.2, device_type="cpu",
                                new_floor=_new_floor(lone, "cpu"))
    assert _clock_disagrees(ref_ms=0.005, new_ms=0.01, clock_ref=0.02, clock_new=1.2, device_type="cpu",
                            new_floor=_new_floor(batched, "cpu"))
    assert _clock_disagrees(ref_ms=0.005, new_ms=0.5, clock_ref=0.02, clock_new=10.8, device_type="cpu",
                            new_floor=_new_floor(lone, "cpu"))


def test_a_judge_stopped_during_the_evaluation_keeps_its_verdict_and_no_speedup(tmp_path):
    """SIGSTOP then SIGCONT from an unconfined runner: the stop itself cannot be refused by the
    judge, but its end runs the judge's SIGCONT handler, so the times taken around it are dropped."""
    from conftest import FAST, evaluate_here

    spec = EvalSpec(TINY_PROBLEM, CANDIDATES / "stops_judge.py", Settings(device="cpu", **FAST), tmp_path / "cache")
    r = evaluate_here(spec, tmp_path)
    assert r.verdict is Verdict.CORRECT and r.speedup is None, r.message
    assert [f for f in r.flags if f.startswith("the judge was stopped and continued 1 time(s)")], r.flags
    honest = evaluate_here(EvalSpec(TINY_PROBLEM, CANDIDATES / "correct.py", Settings(device="cpu", **FAST),
                                    tmp_path / "cache"), tmp_path / "honest")
    assert honest.speedup is not None and not [f for f in honest.flags if "stopped" in f], honest.flags


def test_the_clocks_decision_on_the_h200s_numbers():
    """A forged 2 ms call against a 6 us reference on the H200: its speedups agreed within 1.5x
    (the 0.068 ms the clock gave the reference is mostly its own overhead) while the clock
    timed the call 16.6x longer than reported, and 29x the reference's: that decides.
    Honest records of the KernelBench sweep (worst ratio 1.04), calls too short to time, and a
    reference that is slower flushed than batched, raise nothing."""
    from kbharness.judge.evaluate import CLOCK_MIN_MS, _clock_disagrees

    def disagrees(device_type: str, **times: float) -> bool:
        return _clock_disagrees(device_type=device_type, new_floor=CLOCK_MIN_MS[device_type], **times)

    assert disagrees(ref_ms=0.0061, new_ms=0.12, clock_ref=0.068, clock_new=1.99, device_type="cuda")
    assert disagrees(ref_ms=2.0, new_ms=0.1, clock_ref=2.0, clock_new=2.0, device_type="cuda")
    assert not disagrees(ref_ms=3.1, new_ms=2.9, clock_ref=3.0, clock_new=3.02, device_type="cuda")
    assert not disagrees(ref_ms=0.01, new_ms=0.05, clock_ref=0.02, clock_new=0.3, device_type="cuda")
    assert not disagrees(ref_ms=4.0, new_ms=1.0, clock_ref=2.0, clock_new=1.05, device_type="cuda")
    # Launch-bound references against themselves on the H200: 3/28, whose clock time in the
    # runner was twice the judge's, and 3/9 (4.4 times its event time on the clock); claiming
    # ten times its real speed there is still caught.
    assert not disagrees(ref_ms=1.438, new_ms=1.44, clock_ref=2.277, clock_new=4.62, device_type="cuda")
    assert not disagrees(ref_ms=0.643, new_ms=0.644, clock_ref=2.837, clock_new=3.494, device_type="cuda")
    assert disagrees(ref_ms=0.643, new_ms=0.0644, clock_ref=2.837, clock_new=3.494, device_type="cuda")
    # A short reference and the same launch-bound model a little slower in the runner.
    assert not disagrees(ref_ms=0.1, new_ms=0.1, clock_ref=0.45, clock_new=0.6, device_type="cuda")
    # A 60 ms call reported as 24 ms against a 0.1 ms reference that the clock put just over
    # the CPU's floor: the reference's overhead cannot excuse it.
    assert disagrees(ref_ms=0.1, new_ms=24.0, clock_ref=1.1, clock_new=60.0, device_type="cpu")


def test_work_deferred_past_the_runners_reply_is_outside_the_judges_clock_and_wrong(evaluate, tmp_path):
    """The runner replies to a batch after one call and writes the others into the judge's
    buffers while the judge compares them. Judged from those buffers, it was correct and 3.9x
    faster than PyTorch at PyTorch's speed; judged from the copy sealed before the clock stops,
    its deferred outputs are missing, and the record says why."""
    problem = tmp_path / "4M_scale_shift.py"
    problem.write_text(TINY_PROBLEM.read_text().replace("batch_size = 4", "batch_size = 1024")
                       .replace("dim = 64", "dim = 4096"))
    r = evaluate("defers_work.py", problem=problem)
    assert r.verdict is Verdict.INCORRECT, (r.message, r.judge_clock)
    assert r.message.startswith("no hidden work: the judge's clock"), r.message
    assert "written after the runner had replied" in r.message


def test_precision_tier_shows_a_silent_drop_to_half(evaluate):
    assert evaluate("correct.py").precision_tier == "bitwise"
    strict = evaluate("half_precision.py")
    assert strict.verdict is Verdict.INCORRECT
    loose = evaluate("half_precision.py", atol=1e-2, rtol=1e-2)
    assert loose.verdict is Verdict.CORRECT
    assert loose.precision_tier == "tf32/fp16-level"


def test_float64_noise_floor_and_fp64_judge(evaluate):
    matmul = FIXTURES / "problems" / "level1" / "4_Matmul.py"
    r = evaluate("matmul_fp64.py", problem=matmul)
    assert r.verdict is Verdict.CORRECT
    assert r.ref_err_fp64 > 0 and r.new_err_fp64 < r.ref_err_fp64
    assert r.floor_multiple < 1
    tight = dict(atol=1e-9, rtol=1e-9)
    assert evaluate("matmul_fp64.py", problem=matmul, **tight).verdict is Verdict.INCORRECT
    assert evaluate("matmul_fp64.py", problem=matmul, judge="fp64", **tight).verdict is Verdict.CORRECT


def test_problem_that_cannot_discriminate_is_flagged(evaluate, tmp_path):
    tiny = FIXTURES / "problems" / "level1" / "2_Tiny_output.py"
    honest = tmp_path / "tiny.py"
    honest.write_text("import torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x * 1e-7\n")
    r = evaluate(honest, problem=tiny)
    assert r.verdict is Verdict.CORRECT
    assert "problem cannot discriminate: an all-zeros output passes the check" in r.flags
    assert not [f for f in evaluate("correct.py").flags if "discriminate" in f]


def test_implausible_speedup_is_flagged(evaluate):
    slow_ref = FIXTURES / "problems" / "level1" / "3_Slow_reference.py"
    r = evaluate("correct.py", problem=slow_ref)
    assert r.verdict is Verdict.CORRECT and r.speedup > 10
    assert any(f.startswith("implausible speedup") for f in r.flags)


def test_wrong_gradient_is_caught_only_with_backward(evaluate):
    assert evaluate("wrong_grad.py").verdict is Verdict.CORRECT
    r = evaluate("wrong_grad.py", backward=True)
    assert r.verdict is Verdict.INCORRECT
    assert r.failed_checks()[0].name == "gradients match"
    good = evaluate("correct.py", backward=True)
    assert good.verdict is Verdict.CORRECT and "gradients match" in {c.name for c in good.checks}


def test_out_of_memory_is_its_own_class(evaluate):
    assert evaluate("oom.py").verdict is Verdict.OOM


def test_segfault_is_a_crash_and_hang_a_timeout(evaluate):
    crash = evaluate("segfault.py")
    assert crash.verdict is Verdict.CRASH and "SIGSEGV" in crash.message
    hang = evaluate("hang.py", timeout_s=15)  # room for a loaded machine to import torch
    assert hang.verdict is Verdict.TIMEOUT and "phase 'check'" in hang.message


def test_build_that_never_ends_is_a_compile_timeout(evaluate):
    r = evaluate("hang_in_build.py", compile_timeout_s=3)
    assert r.verdict is Verdict.COMPILE_TIMEOUT


@pytest.mark.slow
def test_compile_error_keeps_the_compiler_log(evaluate):
    r = evaluate("compile_error.py")
    assert r.verdict is Verdict.COMPILE_ERROR
    assert r.message.startswith("main.cpp:5:24: error: cannot convert")  # the compiler's first error
    assert "error" in r.log_tail and "not_a_tensor" in r.log_tail


# KernelBench as it is: the problems below each reproduce a false verdict the harness gave
# on KernelBench's own tree (issue: KernelBench as it is).

def _problem(name: str):
    return FIXTURES / "kernelbench_like" / "level1" / name


def test_a_reference_that_draws_random_numbers_is_correct_against_itself(evaluate, tmp_path):
    dropout = _problem("5_Dropout_softmax.py")
    r = evaluate(reference_as_candidate(dropout, tmp_path), problem=dropout)
    assert r.verdict is Verdict.CORRECT, r.message
    assert r.max_abs == 0.0
    assert any("draws random numbers" in n for n in r.notes)
    assert not [f for f in r.flags if f.startswith("stochastic")]
    other_mask = evaluate("own_dropout.py", problem=dropout)
    assert other_mask.verdict is Verdict.INCORRECT
    assert other_mask.failed_checks()[0].name == "output matches reference"


def test_a_reference_that_differs_from_itself_is_flagged_stochastic_not_judged_wrong(evaluate, tmp_path):
    noisy = _problem("6_Private_noise.py")
    r = evaluate(reference_as_candidate(noisy, tmp_path), problem=noisy)
    assert r.verdict is Verdict.CORRECT, r.message
    assert any(f.startswith("stochastic reference: two calls from the same RNG state differ") for f in r.flags)
    wrong_shape = tmp_path / "wrong_shape.py"
    wrong_shape.write_text("import torch.nn as nn\nclass ModelNew(nn.Module):\n"
                           "    def forward(self, x):\n        return x[:, :1]\n")
    assert evaluate(wrong_shape, problem=noisy).verdict is Verdict.INCORRECT


def test_a_reference_that_changes_its_input_sets_what_the_candidates_inputs_must_hold(evaluate, tmp_path):
    in_place = _problem("13_In_place_relu.py")
    assert evaluate(reference_as_candidate(in_place, tmp_path), problem=in_place).verdict is Verdict.CORRECT
    for name, forward in (("untouched", "return torch.relu(x) * 2"),
                          ("other_change", "y = torch.relu(x) * 2\n        x.abs_()\n        return y")):
        path = tmp_path / f"{name}.py"
        path.write_text(f"import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                        f"    def forward(self, x):\n        {forward}\n")
        r = evaluate(path, problem=in_place)
        assert r.verdict is Verdict.INCORRECT, (name, r.message)
        assert [c.name for c in r.failed_checks()] == ["no input mutation"], (name, r.checks)


def test_a_failing_float64_run_leaves_the_verdict_to_the_reference(evaluate, tmp_path):
    plain = _problem("7_Plain_tensor_attribute.py")
    r = evaluate(reference_as_candidate(plain, tmp_path), problem=plain)
    assert r.verdict is Verdict.CORRECT, r.message
    assert r.ref_err_fp64 is None
    assert any(n.startswith("float64 run skipped (RuntimeError") for n in r.notes)
    assert evaluate("wrong.py", problem=plain).verdict is Verdict.INCORRECT


def test_a_candidate_closer_to_float64_than_the_reference_is_judged_by_float64(evaluate, tmp_path):
    unstable = _problem("8_Unstable_variance.py")
    r = evaluate("stable_variance.py", problem=unstable)
    assert r.verdict is Verdict.CORRECT, r.message
    assert r.judged_by == "fp64"
    assert r.max_abs > 1e-3  # far from the reference: the reference is the inexact one
    assert r.new_err_fp64 < 1e-3 < r.ref_err_fp64
    assert r.precision_tier not in ("bitwise", "")
    assert any("judged by float64" in n for n in r.notes)
    itself = evaluate(reference_as_candidate(unstable, tmp_path), problem=unstable)
    assert itself.verdict is Verdict.CORRECT and itself.judged_by == "reference"


def test_an_incorrect_candidate_shows_its_real_precision(evaluate):
    r = evaluate("wrong.py")
    assert r.verdict is Verdict.INCORRECT
    assert r.precision_tier not in ("bitwise", "fp32-level", "")


def test_an_algebraic_rewrite_is_information_not_impossible(evaluate, tmp_path):
    import json

    from kbharness.reporting import gate

    # Slow arithmetic, fast memory: the reference's matmul has a floor of seconds, writing the output next to none.
    sheet = tmp_path / "slow_flops.json"
    sheet.write_text(json.dumps({"bandwidth_gbs": 1e6, "fp32_tflops": 1e-6, "tf32_tflops": 1e-6,
                                 "fp16_tflops": 1e-6, "bf16_tflops": 1e-6}))
    r = evaluate("row_scaling.py", problem=_problem("9_Diag_matmul.py"), ceilings_file=str(sheet))
    assert r.verdict is Verdict.CORRECT, r.message
    assert any(f.startswith("less work than the reference's operators") for f in r.flags)
    assert not [f for f in r.flags if f.startswith("faster than the hardware floor")]
    assert r.roofline["write_ms"] < r.roofline["floor_ms"]
    assert gate.judge(r).passed


def test_a_reference_that_does_not_fit_is_too_large_not_the_candidates_fault(evaluate):
    r = evaluate("correct.py", problem=_problem("11_Huge_input.py"), size_overrides={"n": 2**43})
    assert r.verdict is Verdict.TOO_LARGE
    assert r.message.startswith("the reference alone does not fit")


def test_the_constant_output_problem_is_flagged_and_the_gate_fails_it(evaluate):
    from kbharness.reporting import gate

    r = evaluate("zeros.py", problem=_problem("10_Constant_output.py"))
    assert r.verdict is Verdict.CORRECT
    assert any(f.startswith("problem cannot discriminate") for f in r.flags)
    assert "cannot discriminate" in gate.judge(r).reason


def test_a_worker_killed_while_running_the_reference_is_too_large_not_the_candidates(evaluate):
    r = evaluate("correct.py", problem=_problem("12_Killed_reference.py"))
    assert r.verdict is Verdict.TOO_LARGE, r.message
    assert "before the candidate was loaded" in r.message


class _HostOnlyInit(torch.nn.Module):
    """Reads a value to the host in ``__init__``: fine on the CPU, impossible on a device
    that holds no data (meta stands in for a GPU here)."""

    def __init__(self):
        super().__init__()
        self.scale = torch.ones(3).sum().item()
        self.linear = torch.nn.Linear(4, 4)


class _PlainInit(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)


def _settings():
    return Settings(device="cpu")


def test_models_are_constructed_on_the_device_and_host_only_ones_on_the_host():
    from kbharness.judge import evaluate as ev
    meta = torch.device("meta")
    problem = type("Problem", (), {"Model": _PlainInit})
    found = ev.Findings()
    model, on_device = ev.build_reference(problem, [], _settings(), meta, found)
    assert on_device and model.linear.weight.is_meta and not found.notes
    problem.Model = _HostOnlyInit
    model, on_device = ev.build_reference(problem, [], _settings(), meta, found)
    assert not on_device and model.linear.weight.is_meta and model.scale == 3.0
    assert "cannot be constructed on meta" in found.notes[0] and "both models" in found.notes[0]


def test_a_candidate_that_cannot_be_constructed_on_the_device_is_built_on_the_host_with_a_note():
    from kbharness.runner.candidate_runner import _Session

    session = _Session(None, ())
    session.settings, session.device = _settings(), torch.device("meta")
    session.cls = _PlainInit
    assert session.construct([], on_device=True) == {} and session.model.linear.weight.is_meta
    session.cls = _HostOnlyInit
    note = session.construct([], on_device=True)["note"]
    assert session.model.scale == 3.0 and "another generator" in note

def test_the_judge_never_imports_the_candidate(tmp_path, monkeypatch):
    """Judged in this very process, the candidate is imported once, by the runner."""
    from conftest import FAST, evaluate_here

    imported = tmp_path / "imported"
    monkeypatch.setenv("KB_TEST_IMPORTED", str(imported))
    spec = EvalSpec(TINY_PROBLEM, CANDIDATES / "records_importer.py", Settings(device="cpu", **FAST), tmp_path / "cache")
    r = evaluate_here(spec, tmp_path)
    assert r.verdict is Verdict.CORRECT, r.message
    pids = imported.read_text().split()
    assert len(pids) == 1 and int(pids[0]) != os.getpid()


def _judged_here_with(tmp_path, monkeypatch, name: str, fails):
    from conftest import FAST, evaluate_here
    from kbharness.judge import evaluate as judge

    monkeypatch.setattr(judge, name, fails)
    spec = EvalSpec(TINY_PROBLEM, CANDIDATES / "correct.py", Settings(device="cpu", **FAST), tmp_path / "cache")
    return evaluate_here(spec, tmp_path)


def _out_of_memory(*args, **kwargs):
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")


def test_the_judges_own_out_of_memory_is_the_harnesss_limit_never_the_candidates(tmp_path, monkeypatch):
    """The judge runs no candidate code: memory it cannot get is not the candidate's fault."""
    r = _judged_here_with(tmp_path, monkeypatch, "clone", _out_of_memory)
    assert r.verdict is Verdict.TOO_LARGE, r.message
    assert r.message.startswith("the judge's own work does not fit on the device: OutOfMemoryError")


def test_a_judges_clock_that_does_not_fit_leaves_the_verdict_and_no_speedup(tmp_path, monkeypatch):
    r = _judged_here_with(tmp_path, monkeypatch, "_judge_clock", _out_of_memory)
    assert r.verdict is Verdict.CORRECT, r.message
    assert r.speedup is None and r.new_timing is None
    assert [f for f in r.flags if f.startswith("judge's clock did not run: its batches do not fit")], r.flags


def test_a_runner_out_of_memory_in_the_judges_clock_leaves_the_verdict_and_no_speedup(tmp_path, monkeypatch):
    """A batch the runner cannot hold beside the judge's (1/19 on an H100) is the clock not
    fitting, not a wrong or crashed candidate: correct, and no speedup, as nothing checked it."""
    from kbharness.boundary.runner_client import Failed

    def runner_out_of_memory(*args, **kwargs):
        raise Failed(Verdict.OOM, "OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB.", "")

    r = _judged_here_with(tmp_path, monkeypatch, "_judge_clock", runner_out_of_memory)
    assert r.verdict is Verdict.CORRECT and r.speedup is None, r.message
    assert [f for f in r.flags if f.startswith("judge's clock did not run: its batches do not fit")], r.flags


def test_an_out_of_memory_is_the_candidates_only_where_the_judge_left_it_room():
    """1/19 judged against itself on an 80 GB H100 (the judge held 67 GiB, the reference's
    working set is 12 GiB): the device is too small for the two processes, never the
    candidate's fault. On a 141 GB H200 under the same 80 GiB cap the runner had room for its
    working set many times over, and running out there is the candidate's."""
    from kbharness.judge.evaluate import _whose_oom

    gib = 2**30
    verdict, message = _whose_oom("CUDA out of memory", 80 * gib, int(79.18 * gib), 67 * gib, 12 * gib)
    assert verdict is Verdict.TOO_LARGE and "a limit of the harness" in message and "CUDA out of memory" in message
    assert _whose_oom("CUDA out of memory", 80 * gib, 140 * gib, 67 * gib, 12 * gib)[0] is Verdict.OOM
    assert _whose_oom("CUDA out of memory", None, int(79.18 * gib), 20 * gib, 12 * gib)[0] is Verdict.OOM


@pytest.mark.parametrize("second_ms, flagged", [(0.1, False), (6.0, True)])
def test_a_clock_that_disagrees_once_is_measured_again_and_only_a_second_disagreement_counts(
        tmp_path, monkeypatch, second_ms, flagged):
    """A burst of other work on a two-core host put an honest candidate's 0.12 ms calls at 6 ms
    for a whole clock; measured again it agrees. A forged time disagrees both times."""
    clocks = iter([6.0, second_ms])

    def clock_once(ref, cand, found, ref_ms, new_ms):
        return {"calls": 8, "rounds": 3, "ref_ms": 0.05, "new_ms": next(clocks), "copy_ms": 0.0, "request_ms": 0.5}

    r = _judged_here_with(tmp_path, monkeypatch, "_clock_once", clock_once)
    assert r.verdict is Verdict.CORRECT and r.judge_clock["measured"] == 2, r.judge_clock
    disagrees = [f for f in r.flags if f.startswith("timing disagrees with the judge's clock")]
    assert bool(disagrees) is flagged and (r.speedup is None) is flagged, (r.flags, r.judge_clock)


def test_the_clocks_copy_of_an_output_goes_into_its_target_only_in_the_references_layout():
    from kbharness.judge.evaluate import _seal

    target = (torch.zeros(3), torch.zeros(2))
    delivered = (torch.ones(3), torch.full((2,), 2.0))
    sealed = _seal([delivered, [torch.ones(3), torch.ones(2)], torch.ones(4)], [target, target, torch.zeros(3)])
    assert sealed[0] is target and torch.equal(target[0], torch.ones(3)) and torch.equal(target[1], torch.full((2,), 2.0))
    assert isinstance(sealed[1], list) and sealed[1][0] is not target[0]
    assert sealed[2].shape == (4,)


def test_the_references_out_of_memory_beside_the_candidate_is_tried_again_after_both_caches_go_back(tmp_path, monkeypatch):
    """1/38 against itself on an H100: the reference's timed call ran out of memory while the
    runner still cached its check-phase copies. Given back, the call fits; only a second
    failure is judged."""
    from conftest import FAST, evaluate_here
    from kbharness.judge import candidate, evaluate as judge

    made, release, events = judge._buffers_like, candidate.RemoteCandidate.release, []

    def first_fails(inputs):
        events.append("staged")
        if events.count("staged") == 1:
            events.append("oom")
            _out_of_memory()
        return made(inputs)

    monkeypatch.setattr(judge, "_buffers_like", first_fails)
    monkeypatch.setattr(candidate.RemoteCandidate, "release", lambda self: (events.append("release"), release(self)))
    spec = EvalSpec(TINY_PROBLEM, CANDIDATES / "correct.py", Settings(device="cpu", **FAST), tmp_path / "cache")
    r = evaluate_here(spec, tmp_path)
    assert r.verdict is Verdict.CORRECT, r.message
    failed = events.index("oom")
    assert events[failed:failed + 3] == ["oom", "release", "staged"], events


def test_a_second_out_of_memory_of_the_reference_beside_the_candidate_is_judged(tmp_path, monkeypatch):
    r = _judged_here_with(tmp_path, monkeypatch, "_buffers_like", _out_of_memory)
    assert r.verdict is Verdict.TOO_LARGE and r.message.startswith("the judge's own work does not fit"), r.message
