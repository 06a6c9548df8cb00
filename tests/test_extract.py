from pathlib import Path

import pytest

from kbharness.common.extract import Extraction, extract_code

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions" / "level2"
SEEDS = {
    "001": SOLUTIONS / "71_Conv2d_Divide_LeakyReLU" / "seed_001.txt",
    "002": SOLUTIONS / "63_Gemm_ReLU_Divide" / "seed_002.txt",
    "003": SOLUTIONS / "54_Conv2d_Multiply_LeakyReLU_GELU" / "seed_003.txt",
    "004": SOLUTIONS / "97_Matmul_BatchNorm_BiasAdd_Divide_Swish" / "seed_004.txt",
}


@pytest.mark.parametrize("seed", ["001", "002"])
def test_seed_with_final_block_yields_the_block_after_think(seed):
    text = SEEDS[seed].read_text()
    ex = extract_code(text)
    assert ex.code is not None, ex.reason
    assert "class ModelNew" in ex.code
    # the answer is the block after </think>, not the draft inside the reasoning
    final = text.rsplit("</think>", 1)[1]
    assert ex.code.strip() in final
    compile(ex.code, seed, "exec")


@pytest.mark.parametrize("seed", ["003", "004"])
def test_seed_cut_off_in_reasoning_has_no_code(seed):
    ex = extract_code(SEEDS[seed].read_text())
    assert ex.code is None
    assert ex.reason == "response ends inside the reasoning; no final code block"


def test_last_python_block_wins_and_other_languages_are_skipped():
    text = "```python\nfirst = 1\n```\ntext\n```python\nsecond = 2\n```\n```cpp\nint x;\n```\n"
    assert extract_code(text).code == "second = 2\n"


def test_drafts_inside_reasoning_are_ignored():
    text = "thinking\n```python\ndraft = 1\n```\n</think>\nHere is no code."
    ex = extract_code(text)
    assert ex.code is None
    assert ex.reason == "no fenced python code block after </think>"


def test_truncated_final_block_is_reported_as_truncated():
    ex = extract_code("plan\n</think>\n```python\nimport torch\nclass ModelNew(")
    assert ex.code is None
    assert "truncated" in ex.reason


def test_tilde_fences_and_untagged_blocks_count_as_python():
    assert extract_code("</think>\n~~~\nx = 1\n~~~\n").code == "x = 1\n"
    assert extract_code("</think>\n```py\ny = 2\n```").code == "y = 2\n"


@pytest.mark.parametrize("text", ["", "  \n\t\n"])
def test_an_empty_completion_says_so(text):
    assert extract_code(text) == Extraction(None, "empty completion")
