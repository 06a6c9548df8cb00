from kbharness.judge.checks.hidden_work import nothing_left_running
from kbharness.judge.checks.registry import TimingRun


def _run(pending_new, pending_ref, new_ms=1.0):
    n = len(pending_new)
    return TimingRun((new_ms,) * n, (new_ms,) * n, tuple(pending_new), tuple(pending_ref), 0, 10.0)


def test_device_work_pending_after_the_call_beyond_the_reference_fails():
    # 0.2 ms + 25% of a 1 ms call: 0.45 ms of slack over the reference
    assert nothing_left_running(_run([0.9] * 10, [0.01] * 10)).startswith("asynchronous work outside the timed region")
    assert nothing_left_running(_run([0.3] * 10, [0.01] * 10)) == ""


def test_a_busy_host_delaying_some_calls_is_no_hidden_work():
    jitter = [0.01] * 6 + [4.0] * 4  # a few calls preempted for milliseconds
    assert nothing_left_running(_run(jitter, list(reversed(jitter)))) == ""
    assert nothing_left_running(_run(jitter, [0.01] * 10)) == ""  # the candidate's calls alone
