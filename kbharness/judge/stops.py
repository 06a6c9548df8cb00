"""Whether anything stopped the judge during an evaluation. Where the kernel has no Landlock
signal scope, the runner's pid filter lets through a thread the judge starts after it (its
CUDA threads), and ``kill`` on a thread's id stops the whole judge: a judge paused while it
times the reference makes the candidate look faster. A stop cannot be refused or hidden from
the stopped process, though: it resumes only by SIGCONT, which runs its handler."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


class Stops:
    """SIGCONTs received while watched: each is a stop ended (or a SIGCONT sent for show)."""

    def __init__(self) -> None:
        self.count = 0

    def seen(self, *_: object) -> None:
        self.count += 1


@contextmanager
def watched() -> Iterator[Stops]:
    """Count SIGCONTs for the duration; off the main thread, where Python takes no handler, nothing."""
    stops = Stops()
    if threading.current_thread() is not threading.main_thread():
        yield stops
        return
    previous = signal.signal(signal.SIGCONT, stops.seen)
    try:
        yield stops
    finally:
        signal.signal(signal.SIGCONT, previous)
