"""The CPU pool (verification/worker/cpu.py): parsing and ranking run in other processes, a dead
process is replaced, and the results are the pipeline's own."""

import contextlib
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.processes import READY_WITHIN_S, wait_until
from verification.pipeline import passages
from verification.pipeline.types import FetchedDocument
from verification.worker import cpu, cpu_child, cpu_turns

ARTICLE = (
    "<html><head><title>Bees | Nature site</title><script>var tracking = 1;</script></head><body>"
    "<nav><a href='/'>Home</a> <a href='/about'>About</a></nav><article><h1>Bees</h1>"
    "<p>Honey bees communicate the location of flowers with a waggle dance. The dance encodes "
    "direction and distance. Colonies can hold tens of thousands of workers.</p>"
    "<p>Queens lay up to two thousand eggs a day in summer. Drones do not sting.</p></article>"
    "<footer>© Nature site</footer></body></html>"
)


@pytest.fixture(autouse=True)
def fresh_pool(settings):
    settings.CPU_PROCESSES = 2
    yield
    cpu._stopped.clear()  # this test process goes on after a test of `stop`
    for pool in (cpu._pool, cpu._overflow):
        if pool is not None:
            cpu._discard(pool)


def _die_once(marker: str) -> int:
    path = Path(marker)
    if not path.exists():
        path.write_text("died")
        os._exit(1)
    return os.getpid()


def _spin(seconds: float) -> str:
    """Python code that runs for `seconds` (it can be interrupted at any bytecode)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass
    return "done"


def _stuck(seconds: float) -> None:
    """Like code inside C that does not come back: the time limit's signal is not delivered."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(seconds)


