# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The small interface every backend implements, and the helpers they share.

Every path a caller passes is a clean relative POSIX path under the storage's *base*: the
destination root joined with the rendered bundle path. Backends alone join paths to real
locations, and they alone see their SDK's exceptions: everything leaves as DistributorError
with reason `storage_error` (or `locked`) and a message naming the location.
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from typing import Callable, ContextManager, Iterable, TypeVar
from urllib.parse import quote, quote_plus

from ..errors import DistributorError
from ..paths import RESERVED_PREFIX
from ..schemas import show
from ..timestamps import format_rfc3339

Item = TypeVar("Item")

LOCK_EXPIRY_SECONDS = 600.0
LOCK_POLL_SECONDS = 0.2
RENEWALS_PER_EXPIRY = 3


def staging_dir(path: str, token: str) -> str:
    """The directory where this attempt stages the files of `path`'s directory (local, SFTP).

    It is made by the attempt (mkdir, never reused) and only distributor's account may write in
    it, so nobody else can plant or swap a staged file, a symlink at a staged name included. It
    sits beside its targets, so a rename's source and target are reached through the same
    directories: a directory swapped for a symbolic link mid-publish makes the rename fail (the
    staged file is not behind the link) instead of landing where the link points.
    """
    head = path.rpartition("/")[0]
    name = "%s.tmp.%s" % (RESERVED_PREFIX, token)
    return "%s/%s" % (head, name) if head else name


def temp_name(path: str, token: str) -> str:
    """Where a write of `path` is staged before its rename: reserved, so never an output, and
    derived from the attempt token so recovery can find leftovers without listing."""
    return "%s/%s" % (staging_dir(path, token), path.rpartition("/")[2])


def in_parallel(workers: int, task: Callable[[Item], None], items: Iterable[Item]) -> None:
    """`task` over `items`, `workers` at a time, for backends whose small requests are latency
    bound. The first failure cancels the tasks not yet started and is raised once the running
    ones end: what finished stays done, as a sequential run would have left it."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(task, item) for item in items]
        try:
            for future in as_completed(futures):
                future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def not_a_record(where: str, kind: str) -> DistributorError:
    """Refusal of a reserved name (state, journal, lock) that holds something other than a regular
    file, never opened for reading (a FIFO would block the run for good). `storage_error`, like
    any other thing in distributor's way at the destination: no record was read, so there is no
    state to call invalid (and nothing `force` could replace)."""
    return DistributorError(
        "storage_error",
        "%s is %s, not a regular file; distributor keeps its state, journal and lock there as regular "
        "files and opens nothing else at those names. Find out who put it there, then remove it." % (where, kind),
    )


# What a lock record anyone can write may raise when read: garbage, deep nesting, a time
# out of range (it is read back from storage, so it is untrusted like the state).
UNREADABLE_RECORD = (ValueError, KeyError, TypeError, RecursionError, OverflowError, OSError)


def holder_record(now: float, expiry: float, token: str, acquired_at: float | None = None) -> bytes:
    """Who holds a lock and until when, so a waiting publisher can say whom it waits for; the
    attempt token says, to the holder itself, that the lock is still its own. A renewal keeps
    `acquired_at` and moves `expires_at`."""
    return json.dumps({
        "holder": "%s:%d" % (socket.gethostname(), os.getpid()),
        "token": token,
        "acquired_at": now if acquired_at is None else acquired_at,
        "expires_at": now + expiry,
    }).encode()


def holds(raw: bytes | None, token: str) -> bool:
    """Whether a lock record read back from storage is the one attempt `token` wrote; garbage,
    a missing file and another holder's record are all "no"."""
    try:
        return json.loads(raw or b"")["token"] == token
    except UNREADABLE_RECORD:
        return False


def describe_holder(raw: bytes | None) -> str:
    """A human description of a lock's holder record, tolerant of garbage."""
    try:
        record = json.loads(raw or b"")
        return "%s (since %s, expires %s)" % (
            show(record["holder"]),
            format_rfc3339(datetime.fromtimestamp(record["acquired_at"], timezone.utc)),
            format_rfc3339(datetime.fromtimestamp(record["expires_at"], timezone.utc)),
        )
    except UNREADABLE_RECORD:
        return "an unknown holder"


class Storage:
    """One destination bundle path on one backend.

    `token` names this attempt's staged files (see temp_name); the journal records it.
    """

    kind = "abstract"

    def __init__(self, token: str):
        self.token = token

    def describe(self, path: str = "") -> str:
        """A location for messages, for example `s3://bucket/prefix/path`."""
        raise NotImplementedError

    def read_bytes(self, path: str, limit: int) -> bytes | None:
        """None when the file does not exist; else at most `limit + 1` bytes of it, so a caller
        tells a file over its bound, and nothing larger is ever read or held."""
        raise NotImplementedError

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        """Stream `chunks` to `path` atomically: staged under temp_name(path, token) and renamed.

        If the iterable raises (a verification failure, say), the staged file is removed and the
        exception propagates; `path` is untouched.
        """
        raise NotImplementedError

    def write_bytes(self, path: str, data: bytes) -> None:
        self.write(path, [data])

    def write_many(self, items: Iterable[tuple[str, Callable[[], Iterable[bytes]]]]) -> None:
        """write() for many files: (path, chunks_factory) pairs, the factory called when that
        write starts. Backends where latency dominates (S3) run several at once."""
        for path, factory in items:
            self.write(path, factory())

    def delete(self, path: str) -> bool:
        """Remove a file; a missing file is not an error. True when something was removed.

        Local and SFTP also remove directories left empty below the base.
        """
        raise NotImplementedError

    def delete_many(self, paths: Iterable[str]) -> list[str]:
        """Remove files, returning those that existed; backends may batch or parallelise."""
        return [p for p in paths if self.delete(p)]

    def exists(self, path: str) -> bool:
        raise NotImplementedError

    def list_files(self) -> list[str]:
        """Every file under the base, sorted, as base-relative paths (reserved names included)."""
        raise NotImplementedError

    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> ContextManager["Lease"]:
        """Serialise publishers of this base (a context manager giving the Lease); DistributorError
        ('locked') naming the holder after `timeout` seconds. A holder that died releases it at
        most `expiry` seconds later; a live one keeps it, however long it works."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections; safe to call twice."""

    @property
    def warnings(self) -> list[str]:
        """What the operator should know of this destination that stops nothing (SFTP: directories
        another account can write, see sftp_private); publish, reconcile-state and prune add them
        to their result's warnings. Still there after close()."""
        return []


