"""Finding the code in a raw LLM completion.

The answer is the last fenced python block of the final answer, i.e. after the last
``</think>`` when the model reasoned. Code blocks inside the reasoning are drafts, so a
completion cut off before its final answer has *no* code, even if the drafts look good.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

THINK_END = "</think>"
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*$", re.MULTILINE)
_PYTHON_TAGS = {"python", "py", "python3", ""}


@dataclass(frozen=True)
class Extraction:
    """The extracted source, or ``None`` with the reason a person should read."""

    code: str | None
    reason: str = ""


def _blocks(text: str) -> tuple[list[tuple[str, str]], bool]:
    """Closed fenced blocks as (language tag, body), and whether a fence was left open."""
    blocks: list[tuple[str, str]] = []
    fences = list(_FENCE.finditer(text))
    i = 0
    while i < len(fences):
        opener = fences[i]
        marker, lang = opener.group(1), opener.group(2).lower()
        closer = next(
            (j for j in range(i + 1, len(fences))
             if fences[j].group(1)[0] == marker[0]
             and len(fences[j].group(1)) >= len(marker)
             and not fences[j].group(2)),
            None,
        )
        if closer is None:
            return blocks, True
        body = text[opener.end() + 1 : fences[closer].start()]
        blocks.append((lang, body))
        i = closer + 1
    return blocks, False


def extract_code(text: str) -> Extraction:
    """Return the final answer's last python block, or why there is none."""
    if not text.strip():
        return Extraction(None, "empty completion")
    reasoned = THINK_END in text
    answer = text.rsplit(THINK_END, 1)[1] if reasoned else text
    blocks, left_open = _blocks(answer)
    python = [body for lang, body in blocks if lang in _PYTHON_TAGS]
    if python:
        return Extraction(python[-1].strip("\n") + "\n")
    if left_open:
        return Extraction(None, "response ends inside its final code block (truncated); no complete code block")
    if reasoned:
        return Extraction(None, "no fenced python code block after </think>")
    return Extraction(None, "response ends inside the reasoning; no final code block")
