"""CUDA paths, run on the GPU machine (skipped without a GPU): an honest kernel, a context-
killing kernel, and the GPU-only cheats."""
import time

import pytest
import torch

from conftest import CANDIDATES, FAST, FIXTURES, TINY_PROBLEM, reference_as_candidate
from kbharness.common.results import Verdict

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
GPU = FIXTURES / "gpu"
BIG = {"batch_size": 4096, "dim": 4096}


def test_cuda_candidate_is_correct_and_timed_with_events(evaluate):
    r = evaluate(GPU / "scale_shift_cuda.py", device="cuda", size_overrides=BIG)
    assert r.verdict is Verdict.CORRECT, r.message + r.log_tail
    assert r.env["gpu"]
    assert r.max_abs <= 1e-6
    assert 0.5 < r.speedup < 3.0


def test_illegal_address_is_a_cuda_error_and_the_next_evaluation_runs(evaluate):
    r = evaluate(GPU / "illegal_address.py", device="cuda")
    assert r.verdict is Verdict.CUDA_ERROR, r.message
    assert evaluate(GPU / "scale_shift_cuda.py", device="cuda").verdict is Verdict.CORRECT


def test_work_hidden_on_a_side_stream_is_flagged(evaluate):
    r = evaluate(GPU / "side_stream.py", device="cuda", size_overrides=BIG)
    assert r.verdict is Verdict.INCORRECT
    assert [c.name for c in r.failed_checks()] == ["no hidden work"]
    assert "asynchronous work outside the timed region" in r.message


def test_work_run_during_the_timers_lead_reads_poison(evaluate):
    from kbharness.common.calls import Staged as _Staged
    from kbharness.common.timing import CudaTimer

    timer = CudaTimer(torch.device("cuda"))
    values = torch.randn(1 << 20, device="cuda")
    buf = values.clone()
    side = torch.cuda.Stream()

    def early():
        with torch.cuda.stream(side):
            out = buf * 2
        time.sleep(0.003)
        torch.cuda.current_stream().wait_stream(side)
        return out

    timed = [timer.time(early, stage=_Staged([buf], [values])) for _ in range(4)]
    assert not timed[-1].time.host_bound
    assert torch.isnan(timed[-1].output).all()
    assert evaluate(GPU / "lead_stream.py", device="cuda", size_overrides=BIG).verdict is Verdict.INCORRECT


def test_host_time_before_the_first_launch_is_not_charged_to_the_call():
    from kbharness.common.timing import CudaTimer

    timer = CudaTimer(torch.device("cuda"))
    cycles = int(0.2 * timer._cycles_per_ms)

    def slow_host():
        time.sleep(0.003)
        torch.cuda._sleep(cycles)

    times = [timer.time(slow_host) for _ in range(5)]
    assert not any(t.time.host_bound for t in times[1:])
    assert all(0.15 < t.time.call_ms < 0.4 for t in times[1:]), [t.time.call_ms for t in times]


def test_a_call_that_waits_for_the_device_is_host_bound():
    from kbharness.common.timing import CudaTimer

    timer = CudaTimer(torch.device("cuda"))
    x = torch.ones(1024, device="cuda")

    def synchronizing():
        torch.cuda._sleep(int(0.5 * timer._cycles_per_ms))
        return x.sum().item()

    calls = []

    def counted():
        calls.append(1)
        return synchronizing()

    def slow_host():
        time.sleep(0.003)
        torch.cuda._sleep(int(0.2 * timer._cycles_per_ms))

    timed, other = [], []
    for _ in range(4):
        timed.append(timer.time(counted, key="candidate"))
        other.append(timer.time(slow_host, key="reference"))
    assert all(t.time.host_bound for t in timed)
    assert all(t.time.call_ms > 0.4 for t in timed)
    assert len(calls) == 3 + 3, "once host-bound, a model's calls are not retried"
    assert not any(t.time.host_bound for t in other[1:]), "another model's lead is its own"


def test_stale_reference_memory_does_not_pass(evaluate):
    r = evaluate(GPU / "stale_empty.py", device="cuda", size_overrides=BIG)
    assert r.verdict is Verdict.INCORRECT
    assert r.failed_checks()[0].name == "output matches reference"


