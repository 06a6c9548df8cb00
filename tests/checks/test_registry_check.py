"""The registry: each phase's checks in their order, and a check's declaration validated."""
import pytest

from kbharness.judge import checks
from kbharness.judge.checks import registry


def test_phases_hold_their_checks_in_order_with_their_severities():
    assert [(c.name, c.severity) for c in checks.for_phase("trial")] == [
        ("no input mutation", "fail"), ("no output aliasing", "fail")]
    assert [c.name for c in checks.for_phase("repeat")] == ["no output aliasing", "deterministic"]
    assert [(c.name, c.severity) for c in checks.for_phase("timing")] == [
        ("no hidden work", "fail"), ("host-bound", "flag"), ("implausible speedup", "flag")]


def test_a_check_with_an_unknown_phase_or_severity_is_refused():
    with pytest.raises(ValueError, match="unknown"):
        registry.register("x", "after lunch")
    with pytest.raises(ValueError, match="unknown"):
        registry.register("x", "trial", "fatal")
