"""Work counts checked against hand-computed values, the floor arithmetic, ceilings files,
and the flag on a candidate measured faster than the hardware allows."""
import json

import pytest
import torch

from conftest import ROOT
from kbharness.judge import roofline
from kbharness.common.loading import load_problem
from kbharness.common.results import Verdict
from test_suite import SMALL

# (problem, tensor flops, other flops, bytes) at the SMALL sizes, by hand:
HAND = [
    # 64x64 @ 64x64: 2*64^3; bytes: A, B, C
    ("1/1", 2 * 64**3, 0, 3 * 64 * 64 * 4),
    # relu on 4x256: one flop per element; read and write
    ("1/3", 0, 1024, 2 * 1024 * 4),
    # softmax on 4x256: max, subtract, exp, sum, divide
    ("1/4", 0, 5 * 1024, 2 * 1024 * 4),
    # layer norm over (64, 8, 8) for batch 2: 7 per element; input, weight, bias, output
    ("1/5", 0, 7 * 8192, 8192 * 4 + 2 * 4096 * 4 + 8192 * 4),
    # sum over dim 1 of 2x16x16: one add per input element; output 2x1x16
    ("1/6", 0, 512, 512 * 4 + 32 * 4),
    # mse over two 4x256 inputs: subtract, square, add per element; a scalar out
    ("1/30", 0, 3 * 1024, 2 * 1024 * 4 + 4),
    # smooth L1 (beta 1): 4 per element
    ("1/32", 0, 4 * 1024, 2 * 1024 * 4 + 4),
    # conv 8->64, k3, 16x16 -> 14x14, batch 2; divide (1) + leaky relu (2) per output
    ("2/71", 2 * 2 * 64 * 14 * 14 * 8 * 9, 3 * 25088, 2 * 8 * 256 * 4 + 64 * 8 * 9 * 4 + 64 * 4 + 25088 * 4),
    # linear 64->32 on batch 8 (bias not counted); relu + divide
    ("2/63", 2 * 8 * 32 * 64, 2 * 256, 8 * 64 * 4 + 32 * 64 * 4 + 32 * 4 + 256 * 4),
    # linear 64->32 on batch 16; batch norm 7 + bias 1 + divide 1 + sigmoid 4 + multiply 1 per element,
    # plus the num_batches_tracked increment; bytes add BN affine, running stats, the int64 counter, bias
    ("2/97", 2 * 16 * 32 * 64, 14 * 512 + 1,
     16 * 64 * 4 + 32 * 64 * 4 + 32 * 4 + 4 * 32 * 4 + 8 + 4 + 512 * 4),
    # conv 8->8, k3, 16x16 -> 14x14, batch 2; multiply 1 + leaky relu 2 + gelu 8 per output
    ("2/54", 2 * 3136 * 8 * 9, 11 * 3136, 2 * 8 * 256 * 4 + 8 * 8 * 9 * 4 + 8 * 4 + 8 * 4 + 3136 * 4),
]


def _problem_path(key):
    level, pid = key.split("/")
    (path,) = (ROOT / "problems" / f"level{level}").glob(f"{pid}_*.py")
    return path


@pytest.mark.parametrize("key, tensor, other, nbytes", HAND, ids=[h[0] for h in HAND])
def test_counts_match_hand_computed_values(key, tensor, other, nbytes):
    work = roofline.count_work(load_problem(_problem_path(key), SMALL[key]))
    assert work.tensor_flops == tensor
    assert work.other_flops == other
    assert work.bytes == nbytes


def test_counting_uses_no_memory_at_full_size():
    work = roofline.count_work(load_problem(_problem_path("2/54")))
    assert work.tensor_flops == 2 * 64 * 64 * 254 * 254 * 64 * 9


def CEIL(**kw):
    base = dict(device_name="test", bandwidth_gbs=1000.0, fp32_tflops=50.0, tf32_tflops=500.0,
                fp16_tflops=1000.0, bf16_tflops=1000.0)
    return roofline.Ceilings(**{**base, **kw})