def test_library_only_candidate_is_flagged_and_custom_kernel_is_listed(evaluate):
    torch_only = evaluate(CANDIDATES / "correct.py", device="cuda", size_overrides=BIG)
    assert torch_only.verdict is Verdict.CORRECT
    assert any(f.startswith("no custom kernel") for f in torch_only.flags)
    custom = evaluate(GPU / "scale_shift_cuda.py", device="cuda", size_overrides=BIG)
    assert not custom.flags
    assert any("scale_shift_kernel" in name for name in custom.kernels["custom"])


@pytest.mark.parametrize("name, check", [
    ("mutates_input.py", "no input mutation"),
    ("aliases_buffer.py", "no output aliasing"),
    ("caches_by_shape.py", "output matches reference"),
    ("subclass_output.py", "output matches reference"),
    ("phase_detect.py", "timed outputs match"),
    ("nondeterministic.py", "deterministic"),
    ("patches_torch.py", "harness integrity"),
    ("patches_timer.py", "harness integrity"),
])
def test_cheats_are_caught_on_the_gpu_too(evaluate, name, check):
    r = evaluate(CANDIDATES / name, device="cuda")
    assert r.verdict is Verdict.INCORRECT, r.message
    assert r.failed_checks()[0].name == check


@pytest.mark.parametrize("name", ["forges_timing.py", "forges_timing_and_clock.py"])
def test_timing_forged_in_the_runner_is_caught_by_the_judges_clock_on_the_gpu(evaluate, name):
    r = evaluate(CANDIDATES / name, device="cuda")
    assert r.verdict is Verdict.CORRECT and r.speedup is None, r.judge_clock
    assert any(f.startswith("timing disagrees with the judge's clock") for f in r.flags)
    honest = evaluate(GPU / "scale_shift_cuda.py", device="cuda", size_overrides=BIG)
    assert honest.speedup is not None and not honest.flags, honest.judge_clock


@pytest.mark.parametrize("route", ["escape_judge.py", "escape_judge_memory.py"])
def test_the_runner_can_neither_stop_nor_read_its_judge_on_the_gpu(evaluate, route):
    """On the GPU the runner shares its judge's PID namespace: the signal filter and, where
    the kernel has it, Landlock's signal scope keep it from the judge and its threads."""
    from test_confine import MISSING_WALLS

    r = evaluate(CANDIDATES / route, device="cuda")
    assert r.verdict is Verdict.CORRECT, r.message
    assert not [n for n in r.notes if any(w in n for w in MISSING_WALLS)], r.notes


def test_replay_by_pointer_is_caught_on_the_gpu(evaluate):
    r = evaluate(CANDIDATES / "caches_by_pointer.py", device="cuda")
    assert r.verdict is Verdict.INCORRECT


def test_half_precision_tier_and_oom_on_the_gpu(evaluate):
    r = evaluate(CANDIDATES / "half_precision.py", device="cuda", atol=1e-2, rtol=1e-2)
    assert r.verdict is Verdict.CORRECT and r.precision_tier == "tf32/fp16-level"
    assert evaluate(CANDIDATES / "oom.py", device="cuda").verdict is Verdict.OOM


def test_cuda_graph_mode_times_replays_and_checks_every_timed_output(evaluate):
    small = {"batch_size": 64, "dim": 256}  # launch-bound: graphs should shrink both times
    eager = evaluate(GPU / "scale_shift_cuda.py", device="cuda", size_overrides=small)
    graphed = evaluate(GPU / "scale_shift_cuda.py", device="cuda", size_overrides=small, cuda_graph=True)
    assert graphed.verdict is Verdict.CORRECT, graphed.message + graphed.log_tail
    assert not [f for f in graphed.flags if "CUDA graph" in f]
    assert graphed.ref_timing.median_ms < eager.ref_timing.median_ms
    assert any(c.name == "timed outputs match" and c.passed for c in graphed.checks)


