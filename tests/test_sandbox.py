"""The sandbox against candidates that try to get out of it, one route each. Every fixture
returns a wrong output when its attempt worked, so the verdict says which route is open:
sandboxed, each is correct (and the host shows no trace); with ``--no-sandbox`` the routes
that exist flip to incorrect."""
import os
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import CANDIDATES, TINY_PROBLEM

import kbharness
from kbharness.execution import sandbox
from kbharness.orchestration.build import build_all, entry_of
from kbharness.cli import main
from kbharness.common.results import Verdict

FAST = ["--device", "cpu", "--trials", "2", "--runs", "10", "--warmup", "1", "--time-budget", "1", "-q", "--no-store"]


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """What the fixtures aim at: a home with a secret (HOME for the run), a folder in the
    host's /tmp, a listening port, the judge's pid, a file name in the harness package."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("the user's token")
    tmp = tmp_path / "host_tmp"
    tmp.mkdir()
    store = tmp_path / "evals.jsonl"
    store.write_text("")
    listener = socket.create_server(("127.0.0.1", 0))
    mark = f"pwned_{os.getpid()}_{tmp_path.name}"
    for name, value in {"HOME": home, "KB_TEST_HOME": home, "KB_TEST_TMP": tmp, "KB_TEST_MARK": mark,
                        "KB_TEST_PORT": listener.getsockname()[1], "KB_TEST_JUDGE_PID": os.getpid(),
                        "KB_TEST_STORE": store}.items():
        monkeypatch.setenv(name, str(value))
    package_file = Path(kbharness.__file__).parent / mark
    yield {"home": home, "tmp": tmp, "package_file": package_file, "store": store}
    listener.close()
    package_file.unlink(missing_ok=True)


ROUTES = ["escape_harness_write.py", "escape_home_write.py", "escape_home_read.py", "escape_network.py",
          "escape_tmp_write.py", "escape_parent.py", "escape_store.py"]


@pytest.mark.parametrize("server", ["1", "0"])
def test_every_route_out_is_closed_forked_or_started_fresh(evaluate, forked, planted, monkeypatch, server):
    monkeypatch.setenv("KB_FORKSERVER", server)
    verdicts = {route: evaluate(route).verdict for route in ROUTES}
    assert verdicts == {route: Verdict.CORRECT for route in ROUTES}
    assert len(forked) == (len(ROUTES) if server == "1" else 0)
    assert not planted["package_file"].exists()
    assert not (planted["home"] / "pwned").exists()
    assert not (planted["tmp"] / "left_behind").exists()
    assert planted["store"].read_text() == ""


@pytest.mark.parametrize("route", ["escape_home_read.py", "escape_network.py", "escape_tmp_write.py",
                                   "escape_parent.py", "escape_store.py"])
def test_without_the_sandbox_the_route_is_open(evaluate, planted, route):
    assert evaluate(route, sandboxed=False).verdict is Verdict.INCORRECT


def test_a_build_writes_only_its_own_cache_entry(tmp_path, planted, monkeypatch):
    cache = tmp_path / "cache"
    target = cache / "extensions" / ("0" * 20)
    target.mkdir(parents=True)
    monkeypatch.setenv("KB_TEST_CACHE_TARGET", str(target))
    [result] = build_all([CANDIDATES / "escape_cache.py"], "cpu", cache, jobs=1)
    assert result.ok, result.message
    assert not (target / "planted").exists()
    monkeypatch.setenv("KB_TEST_CACHE_TARGET", str(entry_of(CANDIDATES / "escape_cache.py", "cpu", cache)))
    list(build_all([CANDIDATES / "escape_cache.py"], "cpu", cache, jobs=1))
    assert (entry_of(CANDIDATES / "escape_cache.py", "cpu", cache) / "planted").exists()


@pytest.fixture
def no_bwrap(tmp_path, monkeypatch):
    """A PATH without bwrap, and the sandbox's probe forgotten before and after."""
    monkeypatch.setenv("PATH", str(tmp_path))
    sandbox._problem.cache_clear()
    yield
    sandbox._problem.cache_clear()


@pytest.mark.parametrize("command", ["run", "build"])
def test_without_bwrap_the_command_refuses_in_one_line(no_bwrap, tmp_path, command):
    args = [command, str(TINY_PROBLEM), "--solution", str(CANDIDATES / "correct.py"), *FAST] if command == "run" \
        else [command, str(CANDIDATES / "correct.py"), "--device", "cpu", "--cache-dir", str(tmp_path / "c")]
    r = CliRunner().invoke(main, args, catch_exceptions=False)
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "bwrap" in lines[0] and "--no-sandbox" in lines[0], r.output


