"""The judge's stop watch: every SIGCONT while watched is counted, and the handler it
replaced comes back."""
import os
import signal
import threading

from kbharness.judge import stops


def test_a_sigcont_while_watched_is_counted_and_the_old_handler_restored():
    before = signal.getsignal(signal.SIGCONT)
    with stops.watched() as stopped:
        os.kill(os.getpid(), signal.SIGCONT)
        os.kill(os.getpid(), signal.SIGCONT)
    assert stopped.count >= 1
    assert signal.getsignal(signal.SIGCONT) == before
    with stops.watched() as quiet:
        pass
    assert quiet.count == 0


def test_off_the_main_thread_it_watches_nothing_and_does_not_fail():
    seen = []

    def watch():
        with stops.watched() as stopped:
            seen.append(stopped.count)
    thread = threading.Thread(target=watch)
    thread.start()
    thread.join()
    assert seen == [0]