def test_memory_stays_one_trials_working_set_under_a_limit(evaluate, tmp_path):
    huge = FIXTURES / "kernelbench_like" / "level1" / "11_Huge_input.py"
    # 2 GiB in, 2 GiB out: six trials kept at once (with float64 copies) would need over 40 GiB.
    r = evaluate(reference_as_candidate(huge, tmp_path), problem=huge, device="cuda", size_overrides={"n": 2**29},
                 memory_limit_gib=24)
    assert r.verdict is Verdict.CORRECT, r.message + r.log_tail
    gib = 2**30
    assert r.memory["limit"] == 24 * gib
    assert 3.5 * gib <= r.memory["reference"] <= 5 * gib, r.memory  # its input and its output
    assert 3.5 * gib <= r.memory["candidate"] <= 5 * gib, r.memory
    # Each process within its own cap; the buffers they share are outside both.
    assert r.memory["judge"] <= 24 * gib and r.memory["runner"] <= 24 * gib, r.memory
    assert r.memory["evaluation"] == r.memory["judge"] + r.memory["runner"]
    assert r.ref_err_fp64 == 0.0


def test_a_reference_beyond_the_memory_limit_is_too_large(evaluate, tmp_path):
    huge = FIXTURES / "kernelbench_like" / "level1" / "11_Huge_input.py"
    r = evaluate(reference_as_candidate(huge, tmp_path), problem=huge, device="cuda", size_overrides={"n": 2**31},
                 memory_limit_gib=6)
    assert r.verdict is Verdict.TOO_LARGE, r.message


def test_the_judges_freed_large_blocks_go_back_whole_to_the_device():
    from kbharness.common import memory
    device = torch.device("cuda")
    memory.configure_allocator(device, 0)
    torch.cuda.empty_cache()
    big = torch.empty(2**30, dtype=torch.uint8, device=device)
    del big  # cached, one 1 GiB block
    small = torch.ones(2**20, device=device)  # would be carved out of it if large blocks were split
    torch.cuda.empty_cache()
    assert torch.cuda.memory_reserved(device) < 2**29, torch.cuda.memory_reserved(device)
    assert small.sum().item() == 2**20


def test_a_scalar_answer_viewing_a_large_loss_is_kept_in_its_own_memory():
    from kbharness.common import memory
    device = torch.device("cuda")
    keeper = memory.Keeper(device)
    a, b = torch.rand(2**24, device=device), torch.rand(2**24, device=device)
    loss = torch.nn.functional.smooth_l1_loss(a, b)
    kept = keeper.keep(loss)
    assert kept.untyped_storage().nbytes() == 4 and torch.equal(kept, loss)


def test_answers_parked_on_the_host_are_page_locked_and_come_back_equal():
    from kbharness.common import memory
    device = torch.device("cuda")
    keeper = memory.Keeper(device, limit=0)  # no room on the device: everything kept waits on the host
    x = torch.randn(3, 1000, device=device)
    kept = keeper.keep((x, 3))
    assert kept[0].device.type == "cpu" and kept[0].is_pinned() and kept[1] == 3
    back = memory.to_device(kept, device)
    assert back[0].device.type == "cuda" and torch.equal(back[0], x)


def test_outputs_parked_on_the_host_are_compared_on_the_gpu_with_the_same_result():
    from kbharness.judge import check
    from kbharness.common import memory

    device = torch.device("cuda")
    exact = torch.randn(3 * check.CHUNK + 5, dtype=torch.float64, device=device)
    approx = (exact + 1e-3 * torch.randn_like(exact)).float()
    parked = memory._to_host(approx)
    assert parked.device.type == "cpu"
    assert check.error_vs(exact, parked) == check.error_vs(exact, approx)
    assert check.error_vs(exact.cpu(), parked) == check.error_vs(exact, approx)


def test_triton_candidate_compiles_in_the_build_and_is_correct_with_its_kernel_its_own(evaluate):
    pytest.importorskip("triton")
    r = evaluate(GPU / "triton_scale_shift.py", device="cuda", size_overrides=BIG)
    assert r.verdict is Verdict.CORRECT, r.message + r.log_tail
    assert r.language == "triton" and r.build_s > 0
    assert "scale_shift_kernel" in r.kernels["custom"]
    assert not [f for f in r.flags if f.startswith("no custom kernel")]


