# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A deadline for one step of a test: a step that blocks (a FIFO opened for reading, a server
waiting on one) fails the test instead of hanging the run, and the CI with it."""

from __future__ import annotations

import signal
from contextlib import contextmanager


class Hung(AssertionError):
    """Raised in the main thread when a step outlives its deadline."""


@contextmanager
def no_hang(seconds: int = 10, what: str = "something opened a FIFO for reading"):
    """SIGALRM after `seconds`: it interrupts a blocking system call or lock wait of the main
    thread (pytest and its xdist workers run tests there)."""
    def hung(_signum, _frame):
        raise Hung("blocked for %ds: %s" % (seconds, what))

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
