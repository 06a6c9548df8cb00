"""The pytest plugin: each problem/candidate pair a test item that passes or fails with the gate's reason."""
import os
import shutil
import subprocess
import sys

from conftest import CANDIDATES, FIXTURES, ROOT


def test_each_candidate_is_an_item_failing_with_the_gates_reason(tmp_path, build_cache):
    folder = tmp_path / "cands" / "level1" / "1_Scale_shift"
    folder.mkdir(parents=True)
    shutil.copy(CANDIDATES / "correct.py", folder / "good.py")
    shutil.copy(CANDIDATES / "wrong.py", folder / "bad.py")
    env = {**os.environ, "KB_CACHE_DIR": str(build_cache), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "--rootdir", str(tmp_path),
                           "--kb-problems", str(FIXTURES / "problems"), "--kb-solutions", str(tmp_path / "cands"),
                           "--kb-device", "cpu", "--kb-runs", "10"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert "1/1::good.py PASSED" in proc.stdout, proc.stdout + proc.stderr
    assert "1/1::bad.py FAILED" in proc.stdout
    assert "incorrect:" in proc.stdout and "1 failed, 1 passed" in proc.stdout
    assert proc.returncode == 1
