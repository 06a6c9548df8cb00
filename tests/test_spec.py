import subprocess
import sys

import torch

from kbharness.common.spec import DTYPES, PRECISIONS


def test_each_precision_has_its_torch_dtype():
    assert dict(DTYPES) == {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    assert tuple(DTYPES) == PRECISIONS


def test_the_cli_starts_without_torch():
    probe = "import sys, kbharness.cli; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"
