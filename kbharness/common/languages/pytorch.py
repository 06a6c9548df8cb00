"""A candidate in plain PyTorch: no kernel of its own, nothing to build (the custom-kernel
check flags it on the GPU)."""
import re

from kbharness.common.languages.base import Language

PYTORCH = Language(name="pytorch", label="PyTorch", markers=re.compile(r""), needs_cuda=False)
