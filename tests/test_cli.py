"""Each command through click's CliRunner, asserting what a user reads."""
import csv
import json
import os
import signal
import subprocess
import sys
import time

from click.testing import CliRunner

from conftest import CANDIDATES, FIXTURES, ROOT, TINY_PROBLEM
from kbharness.cli import main
from test_store import make

FAST = ["--device", "cpu", "--trials", "2", "--runs", "10", "--warmup", "1", "--time-budget", "1", "-q"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_list_shows_the_repository_suite():
    r = invoke("list", "--problems-dir", ROOT / "problems")
    assert r.exit_code == 0
    assert "Conv2d_Divide_LeakyReLU" in r.output and "Gemm_ReLU_Divide" in r.output


def test_compare_prints_verdict_errors_and_speedup(tmp_path, build_cache):
    r = invoke("compare", TINY_PROBLEM, CANDIDATES / "correct.py", *FAST, "--store", tmp_path / "s.jsonl",
               "--cache-dir", build_cache)
    assert r.exit_code == 0, r.output
    assert "correct.py" in r.output and "correct" in r.output and "0.00e+00" in r.output
    assert "times faster than the reference" in r.output or "times slower than the reference" in r.output
    assert (tmp_path / "s.jsonl").read_text().count("\n") == 1


def test_compare_on_a_truncated_seed_says_no_code(tmp_path):
    seed = ROOT / "solutions" / "level2" / "54_Conv2d_Multiply_LeakyReLU_GELU" / "seed_003.txt"
    problem = ROOT / "problems" / "level2" / "54_Conv2d_Multiply_LeakyReLU_GELU.py"
    r = invoke("compare", problem, seed, *FAST, "--no-store")
    assert r.exit_code == 0
    assert "no code: response ends inside the reasoning; no final code block" in r.output


def test_run_stores_records_and_leaderboard_writes_csv(tmp_path, build_cache):
    store = tmp_path / "evals.jsonl"
    r = invoke("run", "1/1", "--problems-dir", FIXTURES / "problems", "--solution", CANDIDATES / "correct.py",
               "--solution", CANDIDATES / "wrong.py", *FAST, "--store", store, "--cache-dir", build_cache)
    assert r.exit_code == 0, r.output
    assert "incorrect" in r.output and "wrong.py: incorrect: output matches reference" in r.output
    out_csv = tmp_path / "board.csv"
    r = invoke("leaderboard", "--store", store, "--csv", out_csv)
    assert r.exit_code == 0
    assert "fast_0=1.00" in r.output
    rows = list(csv.DictReader(out_csv.open()))
    assert rows[0]["problem"] == "1/1" and rows[0]["solution"].endswith("correct.py")
    assert rows[0]["correct"] == "1" and rows[0]["candidates"] == "2"


def test_bad_input_is_one_line_with_exit_2(tmp_path):
    r = invoke("run", "9/9", "--problems-dir", FIXTURES / "problems")
    assert r.exit_code == 2
    assert r.output.strip() == "error: 9/9: no problem with level 9 and id 9 under " + str(FIXTURES / "problems")
    r = invoke("run", "1/1", "--problems-dir", FIXTURES / "problems", "--solution", CANDIDATES / "correct.py",
               "--size", "batch_size")
    assert r.exit_code == 2 and "expected NAME=VALUE" in r.output
    r = invoke("leaderboard", "--store", tmp_path / "none.jsonl")
    assert r.exit_code == 2 and "no results store yet" in r.output
    r = invoke("run", "1/1", "--problems-dir", FIXTURES / "problems", "--solutions-dir", tmp_path)
    assert r.exit_code == 2 and "no candidates under" in r.output


def test_usage_mistakes_exit_2_before_anything_runs_or_is_stored(tmp_path, monkeypatch):
    import torch

    store = tmp_path / "s.jsonl"
    common = ("--problems-dir", FIXTURES / "problems", "--store", store, "-q")
    r = invoke("run", "1/1", "--solution", CANDIDATES / "correct.py", "--size", "batchsize=4", *common)
    assert r.exit_code == 2
    assert r.output.strip() == (f"error: {TINY_PROBLEM}: no module constant 'batchsize' to override with a size "
                                "(it has: batch_size, dim)")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    r = invoke("run", "1/1", "--solution", CANDIDATES / "correct.py", "--device", "cuda", *common)
    assert r.exit_code == 2 and r.output.startswith("error: --device cuda: no GPU visible")
    assert len(r.output.strip().splitlines()) == 1
    r = invoke("compare", "1/99", CANDIDATES / "correct.py", *common)
    assert r.exit_code == 2 and "1/99: no problem with level 1 and id 99" in r.output
    assert not store.exists()


def test_compare_names_problems_as_run_does(tmp_path):
    # A size mistake stops after the problem is resolved, so the message shows which one was.
    for name in ("1/1", "Scale_shift", TINY_PROBLEM):
        r = invoke("compare", name, CANDIDATES / "correct.py", "--problems-dir", FIXTURES / "problems",
                   "--size", "nope=1", "--no-store")
        assert r.exit_code == 2 and f"error: {TINY_PROBLEM}: no module constant 'nope'" in r.output, r.output


def test_ctrl_c_exits_130_keeping_every_finished_record(tmp_path, build_cache):
    sleepy = tmp_path / "sleepy.py"
    # It marks its scratch folder (its TMPDIR, under the run's) once it is called, so that the
    # interrupt is known to land inside its evaluation.
    sleepy.write_text((CANDIDATES / "correct.py").read_text().replace(
        "    def forward(self, x):\n",
        "    def forward(self, x):\n        open(os.environ['TMPDIR'] + '/called', 'w').close()\n        time.sleep(1)\n"
    ).replace("import torch.nn", "import os\nimport time\n\nimport torch.nn"))
    store = tmp_path / "evals.jsonl"
    cmd = [sys.executable, "-m", "kbharness.cli", "run", "1/1", "--problems-dir", str(FIXTURES / "problems"),
           "--solution", str(CANDIDATES / "correct.py"), "--solution", str(sleepy), "--build-jobs", "0",
           "--store", str(store), "--cache-dir", str(build_cache), *map(str, FAST)]
    # SIGINT's default disposition, as a terminal's Ctrl-C finds it (background jobs inherit SIG_IGN).
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not (store.exists() and store.read_text().count("\n") == 1):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    while not list(tmp_path.glob("kb-*/**/called")):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"interrupted; every finished evaluation is in the store ({store})" in err and "Traceback" not in err
    records = [json.loads(line) for line in store.read_text().splitlines()]
    assert [(r["verdict"], r["solution_path"].split("/")[-1]) for r in records] == [("correct", "correct.py")]


def _store_with(path, *lines):
    good = json.dumps(make(problem="1/1").to_dict())
    path.write_text("\n".join(good if line is None else line for line in lines) + "\n")
    return path


def test_every_command_that_reads_a_damaged_store_names_its_unreadable_lines(tmp_path):
    store = _store_with(tmp_path / "s.jsonl", None, "[1, 2, 3]", "42", "garbage", None)
    warning = f"warning: {store}: 3 unreadable lines skipped (lines 2, 3, 4)"
    board = invoke("leaderboard", "--store", store)
    assert board.exit_code == 0 and warning in board.stderr and "1/1" in board.stdout
    rep = invoke("report", "--store", store, "--out", tmp_path / "rep")
    assert rep.exit_code == 0 and warning in rep.stderr and "(2 records)" in rep.stdout
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    compared = invoke("compare", TINY_PROBLEM, empty, *FAST, "--store", store)
    assert compared.exit_code == 0 and warning in compared.stderr
    assert "empty.txt: no code: empty completion" in compared.stdout


def test_a_record_of_a_newer_schema_is_named_with_its_reason(tmp_path):
    newer = json.dumps({**make(problem="1/2").to_dict(), "schema_version": 3})
    store = _store_with(tmp_path / "s.jsonl", None, newer)
    board = invoke("leaderboard", "--store", store)
    assert board.exit_code == 0 and "1/1" in board.stdout
    assert (f"warning: {store}: 1 unreadable line skipped (line 2); "
            "line 2: schema 3 is newer than this kbharness reads (2)") in board.stderr


def test_a_store_that_is_not_text_is_refused_in_one_line(tmp_path):
    store = tmp_path / "s.jsonl"
    store.write_bytes(bytes(range(256)) * 8)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    for args in (("leaderboard",), ("report", "--out", tmp_path / "rep"), ("compare", TINY_PROBLEM, empty, *FAST)):
        r = invoke(*args, "--store", store)
        assert r.exit_code == 2, args
        assert r.output == f"error: {store}: not a results store (binary data, not JSON lines)\n"


def test_a_record_stored_after_a_torn_line_stays_readable(tmp_path):
    store = _store_with(tmp_path / "s.jsonl", None)
    store.write_text(store.read_text() + '{"problem": "1/1", "verd')
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    r = invoke("compare", TINY_PROBLEM, empty, *FAST, "--store", store)
    assert r.exit_code == 0
    board = invoke("leaderboard", "--store", store)
    assert f"{store}: 1 unreadable line skipped (line 2)" in board.stderr
    assert "1/2" in board.stdout  # both records: 1 correct of 2 evaluated


def test_leaderboard_lists_records_it_leaves_out_and_why(tmp_path):
    blind = make(problem="1/7", sha="b" * 64, flags=("problem cannot discriminate: an all-zeros output passes",))
    store = _store_with(tmp_path / "s.jsonl", None, json.dumps(blind.to_dict()))
    r = invoke("leaderboard", "--store", store)
    assert r.exit_code == 0
    assert "left out: 1/7 bbbb.py: problem cannot discriminate: an all-zeros output passes" in r.stdout
    assert "fast_0=1.00" in r.stdout


def test_two_scratch_problems_of_one_name_are_two_leaderboard_rows(tmp_path):
    store, empty = tmp_path / "s.jsonl", tmp_path / "empty.txt"
    empty.write_text("")
    keys = []
    for folder, scale in (("a", "2.0"), ("b", "3.0")):
        scratch = tmp_path / folder / "1_Scale_shift.py"
        scratch.parent.mkdir()
        scratch.write_text(TINY_PROBLEM.read_text() + f"\nSCALE_FOR_THIS_COPY = {scale}\n")
        r = invoke("compare", scratch, empty, *FAST, "--store", store)
        assert r.exit_code == 0, r.output
        keys.append(json.loads(store.read_text().splitlines()[-1])["problem"])
        assert r.stdout.lstrip().startswith(f"{keys[-1]} 1_Scale_shift on cpu")  # the title names it by its key
    assert keys[0] != keys[1] and all(k.startswith("1_Scale_shift-") for k in keys)
    board = invoke("leaderboard", "--store", store)
    assert keys[0] in board.stdout and keys[1] in board.stdout and "1/1" not in board.stdout
    again = invoke("run", keys[1], "--problems-dir", tmp_path, "--solution", empty, *FAST, "--store", store)
    assert again.exit_code == 0 and "1 of 1 results are from" in again.stdout


def test_baseline_times_references_alone_and_writes_a_self_describing_file(tmp_path):
    out_file = tmp_path / "baseline.json"
    r = invoke("baseline", "--problems-dir", FIXTURES / "problems", "--device", "cpu", "--runs", "10",
               "--time-budget", "1", "--out", out_file)
    assert r.exit_code == 0, r.output
    doc = json.loads(out_file.read_text())
    assert doc["env"]["torch"] and doc["settings"]["device"] == "cpu"
    by_key = {p["problem"]: p for p in doc["problems"]}
    assert set(by_key) == {"1/1", "1/2", "1/3", "1/4"}
    slow = by_key["1/3"]  # sleeps 30 ms per call
    assert len(slow["times_ms"]) == 10 and 30.0 <= slow["median_ms"] < 300.0
    assert "Slow_reference" in r.output


def test_roofline_sets_the_baseline_against_the_floor_and_names_a_bad_baseline(tmp_path):
    sheet = tmp_path / "sheet.json"
    sheet.write_text(json.dumps({"bandwidth_gbs": 100, "fp32_tflops": 1, "tf32_tflops": 1,
                                 "fp16_tflops": 1, "bf16_tflops": 1}))
    good = tmp_path / "baseline_cpu.json"
    good.write_text(json.dumps({"env": {"gpu": None}, "problems": [{"problem": "1/3", "median_ms": 123.4}]}))
    common = ("roofline", "1/3", "--problems-dir", ROOT / "problems", "--device", "cpu", "--ceilings", sheet)
    r = invoke(*common, "--baseline", good)
    assert r.exit_code == 0, r.output
    assert "123.400 ms" in r.output and "2%" in r.output
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    r = CliRunner().invoke(main, [str(a) for a in (*common, "--baseline", bad)])
    assert r.exit_code == 2
    assert "bad.json: not a baseline file (JSONDecodeError" in r.output and "Traceback" not in r.output


def test_ctrl_c_outside_an_evaluation_exits_130_in_one_line(monkeypatch, tmp_path):
    import kbharness.cli as cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(cli, "build_all", interrupted)
    r = invoke("build", CANDIDATES / "correct.py", "--device", "cpu", "--cache-dir", tmp_path, "--no-sandbox")
    assert r.exit_code == 130
    assert r.output.strip() == "interrupted"
