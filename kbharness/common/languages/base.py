"""What the harness must know of a kernel language, as one frozen record a language module fills in."""
from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from typing import Callable, ContextManager


def imports(module: str) -> re.Pattern:
    """A source that imports ``module`` at the start of a line (a mention in a comment or a string does not count)."""
    return re.compile(rf"^\s*(import {module}\b|from {module}\b)", re.MULTILINE)


def decorated(*decorators: str) -> re.Pattern:
    """The name of each function defined under one of ``decorators`` (regular expressions),
    other decorators between them allowed."""
    return re.compile(rf"@(?:{'|'.join(decorators)})\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)")


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__


@dataclass(frozen=True)
class Language:
    """A kernel language. ``markers`` recognise it in a candidate's source; ``packages`` are
    (import name, pip requirement) pairs it cannot run without; ``lazy`` languages compile a
    kernel at its first call, so the harness makes that call in the build phase, under the
    build's time limit; exceptions of a type defined under one of ``error_modules`` are the
    language's compile errors, told by ``describe``; ``kernel_defs`` captures the names of the
    kernels a source defines, which the custom-kernel check looks for among those launched;
    ``compile_only`` is a context in which calling a candidate compiles its kernels without
    launching them, so a build worker can compile them beside a GPU that is timing;
    ``launched_as`` is how a defined kernel's name reads in the profiler (a regular expression
    around ``{name}``: TileLang appends ``_kernel``, CuTe DSL wraps it in a mangled name)."""

    name: str
    label: str
    markers: re.Pattern
    needs_cuda: bool
    kernel_defs: re.Pattern | None = None
    packages: tuple[tuple[str, str], ...] = ()
    extra: str = ""
    lazy: bool = False
    error_modules: tuple[str, ...] = ()
    describe: Callable[[BaseException], str] = first_line
    compile_only: Callable[[], ContextManager] | None = None
    launched_as: str = "{name}"

    def matches(self, code: str) -> bool:
        return bool(self.markers.search(code))

    def missing(self) -> list[str]:
        """Pip requirements of this language that are not installed."""
        return [pip for module, pip in self.packages if importlib.util.find_spec(module) is None]

    def needs(self) -> str:
        """What the verdict "needs package" says, or "" when everything is installed."""
        missing = self.missing()
        if not missing:
            return ""
        return f"needs {', '.join(missing)}: a {self.label} candidate" + (f"; pip install '.[{self.extra}]'" if self.extra else "")

    def owns_error(self, e: BaseException) -> bool:
        module = type(e).__module__ or ""
        return any(module == m or module.startswith(m + ".") for m in self.error_modules)

    def kernels(self, code: str) -> set[str]:
        return set(self.kernel_defs.findall(code)) if self.kernel_defs is not None else set()

    def launches(self, code: str) -> list[re.Pattern]:
        """What the kernels ``code`` defines are called when launched."""
        return [re.compile(self.launched_as.format(name=re.escape(n))) for n in sorted(self.kernels(code))]
