"""A writer lease stored in Chroma itself, so writers on different machines exclude each other.

In server mode every machine has its own local index folder, so the file lock in that folder
(:meth:`vectorstore.index.Index.writer_lock`) only keeps out writers on the same machine. The lease
lives next to the data instead: a one-record collection ``<name>_lease`` whose record ``"writer"``
names the holder (a random owner id, host name, pid) and when the lease was taken and when it
expires (epoch seconds). The holder renews ``expires`` from a daemon heartbeat thread every
``ttl / 3`` seconds; a writer that dies without releasing (SIGKILL, power loss, lost network) stops
renewing, and once ``ttl`` has passed the next writer takes the lease over. This is the lease idea
of Gray & Cheriton, "Leases: An Efficient Fault-Tolerant Mechanism for Distributed File Cache
Consistency" (SOSP 1989): a lock that is only valid for a bounded time, so a crashed holder cannot
block everyone forever.

Best effort, not a consensus protocol. Chroma has no compare-and-swap or conditional write, so
taking the lease is read, then upsert, then read back after a short settle time: two writers that
both read "free" both write, the last write wins, and whoever reads back someone else's owner id
backs off. The read-back narrows the race window to writers whose read-to-write gap is longer than
the settle time (0.2 s by default, against a few milliseconds per request); it does not close it.
Expiry compares the holder's wall clock (``expires``) with the reader's, so the machines' clocks
must agree to well within ``ttl`` (NTP does). Release deletes the record only while it still names
us (Chroma applies ``ids`` and ``where`` of one delete together on the server).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Self

from vectorstore.store.client import StoreError

log = logging.getLogger(__name__)

LEASE_TTL = 60.0
"""Seconds a lease stays valid without renewal: how long a dead writer blocks the next one."""

SETTLE = 0.2
"""Seconds between writing our lease and reading it back to see whether another writer won."""

RECORD_ID = "writer"


class IndexInUseError(StoreError):
    """Another process (on this machine or, in server mode, on another) is writing to this index."""


@dataclass(frozen=True)
class LeaseHolder:
    """The lease record as stored: who holds it and until when (epoch seconds, the holder's clock)."""

    owner: str
    host: str
    pid: int
    acquired: float
    expires: float

    def describe(self, now: float | None = None) -> str:
        """``"host (pid N) until 12:00:00 UTC, 41 s from now"`` for error messages."""
        now = time.time() if now is None else now
        until = datetime.fromtimestamp(self.expires, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"{self.host} (pid {self.pid}) until {until}, {max(0.0, self.expires - now):.0f} s from now"


class WriterLease:
    """An exclusive, expiring writer lease on the Chroma collections ``<name>_*`` of one server.

    ``client`` is a chromadb client (in practice ``HttpClient``); ``name`` the collection prefix;
    ``ttl`` seconds of validity without renewal (renewed every ``ttl / 3`` while held); ``settle``
    seconds to wait before the read-back that detects a lost race. :meth:`acquire` raises
    IndexInUseError (another live holder, or a lost race; the message names the holder's host, pid
    and expiry) or StoreError (the server cannot be reached). :meth:`release` never raises: the
    lease would expire anyway, and it runs in ``finally`` blocks where it must not hide the error.
    ``lost`` becomes True when a renewal finds that another writer has taken the lease over (this
    holder stalled for longer than ``ttl``); the heartbeat then stops.
    """

    def __init__(self, client, name: str, ttl: float = LEASE_TTL, settle: float = SETTLE):
        if ttl <= 0 or settle < 0:
            raise ValueError(f"lease ttl must be > 0 and settle >= 0 seconds (got ttl={ttl}, settle={settle})")
        self.name = name
        self.ttl = float(ttl)
        self.settle = float(settle)
        self.owner = uuid.uuid4().hex
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.held = False
        self.lost = False
        self._stop = threading.Event()
        self._io = threading.Lock()  # a renewal and the release's delete never interleave
        self._thread: threading.Thread | None = None
        try:
            self.collection = client.get_or_create_collection(
                f"{name}_lease", embedding_function=None, metadata={"kind": "lease"})
        except Exception as exc:
            raise StoreError(f"cannot open the writer lease collection {name}_lease: {exc}") from exc

    def holder(self) -> LeaseHolder | None:
        """The current record, expired or not, or None when nobody holds the lease. Raises StoreError."""
        try:
            got = self.collection.get(ids=[RECORD_ID], include=["metadatas"])
        except Exception as exc:
            raise StoreError(f"cannot read the writer lease {self.name}_lease: {exc}") from exc
        if not got["ids"]:
            return None
        m = got["metadatas"][0] or {}
        return LeaseHolder(owner=str(m.get("owner", "")), host=str(m.get("host", "?")), pid=int(m.get("pid", -1)),
                           acquired=float(m.get("acquired", 0.0)), expires=float(m.get("expires", 0.0)))

    def _write(self, acquired: float) -> None:
        now = time.time()
        self.collection.upsert(ids=[RECORD_ID], embeddings=[[1.0]], metadatas=[{
            "owner": self.owner, "host": self.host, "pid": self.pid, "acquired": acquired, "expires": now + self.ttl,
        }])

    def _in_use(self, other: LeaseHolder, why: str) -> IndexInUseError:
        return IndexInUseError(
            f"index in use: {other.describe()} holds the writer lease on the Chroma collections "
            f"{self.name}_* ({why}); wait for that ingest to finish, or, if that writer died, for its "
            "lease to expire")

    def acquire(self) -> Self:
        """Take the lease (or raise IndexInUseError / StoreError) and start the heartbeat; returns self."""
        if self.held and not self.lost:
            return self
        current = self.holder()
        now = time.time()
        if current is not None and current.owner != self.owner and current.expires > now:
            raise self._in_use(current, "it is still valid")
        try:
            self._write(acquired=now)
        except Exception as exc:
            raise StoreError(f"cannot write the writer lease {self.name}_lease: {exc}") from exc
        # No compare-and-swap: let a concurrent writer's upsert land, then see whose survived.
        time.sleep(self.settle)
        try:
            after = self.holder()
        except StoreError:
            self._delete_if_ours()
            raise
        if after is None:  # a racing writer overwrote ours, then released, before our read-back
            raise IndexInUseError(f"index in use: another writer raced for the lease on {self.name}_*; try again")
        if after.owner != self.owner:
            raise self._in_use(after, "it won a race for the lease")
        self.held, self.lost = True, False
        self._stop.clear()
        self._thread = threading.Thread(target=self._heartbeat, name=f"lease-{self.name}", daemon=True)
        self._thread.start()
        return self

    def renew(self) -> bool:
        """Push ``expires`` to now + ttl if we still hold the lease; False (and ``lost``) if another took it.

        Raises StoreError when the server cannot be reached (the heartbeat retries next tick).
        """
        with self._io:
            if not self.held:  # released meanwhile: writing now would resurrect the deleted record
                return False
            current = self.holder()
            if current is None or current.owner != self.owner:
                self.lost = True
                log.warning("writer lease %s_lease was taken over by %s; this writer no longer holds it",
                            self.name, current.describe() if current else "nobody")
                return False
            try:
                self._write(acquired=current.acquired)
            except Exception as exc:
                raise StoreError(f"cannot renew the writer lease {self.name}_lease: {exc}") from exc
            return True

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                if not self.renew():
                    return
            except StoreError as exc:
                log.warning("%s (retrying in %.1f s)", exc, self.ttl / 3)

    def release(self) -> None:
        """Stop the heartbeat and delete the record if it still names us. Idempotent; never raises."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.ttl)
        self._thread = None
        if not self.held:
            return
        self.held = False
        with self._io:
            self._delete_if_ours()

    def _delete_if_ours(self) -> None:
        try:
            # ids + where in one delete: a lease another writer took over after ours expired stays.
            self.collection.delete(ids=[RECORD_ID], where={"owner": self.owner})
        except Exception as exc:  # noqa: BLE001 - any client/server failure: the lease expires by itself
            log.warning("could not delete the writer lease %s_lease (it expires in at most %.0f s): %s",
                        self.name, self.ttl, exc)

    def __enter__(self) -> Self:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
