"""How many requests factsite sends a model's server at once (LLM_CONCURRENCY): a laptop's
llama.cpp server or Ollama answers one at a time, and requests sent beside it only queue there,
in arrival order. Here they wait their turn in order of priority instead, a run's first sentences
first (then arrival), so the first sentences are coloured first.

Slots are shared by the threads of a process; with Redis, by every process that uses it (several
workers in front of one server), through a queue and the holders in Redis. A process that dies
holding a slot or waiting for one frees it after a lease, never for good."""

import heapq
import itertools
import threading
import time
import uuid

# Calls off a run's critical path (a source's type) wait behind every sentence's.
BACKGROUND = 1_000_000


class LocalSlots:
    """`limit` slots for the threads of this process, given by lowest (priority, arrival)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._turns = threading.Condition()
        self._waiting: list[tuple[int, int]] = []
        self._arrivals = itertools.count()
        self._busy = 0

    def take(self, priority: int) -> tuple[int, int]:
        """Waits for a slot; the ticket to give it back with."""
        ticket = (priority, next(self._arrivals))
        with self._turns:
            heapq.heappush(self._waiting, ticket)
            try:
                self._turns.wait_for(lambda: self._waiting[0] == ticket and self._busy < self.limit)
            except BaseException:  # interrupted while waiting: out of the line, or it blocks the rest
                self._waiting.remove(ticket)
                heapq.heapify(self._waiting)
                self._turns.notify_all()
                raise
            heapq.heappop(self._waiting)
            self._busy += 1
            self._turns.notify_all()  # the next in line may fit in another free slot
        return ticket

    def waiting(self) -> int:
        with self._turns:
            return len(self._waiting)

    def give_back(self, ticket: tuple[int, int]) -> None:
        with self._turns:
            self._busy -= 1
            self._turns.notify_all()


# In one step on the server: drop expired holders and waiters that stopped asking, join the
# queue (once, at the ticket's score), and take a slot when first in line and one is free.
# KEYS: holders (ticket → lease end), queue (ticket → score), alive (ticket → last ask + grace).
# ARGV: ticket, score, limit, lease ms, grace ms. Times are the server's, one clock for all.
_TAKE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  redis.call('ZREM', KEYS[2], gone)
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[5]), ARGV[1])
local first = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if first == ARGV[1] and redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
  return 1
end
return 0
"""


class RedisSlots:
    """`limit` slots for every process that shares the Redis at `url` and the server `name`."""

    # A holder that never gave its slot back (its process died) loses it after this long: longer
    # than any answer a model writes. A waiter that stopped asking leaves the queue sooner.
    LEASE_MS = 600_000
    GRACE_MS = 5_000
    POLL_S = 0.02

    def __init__(self, limit: int, url: str, name: str) -> None:
        import redis  # only where Redis is configured

        self.limit = limit
        self._redis = redis.Redis.from_url(url)
        self._keys = [f"factsite:llm-slots:{name}:{part}" for part in ("holders", "queue", "alive")]
        self._take = self._redis.register_script(_TAKE)
        self._arrival_key = f"factsite:llm-slots:{name}:arrivals"

    def take(self, priority: int) -> str:
        """Waits for a slot; the ticket to give it back with."""
        ticket = uuid.uuid4().hex
        # Priority, then arrival across processes: exact in a Redis score (a double) up to 2^53.
        score = priority * 10**9 + self._redis.incr(self._arrival_key) % 10**9
        args = [ticket, score, self.limit, self.LEASE_MS, self.GRACE_MS]
        try:
            while not self._take(keys=self._keys, args=args):
                time.sleep(self.POLL_S)
        except BaseException:
            self._redis.zrem(self._keys[1], ticket)
            raise
        return ticket

    def waiting(self) -> int:
        return self._redis.zcard(self._keys[1])

    def give_back(self, ticket: str) -> None:
        self._redis.zrem(self._keys[0], ticket)


_shared: dict[tuple, LocalSlots | RedisSlots] = {}
_lock = threading.Lock()


def slots_for(base_url: str, limit: int, redis_url: str = "") -> LocalSlots | RedisSlots | None:
    """The slots of one server (None: no limit), one object per process and setting."""
    if limit <= 0:
        return None
    key = (base_url, limit, redis_url)
    with _lock:
        if key not in _shared:
            name = base_url.rstrip("/")
            _shared[key] = RedisSlots(limit, redis_url, name) if redis_url else LocalSlots(limit)
        return _shared[key]
