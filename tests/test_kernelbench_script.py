"""scripts/kernelbench.py: the references a resumed KernelBench sweep still has to run."""
import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "kernelbench.py"


def _script():
    spec = importlib.util.spec_from_file_location("kernelbench_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_missing_lists_the_problems_no_store_holds_level_3_first(tmp_path, capsys):
    for name in ("level1/1_A.py", "level1/10_B.py", "level1/2_C.py", "level3/4_D.py"):
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / name).write_text("")
    store = tmp_path / "store.jsonl"
    store.write_text(json.dumps({"problem": "1/1"}) + "\nnot json\n")
    assert _script().missing(tmp_path / "tree", Path("refs"), [store]) == 0
    assert capsys.readouterr().out.split() == ["refs/level3/4_D", "refs/level1/2_C", "refs/level1/10_B"]
