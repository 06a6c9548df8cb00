from kbharness.judge.checks.host_bound import device_kept_busy
from kbharness.judge.checks.registry import TimingRun


def test_flagged_only_when_most_timed_calls_waited_for_the_host():
    def run(host_bound):
        return TimingRun((1.0,) * 10, (1.0,) * 10, (0.0,) * 10, (0.0,) * 10, host_bound, 10.0)

    assert device_kept_busy(run(5)) == ""
    assert device_kept_busy(run(6)).startswith("host-bound: the device waited for the candidate's host code in 6 of 10")
