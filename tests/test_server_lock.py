"""The writer lock in Chroma server mode: a lease on the server keeps out writers on other machines.

"Machines" are Index objects opened on different local folders against one real `chroma run` on
127.0.0.1 (the file lock in each folder cannot see the other). A writer killed with SIGKILL is a
real subprocess. Every test uses its own collection name, so nothing here touches test_server.py's
collections; lease ttls are a second or two so the expiry paths run in a few seconds.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.server

TTL = 1.5

CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from vectorstore.store.lease import WriterLease
    from vectorstore.store.client import make_client

    client = make_client(Path(sys.argv[2]), host=sys.argv[3], port=int(sys.argv[4]))
    WriterLease(client, sys.argv[5], ttl=float(sys.argv[6])).acquire()
    print("HELD", flush=True)
    time.sleep(600)
""")


@pytest.fixture
def name() -> str:
    return f"lock_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def machine(chroma_server, encoder, tmp_path, name):
    """``machine(folder, create=True)``: an Index on the server, cached in its own local folder."""
    from vectorstore.index import open_index

    host, port = chroma_server

    def open_on(folder: str, create: bool = True):
        return open_index(tmp_path / folder, encoder, collection=name, create=create, host=host, port=port)

    return open_on


@pytest.fixture
def client(chroma_server, tmp_path):
    from vectorstore.store import make_client

    host, port = chroma_server
    return make_client(tmp_path, host=host, port=port)


def _holder(client, name):
    from vectorstore.store import WriterLease

    return WriterLease(client, name).holder()


def test_second_machine_is_refused_while_the_first_writes(machine, name):
    from filelock import FileLock

    from vectorstore.index import IndexInUseError

    a, b = machine("machine-a"), machine("machine-b")
    assert a.remote and b.remote
    held = a.writer_lock()
    try:
        with pytest.raises(IndexInUseError) as err:
            b.writer_lock()
        msg = str(err.value)
        assert msg.startswith("index in use") and f"{socket.gethostname()} (pid {os.getpid()})" in msg
        assert "s from now" in msg and f"{name}_*" in msg
        local = FileLock(str(b.directory / "ingest.lock"))  # b gave its file lock back when the lease failed
        local.acquire(timeout=0)
        local.release()
    finally:
        held.release()
    assert _holder(a.store.client, name) is None
    second = b.writer_lock()
    assert _holder(b.store.client, name).owner == second.lease.owner
    second.release()
    second.release()  # idempotent, as ingest's finally may meet an already released lock
    assert _holder(b.store.client, name) is None


def _wait_for_line(proc: subprocess.Popen, expected: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    poller = select.poll()  # not select(): the whole suite's process may hold descriptors past 1024
    poller.register(proc.stdout, select.POLLIN)
    while time.monotonic() < deadline:
        if poller.poll(200):
            line = proc.stdout.readline()
            if line.strip() == expected:
                return
            if not line:
                break
    proc.kill()
    raise AssertionError(f"child never printed {expected}: {proc.stderr.read()[-2000:]}")


def test_a_sigkilled_writers_lease_expires_and_is_taken_over(chroma_server, machine, name, tmp_path):
    from vectorstore.index import IndexInUseError

    host, port = chroma_server
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(ROOT), str(tmp_path / "dead"), host, str(port), name,
                             str(TTL)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_line(proc, "HELD")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
    b = machine("machine-b")
    with pytest.raises(IndexInUseError, match=f"pid {proc.pid}"):
        b.writer_lock()  # nobody released it: the record is still there, unexpired
    dead = _holder(b.store.client, name)
    assert dead.pid == proc.pid and dead.expires > time.time()
    time.sleep(max(0.0, dead.expires - time.time()) + 0.1)
    lock = b.writer_lock()
    try:
        now = _holder(b.store.client, name)
        assert (now.pid, now.owner) == (os.getpid(), lock.lease.owner)
    finally:
        lock.release()


def test_the_heartbeat_keeps_a_held_lease_alive_past_its_ttl(client, name):
    from vectorstore.index import IndexInUseError
    from vectorstore.store import WriterLease

    lease = WriterLease(client, name, ttl=1.0).acquire()
    try:
        first = lease.holder()
        time.sleep(2.5)
        with pytest.raises(IndexInUseError, match="index in use"):
            WriterLease(client, name, ttl=1.0).acquire()
        now = lease.holder()
        assert now.owner == lease.owner and now.acquired == first.acquired
        assert now.expires > first.expires + 1.0 and now.expires > time.time() and not lease.lost
    finally:
        lease.release()
    assert lease.holder() is None


def test_a_frozen_writer_loses_its_lease_and_its_release_leaves_the_new_holder_alone(client, name):
    from vectorstore.store import WriterLease

    class Frozen(WriterLease):
        """Holds the lease but never renews it, like a process stopped mid-ingest."""

        def _heartbeat(self) -> None:
            pass

    stale = Frozen(client, name, ttl=1.0).acquire()
    time.sleep(max(0.0, stale.holder().expires - time.time()) + 0.1)
    fresh = WriterLease(client, name, ttl=TTL).acquire()
    try:
        assert stale.renew() is False and stale.lost  # it wakes up and finds the lease taken over
        stale.release()
        assert stale.holder().owner == fresh.owner
    finally:
        fresh.release()
    assert fresh.holder() is None


def test_two_writers_racing_for_a_free_lease_exactly_one_wins(client, name):
    from vectorstore.index import IndexInUseError
    from vectorstore.store import WriterLease

    leases = [WriterLease(client, name, ttl=5.0) for _ in range(2)]
    start = threading.Barrier(2)
    outcome: list[object] = [None, None]

    def race(i: int) -> None:
        start.wait()
        try:
            leases[i].acquire()
            outcome[i] = "held"
        except IndexInUseError as exc:
            outcome[i] = exc

    threads = [threading.Thread(target=race, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    try:
        assert outcome.count("held") == 1, outcome
        loser = outcome[1 - outcome.index("held")]
        assert isinstance(loser, IndexInUseError) and "index in use" in str(loser)
        assert leases[0].holder().owner == leases[outcome.index("held")].owner
    finally:
        for lease in leases:
            lease.release()


def test_readers_keep_working_while_another_machine_holds_the_lease(machine, encoder, tmp_path):
    from vectorstore.index import IndexInUseError
    from vectorstore.ingest import ingest

    src = tmp_path / "tiny.txt"
    src.write_text("ICML 2026\n\n"
                   "We introduce Zorblax, a quokka-inspired optimizer for sparse transformers.\n\n"
                   "A survey of lighthouse keeping as a model for distributed consensus.\n")
    a = machine("machine-a")
    assert ingest([src], a).added == 2
    b = machine("machine-b", create=False)
    held = a.writer_lock()
    try:
        papers, chunks = b.store.counts()
        assert papers == 2 and chunks >= 2
        hits = b.store.query(encoder.encode_one("an optimizer inspired by quokkas"), 2)
        assert hits[0].paper_id == "tiny#1"
        lex = b.lexical()
        assert lex.paper_ids[lex.search("lighthouse consensus", 1)[0][0]] == "tiny#2"
        with pytest.raises(IndexInUseError, match="index in use"):
            ingest([src], b)
    finally:
        held.release()
    report = ingest([src], b)
    assert (report.added, report.unchanged) == (0, 2)
