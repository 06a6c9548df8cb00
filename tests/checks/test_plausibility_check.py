from kbharness.judge.checks.plausibility import within_reason
from kbharness.judge.checks.registry import TimingRun


def test_a_speedup_beyond_the_limit_is_flagged_for_review():
    def run(new_ms):
        return TimingRun((new_ms,) * 3, (10.0,) * 3, (0.0,) * 3, (0.0,) * 3, 0, 10.0)

    assert within_reason(run(2.0)) == ""
    assert within_reason(run(0.5)).startswith("implausible speedup: 20.0x exceeds 10x")
