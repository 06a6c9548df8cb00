"""KernelBench's own tree as the harness's proving ground.

``refs TREE OUT``: for every ``TREE/levelN/ID_Name.py`` (levels 1-3), a candidate
``OUT/levelN/ID_Name/reference.py`` that is the problem's own source with
``ModelNew = Model``: each reference judged against itself must come out correct with a
speedup of about 1.00, or be flagged (stochastic, cannot discriminate), never charged.

``summary STORE [AGAIN]``: the verdict counts, every problem that is not plainly correct
and why, speedups outside [0.97, 1.03] for reference calls of at least 50 µs, the largest
peak memories and the time per evaluation, as Markdown; with a second store (the same
sweep under CPU load), the problems whose verdict or flags changed.

``missing TREE REFS STORE...``: the reference folders under REFS (made by ``refs``) of the
problems none of the STOREs holds, level 3 first, on one line: a sweep's ``KB_SWEEP_PATHS``
for what earlier runs left undone.
"""
from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kbharness.common.results import UNTRUSTED_FLAGS  # noqa: E402

LEVELS = ("level1", "level2", "level3")


def refs(tree: Path, out: Path) -> int:
    count = 0
    for level in LEVELS:
        for problem in sorted((tree / level).glob("*.py")):
            folder = out / level / problem.stem
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "reference.py").write_text(problem.read_text() + "\n\nModelNew = Model\n")
            count += 1
    print(f"{count} reference candidates under {out}")
    return 0


def missing(tree: Path, refs_dir: Path, stores: list[Path]) -> int:
    done = {p for store in stores for p in _records(store)}
    folders = []
    for level in ("level3", "level1", "level2"):
        for problem in sorted((tree / level).glob("*.py"), key=lambda f: _key(f"{level[5:]}/{f.stem.split('_')[0]}")):
            if f"{level[5:]}/{problem.stem.split('_')[0]}" not in done:
                folders.append(str(refs_dir / level / problem.stem))
    print(" ".join(folders))
    return 0


def _records(store: Path) -> dict[str, dict]:
    """The newest record of each problem (a resumed sweep may hold an interrupted one too)."""
    newest: dict[str, dict] = {}
    for line in store.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict) and "problem" in r:
            newest[r["problem"]] = r
    return newest


def _key(problem: str) -> tuple[int, int]:
    level, _, pid = problem.partition("/")
    return (int(level), int(pid)) if level.isdigit() and pid.isdigit() else (99, 0)


def _status(r: dict) -> str:
    trust = list(dict.fromkeys(f.split(":")[0] for f in r.get("flags", []) if f.startswith(UNTRUSTED_FLAGS)))
    return r["verdict"] + (f" ({', '.join(trust)})" if trust else "")


def _spread(r: dict) -> str:
    """What says whether a speedup off 1.00 is noise: runs and each timing's IQR over its median."""
    iqr = [100 * r[k]["iqr_ms"] / r[k]["median_ms"] for k in ("ref_timing", "new_timing")]
    host = " host-bound" if any(f.startswith("host-bound") for f in r.get("flags", [])) else ""
    return f"{len(r['new_timing']['times_ms'])} runs, IQR {iqr[0]:.0f}% and {iqr[1]:.0f}%{host}"


def _gib(n: float | None) -> str:
    return f"{n / 2**30:.2f}" if n else "-"