def test_without_bwrap_no_sandbox_runs(no_bwrap, build_cache):
    r = CliRunner().invoke(main, ["run", str(TINY_PROBLEM), "--solution", str(CANDIDATES / "correct.py"), *FAST,
                                  "--cache-dir", str(build_cache), "--no-sandbox"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "correct" in r.output


def test_kb_sandbox_0_is_no_sandbox(evaluate, planted, monkeypatch):
    monkeypatch.setenv("KB_SANDBOX", "0")
    assert evaluate("escape_network.py").verdict is Verdict.INCORRECT


def test_a_worker_started_plainly_writes_only_its_own_cache_entry(evaluate, build_cache, monkeypatch):
    """KB_FORKSERVER=0 trades the fork server's speed for a sandbox per worker: the build cache
    is read-only there but for the candidate's own entry, so it cannot plant a library in another's."""
    monkeypatch.setenv("KB_FORKSERVER", "0")
    other = build_cache / "extensions" / ("f" * 20)
    other.mkdir(parents=True, exist_ok=True)
    (other / "planted").unlink(missing_ok=True)
    monkeypatch.setenv("KB_TEST_CACHE_TARGET", str(other))
    assert evaluate("escape_cache.py").verdict is Verdict.CORRECT
    assert not (other / "planted").exists()
    own = entry_of(CANDIDATES / "escape_cache.py", "cpu", build_cache)
    monkeypatch.setenv("KB_TEST_CACHE_TARGET", str(own))
    assert evaluate("escape_cache.py").verdict is Verdict.INCORRECT  # its own entry stays writable
    (own / "planted").unlink()


def test_a_worker_forked_from_the_shared_sandbox_writes_only_its_own_folders(evaluate, forked, build_cache,
                                                                              monkeypatch):
    """The fork server's sandbox leaves the whole cache writable; each forked worker confines
    itself (kbharness/confine.py) before the candidate is imported."""
    monkeypatch.setenv("KB_FORKSERVER", "1")
    other = build_cache / "extensions" / ("e" * 20)
    other.mkdir(parents=True, exist_ok=True)
    (other / "planted").unlink(missing_ok=True)
    monkeypatch.setenv("KB_TEST_CACHE_TARGET", str(other))
    r = evaluate("escape_cache.py")
    assert r.verdict is Verdict.CORRECT, r.message
    assert not [n for n in r.notes if "not confined" in n], r.notes
    assert not (other / "planted").exists()
    own = entry_of(CANDIDATES / "escape_cache.py", "cpu", build_cache)
    monkeypatch.setenv("KB_TEST_CACHE_TARGET", str(own))
    assert evaluate("escape_cache.py").verdict is Verdict.INCORRECT  # its own entry stays writable
    (own / "planted").unlink()
    assert len(forked) == 2


@pytest.mark.parametrize("pid_namespace", [True, False], ids=["own-pid-namespace", "signal-filter-as-on-the-gpu"])
def test_the_runner_can_neither_stop_nor_read_its_judge(evaluate, monkeypatch, pid_namespace):
    """In a PID namespace of its own (on the CPU) the judge has no pid the candidate could
    name; in the judge's (on the GPU, where CUDA refuses a nested one) the signal filter
    refuses the kill, and the judge, not dumpable, cannot be read through /proc."""
    from test_confine import MISSING_WALLS

    from kbharness.execution import isolate

    monkeypatch.setattr(isolate, "_runner_pid_namespace", lambda spec: pid_namespace)
    for route in ("escape_judge.py", "escape_judge_memory.py"):
        r = evaluate(route)
        assert r.verdict is Verdict.CORRECT, (route, r.message)
        assert not [n for n in r.notes if any(w in n for w in MISSING_WALLS)], r.notes


def test_a_record_forged_in_the_run_folder_is_never_believed(evaluate, tmp_path, monkeypatch):
    """Sandboxed, the runner cannot write the run folder at all; without the sandbox it can,
    and the record it leaves, unsigned, is recognised as forged."""
    monkeypatch.chdir(tmp_path)
    boxed = evaluate("forges_record.py")
    assert boxed.verdict is Verdict.CRASH, boxed.message
    bare = evaluate("forges_record.py", sandboxed=False)
    assert bare.verdict is Verdict.INCORRECT and "record integrity" in bare.message, bare.message