def wait_for_lock(
    try_acquire: Callable[[], bool],
    read_holder: Callable[[], bytes | None],
    timeout: float,
    where: str,
) -> None:
    """Poll `try_acquire` until it succeeds or `timeout` passes; the shared waiting loop of the
    exclusive-create locks (SFTP, S3)."""
    deadline = time.monotonic() + timeout
    while not try_acquire():
        if time.monotonic() >= deadline:
            raise DistributorError(
                "locked",
                "%s is locked by %s; waited %gs (lock_timeout). Retry later, or remove the lock "
                "file if that holder is gone." % (where, describe_holder(read_holder()), timeout),
            )
        time.sleep(LOCK_POLL_SECONDS)


class Lease:
    """A held lock, kept while the run works and confirmed before the run records anything.

    The exclusive-create locks (SFTP, S3, memory) expire, so that a dead holder does not block a
    root for ever; a live holder rewrites its record with a later expiry from a daemon heartbeat
    every expiry/RENEWALS_PER_EXPIRY seconds, so a publish of any length keeps its lock. A lock
    can still be lost: a holder paused or cut off for longer than the expiry is broken by the next
    publisher, and a lock file can be deleted by hand. So every change a run makes passes
    `check` (no round trip, unless the heartbeat has fallen a whole beat behind: then the run
    renews itself), and the state and journal are written only after `confirm`, a renewal on the
    spot. Once the lock is lost the run changes nothing more and fails with `locked`: what it
    wrote is named by its journal, which the next publish resolves.

    `renew()` returns whether the lock is still ours, extending it when it is, and raises
    DistributorError when storage fails. `expiry` None is a lock that cannot expire (local
    `flock`): never renewed, only confirmed.
    """

    def __init__(self, renew: Callable[[], bool], read_holder: Callable[[], bytes | None], expiry: float | None,
                 where: str):
        self._renew = renew
        self._read_holder = read_holder
        self.expiry = expiry
        self.where = where
        self._mutex = threading.Lock()
        self._stopped = threading.Event()
        self._lost = False
        self._due = math.inf
        self._thread = None
        if expiry is not None:
            self._due = time.monotonic() + expiry - self._beat_seconds()

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
                started = time.monotonic()
                if not self._renew():
                    self._lost = True
                elif self.expiry is not None:
                    self._due = started + self.expiry - self._beat_seconds()
            return not self._lost

    def check(self, what: str) -> None:
        """Before a change: still ours, as far as the heartbeat knows, and not about to expire."""
        if self._lost or (time.monotonic() >= self._due and not self._renewed()):
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


def lock_is_expired(raw: bytes | None, now: float, fallback_deadline: float | None = None) -> bool:
    """A lock whose holder record is past its expiry may be broken. A holder writes its record
    just after an exclusive create, so an empty or partial record is judged by
    `fallback_deadline` (the file's age plus expiry) when the backend knows it, else broken."""
    try:
        expires = float(json.loads(raw or b"")["expires_at"])
        if not math.isfinite(expires):
            raise ValueError("expires_at is not a time")
        return expires < now
    except UNREADABLE_RECORD:
        return fallback_deadline is None or fallback_deadline < now


REDACTED = "********"
MIN_DERIVED_SECRET = 4


def secret_forms(secret: str) -> list[str]:
    """The ways a secret shows up in an error message, longest first: as given, without its
    surrounding whitespace (a token read from a file keeps its newline; an HTTP client refuses
    it and quotes it back), and escaped as Python's repr, JSON or URL encoding write it.
    Ansible's no_log masks only the value as given."""
    forms = {
        secret.strip(),
        repr(secret)[1:-1],
        repr(secret.encode("utf-8"))[2:-1],
        json.dumps(secret)[1:-1],
        quote(secret, safe=""),
        quote_plus(secret),
    }
    derived = [form for form in forms if len(form) >= MIN_DERIVED_SECRET]
    return sorted(set(derived) | {secret}, key=len, reverse=True)


def redact(text: str, secrets) -> str:
    """No SDK is known to echo a secret in an error, but a message of ours must never be the first."""
    for secret in secrets:
        if secret:
            for form in secret_forms(secret):
                text = text.replace(form, REDACTED)
    return text


def mentions_secret(exc: BaseException, secrets) -> bool:
    """Whether an exception or any exception it was raised from quotes a secret: then it must not
    travel on as the cause of our error, where a traceback would print it."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = "%s %r" % (exc, exc.args)
        if redact(text, secrets) != text:
            return True
        exc = exc.__cause__ or exc.__context__
    return False