def summary(store: Path, again: Path | None = None) -> int:
    recs = _records(store)
    lines = [f"# KernelBench references judged against themselves: {store}", "",
             f"{len(recs)} problems; GPU {next(iter(recs.values()), {}).get('env', {}).get('gpu', '?')}", "",
             "| verdict | problems |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in Counter(_status(r) for r in recs.values()).most_common()]
    odd = [(p, r) for p, r in sorted(recs.items(), key=lambda kv: _key(kv[0]))
           if r["verdict"] != "correct" or _status(r) != "correct"]
    lines += ["", "## Not plainly correct", ""]
    lines += [f"- {p} {Path(r['problem_path']).stem}: {_status(r)}: {r.get('message') or '; '.join(r.get('flags', []))[:300]}"
              for p, r in odd] or ["none"]
    timed = [(p, r) for p, r in recs.items() if r.get("speedup") and r.get("ref_timing")]
    long_calls = [(p, r) for p, r in timed if r["ref_timing"]["median_ms"] >= 0.05]
    outside = [(p, r) for p, r in long_calls if not 0.97 <= r["speedup"] <= 1.03]
    speedups = [r["speedup"] for _, r in long_calls]
    lines += ["", "## Speedups against itself", "",
              f"{len(long_calls)} problems with reference calls of at least 50 µs: speedup "
              f"min {min(speedups, default=0):.3f}, median {statistics.median(speedups) if speedups else 0:.3f}, "
              f"max {max(speedups, default=0):.3f}; outside [0.97, 1.03]: {len(outside)}", ""]
    lines += [f"- {p}: {r['speedup']:.3f}x (reference {r['ref_timing']['median_ms']:.4g} ms, "
              f"candidate {r['new_timing']['median_ms']:.4g} ms; {_spread(r)})" for p, r in sorted(outside, key=lambda x: _key(x[0]))]
    peak = sorted(recs.items(), key=lambda kv: -max([v for k, v in kv[1].get("memory", {}).items()
                                                   if k in ("reference", "candidate", "evaluation")] or [0]))
    lines += ["", "## Largest peak device memory (GiB)", "", "| problem | reference | candidate | evaluation | limit |",
              "|---|---|---|---|---|"]
    for p, r in peak[:12]:
        m = r.get("memory", {})
        lines.append(f"| {p} {Path(r['problem_path']).stem} | {_gib(m.get('reference'))} | {_gib(m.get('candidate'))} "
                     f"| {_gib(m.get('evaluation'))} | {_gib(m.get('limit'))} |")
    walls = [r["wall_s"] for r in recs.values() if r.get("wall_s")]
    if walls:
        lines += ["", f"Time per evaluation (worker wall clock): mean {statistics.fmean(walls):.2f} s, "
                      f"median {statistics.median(walls):.2f} s, total {sum(walls) / 60:.1f} min"]
    clocks = [r["judge_clock"] for r in recs.values() if r.get("judge_clock", {}).get("agreement") is not None]
    if clocks:
        agree = sorted(c["agreement"] for c in clocks)
        slower = sorted(c["new_over_events"] for c in clocks)
        lines += ["", f"Judge's clock, {len(clocks)} problems with candidate calls long enough to decide: events' "
                      f"speedup over the clock's min {agree[0]:.3f}, median {statistics.median(agree):.3f}, max "
                      f"{agree[-1]:.3f}; clock's call over the events' min {slower[0]:.3f}, median "
                      f"{statistics.median(slower):.3f}, max {slower[-1]:.3f}"]
    if again is not None:
        other = _records(again)
        both = sorted(set(recs) & set(other), key=_key)
        changed = [p for p in both if _status(recs[p]) != _status(other[p])]
        lines += ["", f"## Against {again}", "", f"{len(both)} problems in both; verdict or trust flags changed: "
                  f"{len(changed)}", ""]
        lines += [f"- {p}: {_status(recs[p])} -> {_status(other[p])}: {other[p].get('message', '')[:200]}"
                  for p in changed]
        paired = [(recs[p]["wall_s"], other[p]["wall_s"]) for p in both if recs[p].get("wall_s") and other[p].get("wall_s")]
        if paired:
            lines += ["", f"Time per evaluation on the {len(paired)} problems in both: mean {statistics.fmean(a for a, _ in paired):.2f} s "
                          f"here against {statistics.fmean(b for _, b in paired):.2f} s there"]
    print("\n".join(lines))
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "refs":
        return refs(Path(argv[1]), Path(argv[2]))
    if len(argv) >= 4 and argv[0] == "missing":
        return missing(Path(argv[1]), Path(argv[2]), [Path(a) for a in argv[3:]])
    if len(argv) in (2, 3) and argv[0] == "summary":
        return summary(Path(argv[1]), Path(argv[2]) if len(argv) == 3 else None)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
