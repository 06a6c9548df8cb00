"""The pytest plugin: each problem/candidate pair a test item that passes or fails with the gate's reason,
run from a repository root as the README shows, with only the candidates collected."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import CANDIDATES, FIXTURES, ROOT


@pytest.fixture
def repo(tmp_path, build_cache):
    """A repository root like this one: problems/, solutions/, and a test suite pytest would collect."""
    shutil.copytree(FIXTURES / "problems", tmp_path / "problems")
    folder = tmp_path / "solutions" / "level1" / "1_Scale_shift"
    folder.mkdir(parents=True)
    # Passes only at the size --kb-size asks for (the problem's own batch is 4).
    (folder / "good.py").write_text((CANDIDATES / "correct.py").read_text().replace(
        "    def forward(self, x):\n", "    def forward(self, x):\n        assert x.shape[0] == 2, x.shape\n"))
    shutil.copy(CANDIDATES / "wrong.py", folder / "bad.py")
    (folder / "notes.json").write_text("{}")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_own.py").write_text("def test_own_suite():\n    assert False\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    return tmp_path


def _pytest(repo, build_cache, *args):
    env = {**os.environ, "KB_CACHE_DIR": str(build_cache), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v",
                           "--kb-problems", "problems", "--kb-solutions", "solutions/level1", *args],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def test_only_candidates_are_collected_and_counted_and_fail_with_the_gates_reason(repo, build_cache):
    proc = _pytest(repo, build_cache, "--kb-device", "cpu", "--kb-runs", "10", "--kb-size", "batch_size=2")
    out = proc.stdout + proc.stderr
    assert "collected 2 items" in out, out
    assert "test_own_suite" not in out
    assert "solutions/level1/1_Scale_shift/good.py::1/1 PASSED" in out
    assert "solutions/level1/1_Scale_shift/bad.py::1/1 FAILED" in out
    assert "incorrect:" in out and "1 failed, 1 passed" in out
    assert proc.returncode == 1


def test_usage_mistakes_stop_pytest_before_anything_runs(repo, build_cache):
    proc = _pytest(repo, build_cache, "--kb-device", "cpu", "--kb-size", "batchsize=2")
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert "no module constant 'batchsize' to override with a size (it has: batch_size, dim)" in proc.stderr
    assert "collected" not in proc.stdout and "Traceback" not in proc.stderr
    proc = _pytest(repo, build_cache, "--kb-device", "cpu", "--kb-size", "batch_size")
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--kb-size 'batch_size': expected NAME=VALUE" in proc.stderr


def test_without_bwrap_pytest_stops_unless_kb_no_sandbox(repo, build_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-bwrap-here"))
    proc = _pytest(repo, build_cache, "--kb-device", "cpu", "--kb-runs", "10", "--kb-size", "batch_size=2")
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert "bwrap is not installed" in proc.stderr and "--kb-no-sandbox" in proc.stderr
    proc = _pytest(repo, build_cache, "--kb-device", "cpu", "--kb-runs", "10", "--kb-size", "batch_size=2",
                   "--kb-no-sandbox")
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout + proc.stderr
