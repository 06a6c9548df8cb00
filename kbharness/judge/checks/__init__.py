"""Every check module, imported so that each registers itself; a phase's checks run in the
order of these imports. Add a check by adding a module and its line here."""
from kbharness.judge.checks import mutation, aliasing, determinism, hidden_work, host_bound, plausibility  # noqa: F401, I001
from kbharness.judge.checks.registry import Check, RepeatCall, TimingRun, TrialCall, for_phase, register  # noqa: F401
