"""Each default is stated once, in ``Settings``: the CLI shows and uses those, never its own copies."""
import dataclasses
import subprocess
import sys
import textwrap

from kbharness import cli
from kbharness.common.spec import Settings

FIELDS = {f.name: f.default for f in dataclasses.fields(Settings) if f.default is not dataclasses.MISSING}
# None means "decide at run time": the visible device, the precision's tolerance, no ceilings file.
DECIDED_LATER = {"device", "atol", "rtol", "ceilings_file"}


def _settings_params(command):
    return {p.name: p for p in command.params if p.name in FIELDS and p.name not in DECIDED_LATER}


def test_evaluating_commands_default_to_settings_defaults():
    for name in ("run", "compare", "sweep", "check"):
        params = _settings_params(cli.main.commands[name])
        assert len(params) >= 14, name
        assert {k: p.default for k, p in params.items()} == {k: FIELDS[k] for k in params}, name


def test_help_shows_settings_defaults():
    shown = cli.main.commands["run"].get_help(cli.click.Context(cli.main.commands["run"]))
    assert f"[default: {Settings().n_runs}]" in " ".join(shown.split())
    assert f"at least {Settings().min_runs} runs are kept" in " ".join(shown.split())


def test_no_command_restates_a_settings_default():
    """With every ``spec.default`` answering a marker, a CLI option still showing a plain value
    restates it (even one equal to today's default). Flags are off by default by nature."""
    probe = textwrap.dedent(f"""
        import kbharness.common.spec as spec
        spec.default = lambda name: ("marker", name)
        from kbharness import cli
        for name, command in cli.main.commands.items():
            for p in command.params:
                if (p.name in {sorted(FIELDS)!r} and p.name not in {sorted(DECIDED_LATER)!r} and not p.is_flag
                        and p.default != ("marker", p.name)):
                    print(name, p.name, p.default)
    """)
    restated = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert restated.split("\n") == ["baseline time_budget_s 5.0", ""]  # the reference-only timing's own budget
