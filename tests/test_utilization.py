"""Each device's idle fraction over a run, from the evaluations' spans less their build phases."""
import pytest

from kbharness.orchestration.backends import LocalBackend
from kbharness.orchestration.utilization import Span, describe, idle_fractions


def test_idle_is_what_the_spans_less_their_builds_leave_of_the_run():
    spans = [Span("cuda:0", 0.0, 4.0, build_s=1.0), Span("cuda:0", 4.0, 6.0),  # busy 5 of 10
             Span("cuda:1", 2.0, 10.0, build_s=8.0)]  # busy 0: it only compiled
    assert idle_fractions(spans, 0.0, 10.0) == pytest.approx({"cuda:0": 0.5, "cuda:1": 1.0})
    assert describe(spans, 0.0, 10.0).startswith("device idle: cuda:0 50%, cuda:1 100% of 10 s")
    assert describe([], 0.0, 10.0) == ""


def test_the_local_backend_records_each_evaluations_span(evaluate, tmp_path, build_cache):
    from conftest import CANDIDATES, FAST, TINY_PROBLEM
    from kbharness.common.spec import EvalSpec, Settings

    backend = LocalBackend(sandboxed=False)
    spec = EvalSpec(TINY_PROBLEM, CANDIDATES / "correct.py", Settings(device="cpu", **FAST), build_cache)
    [(_, record)] = list(backend.run([spec]))
    [span] = backend.spans
    assert span.device == "cpu" and span.end - span.start >= record.wall_s * 0.5
    assert span.build_s == record.build_s