def test_floor_is_the_larger_term_and_names_the_bound():
    compute = roofline.floor(roofline.Work(1e12, 0.0, 1e9), CEIL())
    assert compute.compute_ms == pytest.approx(2.0) and compute.memory_ms == pytest.approx(1.0)
    assert compute.floor_ms == pytest.approx(2.0) and compute.bound == "compute"
    memory = roofline.floor(roofline.Work(0.0, 5e9, 4e9), CEIL())
    assert memory.compute_ms == pytest.approx(0.1) and memory.floor_ms == pytest.approx(4.0)
    assert memory.bound == "memory"
    assert roofline.floor(roofline.Work(1e12, 0.0, 0.0), CEIL(), "fp16").floor_ms == pytest.approx(1.0)


def test_ceilings_file_overrides_and_must_be_complete(tmp_path):
    sheet = tmp_path / "h100.json"
    sheet.write_text(json.dumps({"bandwidth_gbs": 3350, "fp32_tflops": 67, "tf32_tflops": 495,
                                 "fp16_tflops": 990, "bf16_tflops": 990}))
    c = roofline.load_ceilings(torch.device("cpu"), tmp_path, sheet)
    assert c.bandwidth_gbs == 3350 and c.tensor_peak("fp32") == 495 and c.source == str(sheet)
    sheet.write_text(json.dumps({"bandwidth_gbs": 1}))
    with pytest.raises(ValueError, match="lacks fp32_tflops"):
        roofline.load_ceilings(torch.device("cpu"), tmp_path, sheet)


def test_measured_ceilings_are_cached_by_device_name(tmp_path):
    first = roofline.load_ceilings(torch.device("cpu"), tmp_path)
    assert first.bandwidth_gbs > 0.1 and first.fp32_tflops > 0.001
    cached = json.loads((tmp_path / "ceilings.json").read_text())
    assert list(cached) == [roofline.device_name(torch.device("cpu"))]
    assert roofline.load_ceilings(torch.device("cpu"), tmp_path) == first


def test_only_a_time_well_below_writing_the_output_is_impossible():
    # 4.28 GB moved, half of it the output: floor 1 ms, writing the output 0.5 ms
    fl = roofline.floor(roofline.Work(0.0, 0.0, 4.28e9, output_bytes=2.14e9), CEIL(bandwidth_gbs=4280))
    assert fl.floor_ms == pytest.approx(1.0) and fl.write_ms == pytest.approx(0.5)
    assert not roofline.less_work(0.997, fl)  # an H200 read-only kernel, just past the copy floor
    assert not roofline.less_work(0.85, fl)
    assert roofline.less_work(0.7, fl) and not roofline.impossible(0.7, fl)  # less work: a rewrite, no fault
    assert not roofline.impossible(0.45, fl)
    assert roofline.impossible(0.35, fl)


def test_work_counts_the_output_bytes_every_candidate_must_write():
    relu = load_problem(ROOT / "problems" / "level1" / "3_ReLU.py", SMALL["1/3"])
    assert roofline.count_work(relu).output_bytes == 1024 * 4


def test_candidate_faster_than_the_floor_is_flagged(evaluate, tmp_path):
    sheet = tmp_path / "slow_machine.json"
    sheet.write_text(json.dumps({"bandwidth_gbs": 1e-6, "fp32_tflops": 1e-9, "tf32_tflops": 1e-9,
                                 "fp16_tflops": 1e-9, "bf16_tflops": 1e-9}))
    r = evaluate("correct.py", ceilings_file=str(sheet))
    assert r.verdict is Verdict.CORRECT
    assert r.sol() > 1 and r.roofline["bound"] == "memory"
    assert any(f.startswith("faster than the hardware floor") and "physically impossible" in f for f in r.flags)
    honest = evaluate("correct.py")
    assert 0 < honest.sol() < 1 and not honest.flags


def test_counting_past_its_budget_stops_with_the_reason(tmp_path):
    path = tmp_path / "1_Many_steps.py"
    path.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        for _ in range(50):\n"
        "            x = torch.tanh(x) + 1\n"
        "        return x\n"
        "def get_inputs():\n    return [torch.randn(8, 8)]\n"
        "def get_init_inputs():\n    return []\n")
    problem = load_problem(path)
    assert roofline.count_work(problem).other_flops >= 50 * 2 * 64  # within the default budget
    with pytest.raises(roofline.WorkUncounted, match="took over 0 s to count on the meta device"):
        roofline.count_work(problem, budget_s=0.0)
