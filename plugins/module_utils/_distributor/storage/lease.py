# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lock protocol, once: waiting, expiry judged on the storage's clock, renewal and release.

SFTP, S3 and the memory double each implement only a LockFile (create-exclusive, a bounded read
with the storage's time stamp, replace-if-unchanged, delete-if-unchanged, the storage's current
time); `held` runs the protocol over it. Local storage uses flock instead (the kernel releases a
dead holder's lock, see local.lock.py) and shares the wait, the record and the Lease.

Why the storage's clock: publishers run on machines whose clocks differ. A record's `expires_at`
written by one machine and compared with another machine's clock lets a contender whose clock runs
ahead break a live lock at once, while the holder goes on renaming outputs into place. The
storage stamps every write with its own time (an SFTP file's mtime, an S3 object's
LastModified) and can say what time it is there (the mtime of a file just written, the Date of
an S3 response): the age of a lock is the difference of two stamps of one clock, so publishers
hours apart agree, and a lock whose holder died hours ago is seen as dead at once. Where a
storage gives no stamp, or dates a lock ahead of its own clock (a stamp set by hand, or a clock
set back since), a contender breaks a lock only after watching the same record (same version,
same stamp) for a whole lease on its own monotonic clock, as the DynamoDB lock client does.

A lock record is anyone's to write, so it may shorten a lease, never lengthen it: the lease a
record declares is bounded by the contender's own `lock.expiry`. The times inside the record are
the holder's and only inform people.
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from typing import Callable, Iterator, NamedTuple

from ..errors import DistributorError
from ..limits import SHOWN_LIMIT
from ..records.schemas import show
from ..timestamps import format_rfc3339

LOCK_POLL_SECONDS = 0.2
RENEWALS_PER_EXPIRY = 3
EXPIRING_ADVICE = "Retry later, or remove the lock file if that holder is gone."
WATCHED_ADVICE = ("The storage cannot date this lock (it gives no time stamp, or one ahead of its own clock), so it is "
                  "broken only once seen unchanged for %gs (lock.expiry): if its holder is gone, run with a lock_timeout "
                  "above that, or remove the lock file.")

# What a lock record anyone can write may raise when read: garbage, deep nesting, a time
# out of range (it is read back from storage, so it is untrusted like the state).
UNREADABLE_RECORD = (ValueError, KeyError, TypeError, RecursionError, OverflowError, OSError)


class Seen(NamedTuple):
    """A lock record as read: at most LOCK_LIMIT + 1 bytes of it, the `version` that
    replace and delete are conditional on, and the storage's time stamp of its last write (None
    where the storage gives none)."""

    raw: bytes
    version: object
    stamp: float | None


class LockFile:
    """What a backend implements for the protocol: one lock record at one place.

    Every method raises DistributorError (storage_error naming the place) when storage fails,
    and never reads more than LOCK_LIMIT + 1 bytes of what it finds there: anyone who can write
    the destination can plant a lock record of any size.
    """

    where = "the lock"
    # Seconds between two of the storage's time stamps that it cannot tell apart.
    resolution = 1.0

    def create(self, record: bytes) -> object | None:
        """Create the lock holding `record` only if none exists: its version, or None when one does."""
        raise NotImplementedError

    def read(self) -> Seen | None:
        """The lock as it is now, or None when there is none."""
        raise NotImplementedError

    def replace(self, version: object, record: bytes) -> object | None:
        """Write `record` only while the lock is still at `version`: the new version, or None."""
        raise NotImplementedError

    def delete(self, version: object) -> bool:
        """Remove the lock only while it is at `version`; True when no lock of that version is left."""
        raise NotImplementedError

    def now(self) -> float | None:
        """The storage's current time, on the clock of its stamps; None when it cannot say."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the protocol's calls opened (an SFTP channel)."""


def holder_record(now: float, expiry: float, token: str, acquired_at: float | None = None, renewal: int = 0) -> bytes:
    """Who holds a lock, so a waiting publisher can say whom it waits for; the attempt token
    says, to the holder itself, that the lock is still its own; `expiry` is the lease the holder
    renews within, which contenders judge the storage's stamps by (up to their own, lease_of). `renewal` counts renewals, so
    every renewal changes the record even where the storage's stamps are coarse. The times are the
    holder's clock's, for people: a renewal keeps `acquired_at` and moves `expires_at`."""
    return json.dumps({
        "holder": "%s:%d" % (socket.gethostname(), os.getpid()),
        "token": token,
        "acquired_at": now if acquired_at is None else acquired_at,
        "expires_at": now + expiry,
        "expiry": expiry,
        "renewal": renewal,
    }).encode()


def holds(raw: bytes | None, token: str) -> bool:
    """Whether a lock record read back from storage is the one attempt `token` wrote; garbage,
    a missing file and another holder's record are all "no"."""
    try:
        return json.loads(raw or b"")["token"] == token
    except UNREADABLE_RECORD:
        return False


def describe_holder(raw: bytes | None) -> str:
    """A human description of a lock's holder record, tolerant of garbage; a holder string
    longer than SHOWN_LIMIT is cut there (anyone can write the record)."""
    try:
        record = json.loads(raw or b"")
        return "%s (since %s, expires %s)" % (
            show(record["holder"][:SHOWN_LIMIT], SHOWN_LIMIT + 2),
            format_rfc3339(datetime.fromtimestamp(record["acquired_at"], timezone.utc)),
            format_rfc3339(datetime.fromtimestamp(record["expires_at"], timezone.utc)),
        )
    except UNREADABLE_RECORD:
        return "an unknown holder"


def lock_is_expired(raw: bytes | None, now: float) -> bool:
    """Whether a record's own `expires_at` is before `now`, or unreadable: what the record claims,
    for people reading it (distributor_state_info). The protocol never judges a lock by it (see
    the module docstring)."""
    try:
        expires = float(json.loads(raw or b"")["expires_at"])
        if not math.isfinite(expires):
            raise ValueError("expires_at is not a time")
        return expires < now
    except UNREADABLE_RECORD:
        return True


def declared_expiry(raw: bytes) -> float | None:
    """The lease a record's holder renews within, when the record states a usable one."""
    try:
        expiry = json.loads(raw)["expiry"]
        if isinstance(expiry, bool) or not isinstance(expiry, (int, float)) or not 0 < expiry < math.inf:
            return None
        return float(expiry)
    except UNREADABLE_RECORD:
        return None


def lease_of(raw: bytes, expiry: float) -> float:
    """How long a lock may go unrenewed before a contender whose `lock.expiry` is `expiry` breaks
    it: the lease its record declares, never more than `expiry`. A holder killed with a short
    lease is broken after that lease; a record declaring 1e300 seconds, after `expiry`."""
    declared = declared_expiry(raw)
    return expiry if declared is None else min(declared, expiry)


class Watch:
    """A contender's watch over a record it cannot date: how long, on its own monotonic clock,
    it has seen the same version and stamp."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock
        self._seen: tuple | None = None
        self._since = 0.0

    def unchanged_for(self, seen: Seen) -> float:
        """Seconds since this watch first saw `seen`'s version and stamp; a change restarts it."""
        now = self._clock()
        if (seen.version, seen.stamp) != self._seen:
            self._seen, self._since = (seen.version, seen.stamp), now
        return now - self._since

    def watches(self, seen: Seen) -> bool:
        """Whether `seen` is the record this watch is timing (it was judged by watching)."""
        return (seen.version, seen.stamp) == self._seen


def is_stale(lock: LockFile, seen: Seen, expiry: float, watch: Watch) -> bool:
    """Whether the lock `seen` has gone unrenewed for longer than its lease (lease_of). On the
    storage's clock when the storage dates both the record and now (plus its resolution, so a
    coarse stamp never breaks a lock early); else by `watch`. A stamp ahead of the storage's now
    dates nothing: judged by its age, a lock stamped ten years ahead would never be stale."""
    lease = lease_of(seen.raw, expiry)
    now = lock.now() if seen.stamp is not None else None
    if now is not None and seen.stamp <= now + lock.resolution:
        return now - seen.stamp > lease + lock.resolution
    return watch.unchanged_for(seen) >= lease


def wait_for_lock(take: Callable[[], bool], holder: Callable[[], bytes | None], where: str, timeout: float,
                  advice: str | Callable[[], str] = EXPIRING_ADVICE, clock: Callable[[], float] = time.monotonic,
                  sleep: Callable[[float], None] = time.sleep) -> None:
    """Every lock is waited for here, whatever takes it: try `take` every LOCK_POLL_SECONDS
    until it succeeds, or fail with `locked` once `timeout` has passed, naming the holder
    (`holder` reads its record) and what the operator can do (`advice`, or what it returns once
    the wait is over)."""
    deadline = clock() + timeout
    while not take():
        if clock() >= deadline:
            raise DistributorError("locked", "%s is locked by %s; waited %gs (lock_timeout). %s" % (
                where, describe_holder(holder()), timeout, advice() if callable(advice) else advice))
        sleep(LOCK_POLL_SECONDS)


class Claim:
    """This attempt's hold on a LockFile: the version it last wrote and its renewal count; while
    it waits, the record it last saw and how long it has watched it (for stores without stamps)."""

    def __init__(self, lock: LockFile, token: str, expiry: float, clock: Callable[[], float] = time.monotonic):
        self.lock = lock
        self.token = token
        self.expiry = expiry
        self.version: object = None
        self.acquired_at = 0.0
        self.renewal = 0
        self.seen: Seen | None = None
        self._watch = Watch(clock)

    def take(self) -> bool:
        """Create the lock, or else break it when stale and try again at once.

        Several contenders may find the same dead lock stale at once: delete-if-unchanged lets
        only one remove it, and the others then find the winner's new lock, not the dead one."""
        while not self._create():
            self.seen = self.lock.read()
            if self.seen is None or not is_stale(self.lock, self.seen, self.expiry, self._watch):
                return False
            if not self.lock.delete(self.seen.version):
                return False
        return True

    def _create(self) -> bool:
        acquired_at = time.time()
        version = self.lock.create(holder_record(acquired_at, self.expiry, self.token))
        if version is None:
            return False
        self.version, self.acquired_at = version, acquired_at
        return True

    def last_seen(self) -> bytes | None:
        """The holder record the last failed take found, for the `locked` error: no further
        round trip to storage."""
        return self.seen.raw if self.seen is not None else None

    def advice(self, timeout: float) -> str:
        """What the `locked` error tells the operator after `timeout`: a lock the storage cannot
        date that no wait of `timeout` can see unchanged for its lease is broken only by a longer
        wait (or by hand); every other lock, by retrying later (a dead one is then stale)."""
        if self.seen is not None and self._watch.watches(self.seen):
            lease = lease_of(self.seen.raw, self.expiry)
            if lease > timeout:
                return WATCHED_ADVICE % lease
        return EXPIRING_ADVICE

    def renew(self) -> bool:
        """Replace our record with the next renewal, only while it is the one we wrote. When the
        condition fails the lock is read: a renewal whose reply was lost (a client retrying a
        timed-out write, which then fails its own condition) has left a record of ours there, and
        only this attempt writes its token. Anything else there means the lock was lost."""
        self.renewal += 1
        record = holder_record(time.time(), self.expiry, self.token, self.acquired_at, self.renewal)
        version = self.lock.replace(self.version, record)
        if version is None:
            seen = self.lock.read()
            if seen is None or not holds(seen.raw, self.token):
                return False
            version = seen.version
        self.version = version
        return True

    def release(self) -> None:
        """Delete the lock only while it is still ours: a holder that lost it must leave the next
        publisher's lock alone."""
        version, self.version = self.version, None
        if version is not None:
            self.lock.delete(version)

    def holder(self) -> bytes | None:
        """The holder record on storage now, for the error of a lost lock."""
        seen = self.lock.read()
        return seen.raw if seen is not None else None


@contextmanager
def held(lock: LockFile, token: str, timeout: float, expiry: float,
         clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Iterator["Lease"]:
    """Take `lock` (see wait_for_lock and Claim.take), keep it renewed while the body runs,
    release it after."""
    claim = Claim(lock, token, expiry, clock)
    try:
        wait_for_lock(claim.take, claim.last_seen, lock.where, timeout, lambda: claim.advice(timeout), clock, sleep)
        try:
            with Lease(claim.renew, claim.holder, expiry, lock.where, clock) as lease:
                yield lease
        except BaseException:
            with suppress(DistributorError):
                claim.release()
            raise
        claim.release()
    finally:
        lock.close()


class Lease:
    """A held lock, kept while the run works and confirmed before the run records anything.

    The exclusive-create locks (SFTP, S3, memory) expire, so that a dead holder does not block a
    root for ever; a live holder rewrites its record from a daemon heartbeat every
    expiry/RENEWALS_PER_EXPIRY seconds, so a publish of any length keeps its lock. A lock
    can still be lost: a holder paused or cut off for longer than the expiry is broken by the next
    publisher, and a lock file can be deleted by hand. So every change a run makes passes
    `check` (no round trip, unless the heartbeat has fallen a whole beat behind: then the run
    renews itself), and the state and journal are written only after `confirm`, a renewal on the
    spot. Once the lock is lost the run changes nothing more and fails with `locked`: what it
    wrote is named by its journal, which the next publish resolves.

    `renew()` returns whether the lock is still ours, extending it when it is, and raises
    DistributorError when storage fails. `expiry` None is a lock that cannot expire (local
    `flock`): never renewed, only confirmed. `clock` is monotonic (tests pass their own).
    """

    def __init__(self, renew: Callable[[], bool], read_holder: Callable[[], bytes | None], expiry: float | None,
                 where: str, clock: Callable[[], float] = time.monotonic):
        self._renew = renew
        self._read_holder = read_holder
        self.expiry = expiry
        self.where = where
        self._clock = clock
        self._mutex = threading.Lock()
        self._stopped = threading.Event()
        self._lost = False
        self._due = math.inf
        self._thread = None
        if expiry is not None:
            self._due = clock() + expiry - self._beat_seconds()

    def _beat_seconds(self) -> float:
        return self.expiry / RENEWALS_PER_EXPIRY

    def __enter__(self) -> "Lease":
        if self.expiry is not None:
            self._thread = threading.Thread(target=self._beat, name="distributor-lock-heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(self.expiry)

    def _beat(self) -> None:
        """Renew until stopped or lost. A failed renewal is tried again at the next beat and is
        never raised here, where nobody would report it (an uncaught exception in a thread only
        prints a traceback): if storage stays unreachable, the run's own `check` renews once the
        lease runs low and fails with that error."""
        while not self._stopped.wait(self._beat_seconds()):
            try:
                if not self._renewed():
                    return
            except Exception:  # see the docstring: the run's own check reports it
                continue

    def _renewed(self) -> bool:
        """Renew now (one at a time: the heartbeat and the run may both ask); False once lost."""
        with self._mutex:
            if not self._lost:
                started = self._clock()
                if not self._renew():
                    self._lost = True
                elif self.expiry is not None:
                    self._due = started + self.expiry - self._beat_seconds()
            return not self._lost

    def check(self, what: str) -> None:
        """Before a change: still ours, as far as the heartbeat knows, and not about to expire."""
        if self._lost or (self._clock() >= self._due and not self._renewed()):
            raise self._lost_error(what)

    def confirm(self, what: str) -> None:
        """Before writing a record (state, journal): still ours on storage, renewed just now."""
        if not self._renewed():
            raise self._lost_error(what)

    def _lost_error(self, what: str) -> DistributorError:
        try:
            raw = self._read_holder()
        except DistributorError:
            raw = b""
        now = "nobody holds it now" if raw is None else "it is now held by %s" % describe_holder(raw)
        return DistributorError(
            "locked",
            "%s is no longer this run's lock (%s): it was broken after its expiry, while the run was paused "
            "or cut off for longer than lock.expiry, or deleted by hand. The run stopped before %s; the next "
            "publish of this bundle path removes what it left (its journal names it)." % (self.where, now, what),
        )
