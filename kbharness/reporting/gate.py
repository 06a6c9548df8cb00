"""The CI gate: which candidates fail a build, and JUnit XML that CI systems display.

A candidate passes when it is correct on a problem that can tell a wrong answer from a right
one (where a null candidate passes, "correct" means nothing), is not measured faster than the
hardware allows (a timing that beats the roofline floor is a broken measurement or a cheat),
and, with a minimum speedup, is at least that fast. Other flags (a stochastic reference, less
work than the reference's operators, ...) are printed but do not fail the build unless ``strict``."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from kbharness.common.results import FLAG_CANNOT_DISCRIMINATE, FLAG_STOCHASTIC, FLAG_IMPOSSIBLE, EvalRecord


@dataclass(frozen=True)
class GateResult:
    record: EvalRecord
    reason: str = ""

    @property
    def passed(self) -> bool:
        return not self.reason


def judge(record: EvalRecord, min_speedup: float | None = None, strict: bool = False) -> GateResult:
    if not record.correct:
        return GateResult(record, f"{record.verdict.value}: {record.message}")
    # A problem that cannot discriminate, or whose reference differs from itself (values were not
    # compared), gives a "correct" that says nothing about the candidate.
    blind = [f for f in record.flags if f.startswith((FLAG_CANNOT_DISCRIMINATE, FLAG_STOCHASTIC))]
    if blind:
        return GateResult(record, f"{blind[0]}; a correct verdict on it means nothing")
    impossible = [f for f in record.flags if f.startswith(FLAG_IMPOSSIBLE)]
    if impossible:
        return GateResult(record, impossible[0])
    if strict and record.flags:
        return GateResult(record, f"flagged: {record.flags[0]}")
    if min_speedup is not None and (record.speedup is None or record.speedup < min_speedup):
        got = "no timing" if record.speedup is None else f"{record.speedup:.2f}x"
        return GateResult(record, f"too slow: {got}, at least {min_speedup:g}x required")
    return GateResult(record)


def junit_xml(results: Sequence[GateResult], suite: str = "kbharness") -> str:
    """One test case per candidate (class: the problem), its failure message the reason."""
    failures = sum(not r.passed for r in results)
    root = ET.Element("testsuites", name=suite, tests=str(len(results)), failures=str(failures))
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(results)), failures=str(failures), errors="0")
    for r in results:
        rec = r.record
        wall = rec.wall_s or 0.0
        case = ET.SubElement(ts, "testcase", classname=f"problem {rec.problem}", name=Path(rec.solution_path).name,
                             file=rec.solution_path, time=f"{wall:.3f}")
        if not r.passed:
            failure = ET.SubElement(case, "failure", message=r.reason[:500], type=rec.verdict.value)
            failure.text = rec.log_tail or r.reason
        else:
            speed = f"{rec.speedup:.3f}x" if rec.speedup is not None else "-"
            ET.SubElement(case, "system-out").text = f"correct; speedup {speed}; max_abs {rec.max_abs}"
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