def test_the_build_pool_compiles_triton_kernels_and_the_evaluation_finds_them(tmp_path):
    pytest.importorskip("triton")
    from kbharness.orchestration.build import _compiled, build_all, entry_of
    from kbharness.execution.isolate import run_isolated
    from kbharness.common.spec import EvalSpec, Settings

    good, broken = GPU / "triton_scale_shift.py", GPU / "triton_broken.py"
    built = {r.solution: r for r in build_all([good, broken], "cuda", tmp_path, 2,
                                              problems={str(good): TINY_PROBLEM, str(broken): TINY_PROBLEM})}
    assert built[str(good)].ok and not built[str(good)].message, built[str(good)].message
    assert not built[str(broken)].ok
    assert built[str(broken)].message.startswith("compile error: Triton CompilationError at ")
    kernels = _compiled(entry_of(good, "cuda", tmp_path))
    assert any(k.endswith("scale_shift_kernel.cubin") for k in kernels)
    r = run_isolated(EvalSpec(TINY_PROBLEM, good, Settings(device="cuda", **FAST), tmp_path))
    assert r.verdict is Verdict.CORRECT, r.message + r.log_tail
    assert _compiled(entry_of(good, "cuda", tmp_path)) == kernels  # its first call compiled nothing


@pytest.mark.parametrize("name", ["cuda", "cpp", "triton", "cute", "tilelang"])
def test_each_prompt_example_is_judged_correct(name, tmp_path, evaluate):
    from kbharness.common import languages
    from kbharness.orchestration import prompt

    if name not in prompt.EXAMPLES:
        pytest.skip(f"kb prompt has no {name} example")
    if languages.by_name(name).missing():
        pytest.skip(languages.by_name(name).needs())
    problem = tmp_path / "level1" / "1_Add.py"
    problem.parent.mkdir()
    problem.write_text(prompt.EXAMPLE_MODEL)
    candidate = tmp_path / f"{name}_example.py"
    candidate.write_text(prompt.EXAMPLES[name][0])
    device = "cpu" if name == "cpp" else "cuda"
    r = evaluate(candidate, problem=problem, device=device)
    assert r.verdict is Verdict.CORRECT, r.message + r.log_tail
    assert r.language == name
    if device == "cuda":
        assert r.kernels["custom"], r.kernels


def test_broken_triton_kernel_is_a_compile_error_with_tritons_reason(evaluate):
    pytest.importorskip("triton")
    r = evaluate(GPU / "triton_broken.py", device="cuda")
    assert r.verdict is Verdict.COMPILE_ERROR, r.message
    assert r.message.startswith("Triton CompilationError at ") and "undefined_shift" in r.message


def test_a_cuda_buffer_is_one_device_allocation_seen_by_another_process():
    """The judge's buffer, exported by descriptor, is mapped by a second process (as the
    runner maps it) and what that process writes is what the judge reads, on the device."""
    import pickle
    import subprocess
    import sys

    from kbharness.boundary import sharedmem

    device = torch.device("cuda")
    buf = sharedmem.allocate(1, (3, 5), torch.float32, device)
    buf.tensor.zero_()
    torch.cuda.synchronize()
    child = ("import pickle, sys, torch\nfrom kbharness.boundary import sharedmem\n"
             "desc = pickle.loads(bytes.fromhex(sys.argv[1]))\n"
             "seen = sharedmem.attach(desc, int(sys.argv[2]), torch.device('cuda'))\n"
             "assert seen.tensor.device.type == 'cuda' and seen.tensor.shape == (3, 5)\n"
             "seen.tensor.copy_(torch.arange(15.0, device='cuda').view(3, 5)); torch.cuda.synchronize()\n")
    done = subprocess.run([sys.executable, "-c", child, pickle.dumps(buf.desc).hex(), str(buf.fd)],
                          pass_fds=(buf.fd,), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert buf.tensor.device.type == "cuda"
    assert torch.equal(buf.tensor, torch.arange(15.0, device=device).view(3, 5))
