"""The CI gate: reasons a candidate fails, JUnit XML, and `kb check`'s exit codes."""
import shutil
import xml.etree.ElementTree as ET

from conftest import CANDIDATES, FIXTURES
from kbharness.reporting.gate import judge, junit_xml
from kbharness.common.results import EvalRecord, Timing, Verdict
from test_cli import FAST, invoke


def _record(verdict=Verdict.CORRECT, flags=(), ref=2.0, new=1.0, **kw) -> EvalRecord:
    return EvalRecord(problem="1/1", problem_path="p.py", solution_path="sol/a.py", solution_sha256="x",
                      verdict=verdict, flags=tuple(flags), ref_timing=Timing((ref,)), new_timing=Timing((new,)), **kw)


def test_judge_fails_incorrect_impossible_slow_and_flagged_when_strict():
    assert judge(_record()).passed
    assert judge(_record(Verdict.INCORRECT, message="output mismatch")).reason == "incorrect: output mismatch"
    impossible = _record(flags=["faster than the hardware floor: 0.001 ms measured, floor 0.01 ms"])
    assert judge(impossible).reason.startswith("faster than the hardware floor")
    assert judge(_record(), min_speedup=3).reason == "too slow: 2.00x, at least 3x required"
    assert judge(_record(), min_speedup=1.5).passed
    flagged = _record(flags=["no custom kernel: ..."])
    assert judge(flagged).passed and judge(flagged, strict=True).reason == "flagged: no custom kernel: ..."


def test_judge_fails_a_problem_that_cannot_discriminate_or_is_stochastic_but_not_less_work():
    blind = _record(flags=["problem cannot discriminate: an all-zeros output passes the check"])
    assert judge(blind).reason == ("problem cannot discriminate: an all-zeros output passes the check; "
                                   "a correct verdict on it means nothing")
    noisy = _record(flags=["stochastic reference: two calls from the same RNG state differ"])
    assert judge(noisy).reason.endswith("a correct verdict on it means nothing")
    info = "less work than the reference's operators: bound 1 ms"
    assert judge(_record(flags=[info])).passed
    assert judge(_record(flags=[info]), strict=True).reason == f"flagged: {info}"


def test_junit_has_one_case_per_candidate_and_failures_with_reasons():
    results = [judge(_record()), judge(_record(Verdict.CRASH, message="worker killed by SIGSEGV", log_tail="boom"))]
    root = ET.fromstring(junit_xml(results))
    suite = root.find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = suite.findall("testcase")
    assert [c.get("classname") for c in cases] == ["problem 1/1", "problem 1/1"]
    assert cases[0].find("failure") is None and "speedup 2.000x" in cases[0].find("system-out").text
    failure = cases[1].find("failure")
    assert failure.get("message") == "crash: worker killed by SIGSEGV" and failure.text == "boom"


def test_check_exits_0_when_all_pass_1_on_any_failure_2_on_misuse(tmp_path, build_cache):
    folder = tmp_path / "level1" / "1_Scale_shift"
    folder.mkdir(parents=True)
    shutil.copy(CANDIDATES / "correct.py", folder / "good.py")
    common = ["--problems-dir", FIXTURES / "problems", *FAST, "--store", tmp_path / "s.jsonl", "--cache-dir", build_cache]
    ok = invoke("check", folder, *common, "--junit", tmp_path / "ok.xml")
    assert ok.exit_code == 0, ok.output
    assert "1 of 1 candidates pass" in ok.output
    assert ET.parse(tmp_path / "ok.xml").getroot().find("testsuite").get("failures") == "0"
    shutil.copy(CANDIDATES / "wrong.py", folder / "bad.py")
    bad = invoke("check", folder, *common, "--junit", tmp_path / "bad.xml")
    assert bad.exit_code == 1
    assert "FAIL 1/1" in bad.output and "bad.py: incorrect" in bad.output and "1 of 2 candidates pass" in bad.output
    cases = ET.parse(tmp_path / "bad.xml").getroot().find("testsuite").findall("testcase")
    assert {c.get("name"): c.find("failure") is not None for c in cases} == {"bad.py": True, "good.py": False}
    slow = invoke("check", folder / "good.py", *common, "--min-speedup", "1000")
    assert slow.exit_code == 1 and "too slow" in slow.output
    stray = tmp_path / "stray.py"
    shutil.copy(CANDIDATES / "correct.py", stray)
    misuse = invoke("check", stray, *common)
    assert misuse.exit_code == 2 and "stray.py: no manifest entry" in misuse.output


def test_check_fails_a_candidate_on_a_problem_that_cannot_discriminate(tmp_path, build_cache):
    problem = tmp_path / "problems" / "level1" / "1_Always_zero.py"
    problem.parent.mkdir(parents=True)
    problem.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                       "    def forward(self, x):\n        return torch.relu(-torch.abs(x))\n\n\n"
                       "def get_inputs():\n    return [torch.randn(8, 128)]\n\n\ndef get_init_inputs():\n    return []\n")
    candidate = tmp_path / "level1" / "1_Always_zero" / "zeros.py"
    candidate.parent.mkdir(parents=True)
    candidate.write_text("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                         "    def forward(self, x):\n        return torch.zeros_like(x)\n")
    r = invoke("check", candidate, "--problems-dir", tmp_path / "problems", *FAST, "--store", tmp_path / "s.jsonl",
               "--cache-dir", build_cache)
    assert r.exit_code == 1, r.output
    assert "FAIL 1/1" in r.stdout and "problem cannot discriminate: an all-zeros output passes the check" in r.stdout
    board = invoke("leaderboard", "--store", tmp_path / "s.jsonl")
    assert "left out: 1/1 zeros.py: problem cannot discriminate" in board.stdout
