"""Who of the calls waiting for the CPU pool (cpu.py) goes in next, and when one goes to the
overflow process instead: the pool's scheduler, apart from the pool itself."""

import itertools
import threading
import time
from collections import Counter
from collections.abc import Hashable, Iterator
from contextlib import contextmanager

# How long the pool's processes must have been held by other runs' calls before a run that
# holds none of them gets the overflow process (cpu.py).
OVERFLOW_AFTER_S = 1.0


class Turns:
    """Who goes into the pool next: at most `width` calls are in it at once (see `cpu._width`); the
    others wait here, lowest key first, with exceptions. While several runs use the pool or
    wait for it, a run holding its share of the processes (processes / runs) gets a further call
    in only when a process would otherwise sit idle: the pool's queue place is the next process
    to free, and it goes to a run below its share.

    The share is against one run's long calls taking every process while another run's calls
    wait: hostile documents may each hold a process for the whole time limit (30 s; issue 27).
    A fixed cap per run would halve a lone run's speed on 2 cores; a share of the runs present
    costs a lone run nothing. It cannot take back a process already given, though: a run that
    was alone keeps what it took until those calls end (two hostile uploads started before
    another run's calls still hold both processes of a 2-core pool). So a run that holds no
    call in the pool while other runs' calls hold every process does not take the queue place
    (it could wait there for the whole time limit): it waits for a free process, or, once the
    pool has let no call in for OVERFLOW_AFTER_S, gets the overflow process, one call at a time.
    A run alone never does. The pool's own queue is first come, first served."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._waiting: list[tuple[float, int, Hashable]] = []  # (key, ticket, run)
        self._tickets = itertools.count()
        self._holding: Counter[Hashable] = Counter()  # calls in the pool, by run
        self._running = 0  # calls in the pool
        self._let_in = 0.0  # when the pool let its newest call in (time.monotonic())
        self._overflowing = False  # a call is in the overflow process
        self.overflow_calls = 0  # calls given the overflow process so far

    @contextmanager
    def turn(self, key: float, *, run: Hashable, width: int) -> Iterator[bool]:
        """Waits for the call's turn; yields whether it is in the overflow process's."""
        mine = (key, next(self._tickets), run)
        with self._changed:
            self._waiting.append(mine)
            try:
                while True:
                    if self._next(width) == mine:
                        overflow = False
                        break
                    if self._next_to_overflow(width) == mine:
                        overflow = True
                        break
                    # Woken by any change, and once the pool's calls have held it long enough
                    # for the overflow process (nothing else may change meanwhile).
                    self._changed.wait(self._overflow_opens_in() or None)
            finally:  # let in, or interrupted while waiting: the others must not wait for it
                self._waiting.remove(mine)
                self._changed.notify_all()  # the next in line may fit too
            if overflow:
                self._overflowing = True
                self.overflow_calls += 1
            else:
                self._holding[run] += 1
                self._running += 1
                self._let_in = time.monotonic()
        try:
            yield overflow
        finally:
            with self._changed:
                if overflow:
                    self._overflowing = False
                else:
                    self._holding[run] -= 1
                    if not self._holding[run]:
                        del self._holding[run]
                    self._running -= 1
                self._changed.notify_all()

    def _next(self, width: int) -> tuple[float, int, Hashable] | None:
        """The waiting call to let into the pool now, if any."""
        if self._running >= width or not self._waiting:
            return None
        processes = width - 1  # the last place is in the pool's queue (see `cpu._width`)
        runs = {run for _, _, run in self._waiting} | self._holding.keys()
        share = processes / len(runs)

        def fits(run: Hashable) -> bool:
            if len(runs) == 1:
                return True
            if not self._holding[run]:  # not behind other runs' calls in the pool's queue
                return self._running < processes
            return self._holding[run] < share

        below = [call for call in self._waiting if fits(call[2])]
        if below:
            return min(below)
        # Every waiting run holds its share: a process may still take one (better used than
        # idle), but not the queue's place, which would take the next process another run frees.
        return min(self._waiting) if self._running < processes else None

    def _next_to_overflow(self, width: int) -> tuple[float, int, Hashable] | None:
        """The waiting call to send to the overflow process now, if any: the first of a run that
        holds no call in the pool, while other runs' calls hold every process and the newest of
        them went in OVERFLOW_AFTER_S ago. Most calls take less (a page is read in well under a
        second), so until then a process is likely to free; calls that have run that long are
        likely long ones (a hostile document runs to the time limit). Counted from the pool's
        newest call, not from this call's arrival: the run's later calls take the overflow
        process as soon as it is free, instead of each waiting that long again."""
        if self._overflowing or self._running < width - 1 or self._overflow_opens_in():
            return None
        return min((call for call in self._waiting if not self._holding[call[2]]), default=None)

    def _overflow_opens_in(self) -> float:
        """Seconds until the pool's calls have been in it for OVERFLOW_AFTER_S (0 once they have)."""
        return max(0.0, self._let_in + OVERFLOW_AFTER_S - time.monotonic())