def _nap(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _held(folder: str, label: str) -> str:
    """A call that holds its process until the test lets it go (a file `label` in `folder`),
    writing its label into `folder`/started first: the order in which calls got a process."""
    with open(Path(folder) / "started", "a") as started:
        started.write(label + "\n")
    while not (Path(folder) / label).exists():
        time.sleep(0.01)
    return label


def _started(folder: Path) -> list[str]:
    path = folder / "started"
    return path.read_text().split() if path.exists() else []


def _let_go(folder: Path, *labels: str) -> None:
    for label in labels:
        (folder / label).touch()


def test_a_call_past_its_time_limit_fails_and_its_process_goes_on():
    pool = cpu._get_pool()
    with pytest.raises(cpu.TookTooLong) as error:  # not "done", as after spinning its 60 s
        cpu.run(_spin, 60, time_limit=0.5)

    assert str(error.value) == "over 0.5 s"
    assert cpu.run(_spin, 0, time_limit=5) == "done"
    assert cpu._pool is pool  # stopped by itself: no process was ended


def test_a_call_stuck_in_c_past_its_limit_ends_its_pool_and_the_others_calls_go_on(monkeypatch):
    monkeypatch.setattr(cpu, "HARD_LIMIT_MARGIN_S", 1.0)
    pool = cpu._get_pool()
    cpu.run(_nap, 0)  # the pool's processes are up
    with ThreadPoolExecutor(1) as other:
        napping = other.submit(cpu.run, _nap, 3)  # another run's call, in the other process
        with pytest.raises(cpu.TookTooLong):
            cpu.run(_stuck, 60, time_limit=0.5)

        assert cpu._pool is not pool
        assert napping.result(timeout=60) != os.getpid()  # tried again on the new pool
    assert cpu.run(_spin, 0, time_limit=5) == "done"


def test_a_call_waiting_for_its_turn_while_its_pool_is_replaced_runs_on_the_next_one(settings, tmp_path):
    """Issue 27.6: a call that took the pool, then waited for a turn while the pool was ended
    (another call stuck past its limit ends it: shut down first, its processes ended after),
    failed with "cannot schedule new futures after shutdown" without having run."""
    settings.CPU_PROCESSES = 1
    pool = cpu._get_pool()
    cpu.run(_nap, 0)  # the pool's process is up
    labels = [f"busy{n}" for n in range(cpu._width())]
    with ThreadPoolExecutor(3) as threads:
        try:
            # Every turn taken, by calls held until the pool has been replaced.
            busy = [threads.submit(cpu.run, _held, str(tmp_path), label) for label in labels]
            wait_until(lambda: cpu._turns._running == cpu._width(), 60, "the busy calls taking every turn")
            waiting = threads.submit(cpu.run, _nap, 0)
            wait_until(lambda: cpu._turns._waiting, 60, "a call waiting for its turn")

            cpu._discard(pool)  # replaced while it waits
        finally:
            _let_go(tmp_path, *labels)

        assert waiting.result(timeout=60) != os.getpid()  # it ran, in a process of the next pool
        assert [call.result(timeout=60) for call in busy] == labels
    assert cpu._pool is not pool


def test_calls_waiting_for_a_busy_pool_are_served_earliest_place_first():
    # The pool full (a call in each process, one in its queue): calls for later sentences of a
    # run, arriving first, wait for the ones for its first sentences (a run is coloured in
    # reading order, cpu.run's `place`).
    cpu.run(_nap, 0)  # the pool's processes are up
    finished = []

    def call(place: int, seconds: float) -> None:
        cpu.run(_nap, seconds, place=place)
        finished.append(place)

    with ThreadPoolExecutor(8) as threads:
        busy = [threads.submit(call, 0, 1.0) for _ in range(cpu._width())]
        time.sleep(0.3)  # all in the pool
        waiting = []
        for place in (6, 4, 2, 1):
            waiting.append(threads.submit(call, place, 0.2))
            time.sleep(0.02)
        for future in [*busy, *waiting]:
            future.result(timeout=60)

    assert [place for place in finished if place] == [1, 2, 4, 6]


def test_a_call_later_in_its_run_waits_at_most_place_delay_per_place_for_newer_ones(monkeypatch):
    # Not starved: a call's place counts as PLACE_DELAY_S seconds of lateness, no more.
    monkeypatch.setattr(cpu, "PLACE_DELAY_S", 0.1)
    cpu.run(_nap, 0)
    finished = []

    def call(label: str, place: int, seconds: float) -> None:
        cpu.run(_nap, seconds, place=place)
        finished.append(label)

    with ThreadPoolExecutor(8) as threads:
        busy = [threads.submit(call, "busy", 0, 1.0) for _ in range(cpu._width())]
        time.sleep(0.3)
        late = threads.submit(call, "late", 3, 0.2)  # counts as arriving 0.3 s later
        time.sleep(0.5)
        newer = [threads.submit(call, "newer", 0, 0.2) for _ in range(2)]
        for future in [*busy, late, *newer]:
            future.result(timeout=60)

    assert finished.index("late") < finished.index("newer")


def test_a_run_holding_its_share_lets_another_runs_call_take_the_next_process(tmp_path, monkeypatch):
    """Issue 27.6: one run's calls (hostile documents, each up to the time limit) held every
    process while another run's waited. With two runs each gets half the pool; a call of a run
    holding its half waits while the other run's call goes."""
    monkeypatch.setattr(cpu_turns, "OVERFLOW_AFTER_S", 600.0)  # the share alone, without the overflow process
    cpu.run(_nap, 0)  # the pool's processes are up
    labels = [f"A{n}" for n in range(4)]
    with ThreadPoolExecutor(5) as threads:
        try:
            for n, label in enumerate(labels):  # one after the other: in this order
                threads.submit(cpu.run, _held, str(tmp_path), label, for_run="A")
                wait_until(lambda n=n: cpu._turns._running + len(cpu._turns._waiting) == n + 1, 60, "A's calls")
            # A0 and A1 in the processes, A2 in the pool's queue, A3 waiting for a turn.
            wait_until(lambda: len(_started(tmp_path)) == 2, READY_WITHIN_S, lambda: _started(tmp_path))
            _let_go(tmp_path, "B")  # B's call ends as soon as it starts
            b = threads.submit(cpu.run, _held, str(tmp_path), "B", for_run="B")
            wait_until(lambda: len(cpu._turns._waiting) == 2, 60, "B's call waiting")

            _let_go(tmp_path, "A0")
            wait_until(lambda: len(_started(tmp_path)) == 3, 60, lambda: _started(tmp_path))  # A2, from the queue
            _let_go(tmp_path, "A1")
            wait_until(lambda: len(_started(tmp_path)) >= 4, 60, lambda: _started(tmp_path))

            assert _started(tmp_path)[2:4] == ["A2", "B"]  # not A3: A held its half (A2)
            assert b.result(timeout=60) == "B"
        finally:
            _let_go(tmp_path, *labels)


def test_a_process_another_run_frees_goes_to_its_next_call_not_to_a_run_holding_its_share(tmp_path):
    # B's call holds a process, A's the other, and A's second call comes while B has none
    # waiting: let into the pool's queue, it would take the process B frees next (two hostile
    # documents that way held both processes for the time limit).
    cpu.run(_nap, 0)
    labels = ["B0", "A0", "A1", "B1"]
    with ThreadPoolExecutor(4) as threads:
        try:
            for n, (label, run) in enumerate((label, label[0]) for label in labels):  # one after the other
                threads.submit(cpu.run, _held, str(tmp_path), label, for_run=run)
                wait_until(lambda n=n: cpu._turns._running + len(cpu._turns._waiting) == n + 1, 60, "the calls")
                if n < 2:
                    wait_until(lambda n=n: len(_started(tmp_path)) == n + 1, READY_WITHIN_S, lambda: _started(tmp_path))
            _let_go(tmp_path, "B1")  # B1 ends as soon as it starts

            _let_go(tmp_path, "B0")
            wait_until(lambda: len(_started(tmp_path)) >= 3, 60, lambda: _started(tmp_path))

            assert _started(tmp_path)[2] == "B1"
        finally:
            _let_go(tmp_path, *labels)


def test_a_run_alone_takes_every_process(tmp_path):
    # No share while no other run waits: on 2 cores a cap of half the pool would halve its speed.
    cpu.run(_nap, 0)
    with ThreadPoolExecutor(2) as threads:
        try:
            calls = [threads.submit(cpu.run, _held, str(tmp_path), f"A{n}", for_run="A") for n in range(2)]

            wait_until(lambda: len(_started(tmp_path)) == 2, READY_WITHIN_S, lambda: _started(tmp_path))
        finally:
            _let_go(tmp_path, "A0", "A1")
        assert sorted(call.result(timeout=60) for call in calls) == ["A0", "A1"]


def _hold_every_process(threads: ThreadPoolExecutor, folder: Path, run: str) -> list:
    """Calls of `run` in each of the pool's processes and in its queue, held until let go."""
    calls = []
    for n in range(cpu._width()):  # one after the other: in this order
        calls.append(threads.submit(cpu.run, _held, str(folder), f"{run}{n}", for_run=run))
        wait_until(lambda n=n: cpu._turns._running == n + 1, 60, "the calls in the pool")
    wait_until(lambda: len(_started(folder)) == cpu._width() - 1, READY_WITHIN_S, lambda: _started(folder))
    return calls


def _pid_held(folder: str, label: str) -> int:
    _held(folder, label)
    return os.getpid()


def test_a_run_whose_call_waits_behind_another_runs_calls_gets_the_overflow_process(tmp_path):
    """Issue 27.6: a run's calls already in every process (two hostile uploads, 30 s each)
    kept a run that came after them waiting that long: the share cannot take a process back."""
    cpu.run(_nap, 0)  # the pool's processes are up
    with ThreadPoolExecutor(4) as threads:
        try:
            a = _hold_every_process(threads, tmp_path, "A")
            _let_go(tmp_path, "B")  # B's call ends as soon as it starts

            b = threads.submit(cpu.run, _pid_held, str(tmp_path), "B", for_run="B")

            wait_until(lambda: "B" in _started(tmp_path), READY_WITHIN_S, lambda: _started(tmp_path))
            assert b.result(timeout=60) == next(iter(cpu._overflow._processes))
            assert _started(tmp_path) == ["A0", "A1", "B"] and not any(call.done() for call in a)
        finally:
            _let_go(tmp_path, "A0", "A1", "A2")
        assert [call.result(timeout=60) for call in a] == ["A0", "A1", "A2"]


def test_a_run_alone_never_starts_the_overflow_process(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_turns, "OVERFLOW_AFTER_S", 0.1)
    cpu.run(_nap, 0)
    overflow_calls = cpu._turns.overflow_calls
    with ThreadPoolExecutor(4) as threads:
        try:
            a = _hold_every_process(threads, tmp_path, "A")
            a.append(threads.submit(cpu.run, _held, str(tmp_path), "A3", for_run="A"))
            wait_until(lambda: cpu._turns._waiting or cpu._overflow, 60, "A3 waiting for a turn")
            time.sleep(1.0)  # ten times what another run's call would wait for the overflow process

            # Two of A0..A2 in the pool's processes (which of the queued two a freshly loaded
            # process takes is the pool's business), A3 still waiting: no overflow process.
            started = _started(tmp_path)
            assert len(started) == 2 and "A3" not in started and cpu._overflow is None, started
        finally:
            _let_go(tmp_path, "A0", "A1", "A2", "A3")
        assert [call.result(timeout=60) for call in a] == ["A0", "A1", "A2", "A3"]
    assert cpu._overflow is None and cpu._turns.overflow_calls == overflow_calls


def test_stop_ends_the_overflow_process_and_its_call_raises_stopping(tmp_path):
    cpu.run(_nap, 0)
    with ThreadPoolExecutor(4) as threads:
        try:
            a = _hold_every_process(threads, tmp_path, "A")
            b = threads.submit(cpu.run, _held, str(tmp_path), "B", for_run="B")
            wait_until(lambda: "B" in _started(tmp_path), READY_WITHIN_S, lambda: _started(tmp_path))
            (pid,) = cpu._overflow._processes

            cpu.stop()

            for call in [*a, b]:
                with pytest.raises(cpu.Stopping):
                    call.result(timeout=60)
        finally:
            _let_go(tmp_path, "A0", "A1", "A2", "B")
    assert not _running(pid) and cpu._overflow is None


def test_the_overflow_process_ends_once_it_has_been_idle_for_a_while(tmp_path, monkeypatch):
    # It holds its imports and maybe the embedding model (~300 MB): not kept on a laptop.
    monkeypatch.setattr(cpu, "OVERFLOW_IDLE_S", 0.5)
    cpu.run(_nap, 0)
    with ThreadPoolExecutor(4) as threads:
        try:
            _hold_every_process(threads, tmp_path, "A")
            _let_go(tmp_path, "B")
            pid = threads.submit(cpu.run, _pid_held, str(tmp_path), "B", for_run="B").result(timeout=READY_WITHIN_S)

            wait_until(lambda: not _running(pid), 60, "the overflow process ending")
        finally:
            _let_go(tmp_path, "A0", "A1", "A2")
    assert cpu._overflow is None


def test_calls_cut_short_by_stop_raise_stopping_and_start_no_new_pool(settings, tmp_path):
    # A process that is stopping: a call in a process, one in the pool's queue and one waiting
    # for a turn end with Stopping (its task then leaves its item unfinished, for the run's
    # resume, instead of failing it), and none starts a new pool meanwhile.
    settings.CPU_PROCESSES = 1
    cpu.run(_nap, 0)
    with ThreadPoolExecutor(3) as threads:
        try:
            calls = [threads.submit(cpu.run, _held, str(tmp_path), f"A{n}") for n in range(3)]
            wait_until(lambda: _started(tmp_path) and cpu._turns._waiting, READY_WITHIN_S, "a call in the process")

            cpu.stop()

            for call in calls:
                with pytest.raises(cpu.Stopping):
                    call.result(timeout=60)
        finally:
            _let_go(tmp_path, "A0", "A1", "A2")
    assert cpu._pool is None and len(_started(tmp_path)) == 1  # none ran again on a new pool
    with pytest.raises(cpu.Stopping):
        cpu.run(_nap, 0)


def test_stop_ends_the_pools_processes_before_it_returns():
    # An idle pool too: its processes must not be left to exit after their parent is gone.
    cpu.run(_nap, 0)
    pids = list(cpu._pool._processes)

    cpu.stop()

    assert len(pids) == 2 and not any(_running(pid) for pid in pids)


def _running(pid: int) -> bool:
    """Whether the process still runs, as the kernel sees it (an ended one may wait to be reaped;
    Process.is_alive() can say True for one another thread reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _held_loading(folder: str, label: str) -> tuple[tuple[float, float] | None, int]:
    """`_held`, then when this process loaded (cpu_child.loading) and its id."""
    _held(folder, label)
    return cpu_child.loading, os.getpid()


def test_the_pools_processes_load_a_few_at_a_time_and_the_first_loaded_takes_calls(monkeypatch, tmp_path):
    # One process loads at a time: the first takes calls while the second still loads, instead
    # of both sharing the cores and being ready together.
    monkeypatch.setattr(cpu, "_loading_at_once", lambda: 1)
    _let_go(tmp_path, "second")  # the second call ends as soon as it starts
    with ThreadPoolExecutor(2) as threads:
        try:
            first = threads.submit(cpu.run, _held_loading, str(tmp_path), "first")  # holds the first process
            wait_until(lambda: _started(tmp_path) == ["first"], READY_WITHIN_S, lambda: _started(tmp_path))
            second = threads.submit(cpu.run, _held_loading, str(tmp_path), "second")
            # The first is let go only after this: the second call cannot wait for its process.
            wait_until(second.done, READY_WITHIN_S, "the second call, while the first holds its process")
        finally:
            _let_go(tmp_path, "first")
        ((_, first_end), first_pid), ((second_start, _), second_pid) = first.result(timeout=60), second.result()

    assert first_end <= second_start  # the second began loading when the first had loaded
    assert second_pid != first_pid  # and took the second call while the first was held


def test_work_runs_in_another_process():
    assert cpu.run(os.getpid) != os.getpid()


def test_without_processes_it_runs_here(settings):
    settings.CPU_PROCESSES = 0

    assert cpu.run(os.getpid) == os.getpid()


def test_a_process_that_dies_is_replaced_and_the_call_tried_again(tmp_path):
    pid = cpu.run(_die_once, str(tmp_path / "marker"))

    assert pid != os.getpid()
    assert cpu.run(os.getpid) != os.getpid()


def test_a_page_is_parsed_and_split_in_the_pool():
    document = FetchedDocument(
        url="https://a.example/bees",
        final_url="https://a.example/bees",
        content_type="text/html",
        charset="utf-8",
        body=ARTICLE.encode(),
    )

    page = cpu.run(cpu.read_page, document)

    assert page.title.startswith("Bees")
    assert "Honey bees communicate the location of flowers with a waggle dance." in page.sentences
    assert not any("tracking" in sentence for sentence in page.sentences)


def test_excerpts_for_several_claims_match_choosing_them_one_by_one():
    sentences = passages.page_sentences(
        "Honey bees dance to show where flowers are.\nQueens lay two thousand eggs a day.\n"
        "Drones do not sting.\nThe hive is kept at 35 degrees."
    )
    claims = ["Queens lay two thousand eggs a day", "Bees dance to show flowers", "Whales sing"]

    excerpts = cpu.run(cpu.choose_excerpts, claims, sentences, top_k=1, context=0, embedding_model=None)

    expected = [
        passages.page_excerpt(passages.select_passages(claim, sentences, top_k=1, context=0)) for claim in claims
    ]
    assert excerpts == expected
    assert excerpts[0].text == "Queens lay two thousand eggs a day." and excerpts[2] is None


# --- Ctrl-C


def sigint_in(mask: str, pid: int) -> bool:
    """From /proc: SIGINT's bit in one of the process's signal masks (SigIgn: ignored, SigBlk:
    blocked, in its main thread)."""
    bits = int(Path(f"/proc/{pid}/status").read_text().split(f"{mask}:")[1].split()[0], 16)
    return bool(bits & 1 << (signal.SIGINT - 1))


def sigint_ignored(pid: int) -> bool:
    return sigint_in("SigIgn", pid)


def pool_processes(pid: int) -> list[int]:
    """The CPU pool's processes below `pid` (not multiprocessing's resource tracker)."""
    from tests.test_lifecycle import process_tree

    def command(child: int) -> bytes:
        with contextlib.suppress(OSError):
            return Path(f"/proc/{child}/cmdline").read_bytes()
        return b""

    return [child for child in process_tree(pid) if b"spawn_main" in command(child)]


def test_a_ctrl_c_to_the_process_group_leaves_the_pools_processes_to_their_parent():
    # A terminal's Ctrl-C reaches every process of its group. The pool's processes must neither
    # die of it (each printed a KeyboardInterrupt traceback) nor break the pool: their parent
    # decides, and ends them when it stops (lifecycle.stopping).
    pool = cpu._get_pool()
    cpu.run(_nap, 0)
    pids = list(pool._processes)

    for pid in pids:
        os.kill(pid, signal.SIGINT)
    time.sleep(1.0)  # time for a signal to land; the assertions hold however long it takes

    assert [pid for pid in pids if _running(pid) and sigint_ignored(pid)] == pids
    assert cpu.run(_nap, 0) in pids and cpu._pool is pool


def test_ctrl_c_to_verify_with_a_cpu_pool_prints_no_traceback(world, processes, tmp_path):
    # As a person's Ctrl-C: SIGINT to the whole process group, the CLI's pool process included,
    # while a run is in flight (its LLM calls held). Imported here: the pool's processes import
    # this module for its functions, without Django.
    from tests.test_lifecycle import HELD, TEXT, cli, pool_started

    world.llm.held_words = (HELD,)
    text = tmp_path / "answer.txt"
    text.write_text(TEXT)
    verify = cli(processes, "verify", text, CPU_PROCESSES="1")
    wait_until(lambda: world.llm.held >= 1 and pool_started(verify.pid, 1), READY_WITHIN_S, processes.tail)
    # Whether a pool process would print a traceback races with its parent ending it: what
    # decides it is that the signal cannot reach it (blocked from its start, then ignored).
    (pool_process,) = pool_processes(verify.pid)
    assert sigint_ignored(pool_process) or sigint_in("SigBlk", pool_process)

    os.killpg(verify.pid, signal.SIGINT)

    assert verify.wait(60) == 130, processes.tail()
    output = processes.log("verify")
    assert "interrupted: the run is left unfinished" in output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
