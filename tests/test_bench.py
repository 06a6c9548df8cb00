"""The benchmarks' own arithmetic, on records made here (the runs themselves need a GPU)."""
import importlib.util

import pytest

from conftest import ROOT
from kbharness.common.results import Verdict
from test_store import make


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_several_gpus_are_held_to_the_one_gpu_sweeps_verdicts_and_speedups():
    multi = _bench("multi_gpu")
    one = {("1/1", "a.py"): make(ref=(2.0,), new=(1.0,)), ("1/2", "b.py"): make(ref=(3.0,), new=(1.0,)),
           ("1/3", "c.py"): make(verdict=Verdict.INCORRECT, ref=None, new=None)}
    two = {("1/1", "a.py"): make(ref=(2.0,), new=(1.02,)), ("1/2", "b.py"): make(ref=(3.0,), new=(1.0,)),
           ("1/3", "c.py"): make(verdict=Verdict.CORRECT, ref=(1.0,), new=(1.0,))}
    a = multi.agreement(one, two)
    assert (a["same"], a["of"]) == (2, 3)
    assert a["max_move"] == pytest.approx(1 - 1 / 1.02) and a["median_move"] == pytest.approx((1 - 1 / 1.02) / 2)
    sweeps = [{"label": "local, 1 GPU", "n": 3, "wall_s": 60.0, "per_hour": 180.0, "idle": {"cuda:0": 0.25}, "records": one},
              {"label": "local, 2 GPUs", "n": 3, "wall_s": 40.0, "per_hour": 270.0,
               "idle": {"cuda:0": 0.3, "cuda:1": 0.4}, "records": two}]
    table = multi.report("header", sweeps).splitlines()
    assert table[-2] == "| local, 1 GPU | 3 | 60 s | 180 | cuda:0 25% | 3/3 | 0.0%, 0.0% |"
    assert table[-1] == "| local, 2 GPUs | 3 | 40 s | 270 | cuda:0 30%, cuda:1 40% | 2/3 | 1.0%, 2.0% |"


def test_the_timer_table_sets_the_judges_clock_beside_ncu():
    timer = _bench("timer_accuracy")
    rows = [("1/34 reference", 0.3856, 0.388, 0.3817, 0.41), ("1/34 candidate", 0.1308, None, None, None)]
    text = timer.report("header", rows, [(ROOT / "solutions/level1/34_x/cuda_fused.py", 0.004, 0.97)], 5)
    assert "| 1/34 reference | 0.3856 ms | 0.3880 ms | 0.3817 ms | +1.0% | 0.4100 ms | +7.4% |" in text
    assert "| 1/34 candidate | 0.1308 ms | - | - | - | - | - |" in text
    assert "- 34_x: 0.4%, agreement 0.970" in text


def test_shared_input_places_equal_inputs_in_a_buffer_and_its_second_mapping():
    import torch

    bench = _bench("shared_input")
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    sets, keep = bench.placed([x, 7], torch.device("cpu"))
    own, shared, attached = (sets[name][0] for name in bench.REGIMES)
    assert own is x and torch.equal(shared, x) and torch.equal(attached, x)
    assert shared.data_ptr() != x.data_ptr() and attached.data_ptr() != shared.data_ptr()
    shared[0, 0] = -1.0  # one buffer seen twice, as the judge and the runner see it
    assert attached[0, 0] == -1.0 and x[0, 0] == 0.0
    assert all(sets[name][1] == 7 for name in bench.REGIMES) and len(keep) == 2
    line = bench.row("2/77", {"own": [4.0, 4.0, 4.0, 4.2], "shared": [6.0] * 4, "attached": [5.0] * 4})
    assert line == ("| 2/77 | 4.0000 ms (IQR 4%, 1.000x own) | 6.0000 ms (IQR 0%, 1.500x own) | "
                    "5.0000 ms (IQR 0%, 1.250x own) |")
