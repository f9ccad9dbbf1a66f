# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lock primitive on S3: conditional requests (If-None-Match, If-Match on the ETag) decide
between contenders, and the Date of S3's own reply is the clock a lock's age is judged by."""

from __future__ import annotations

from datetime import timezone
from email.utils import parsedate_to_datetime

from ...limits import LOCK_LIMIT
from ...paths import LOCK_NAME
from ..lease import LockFile, Seen

NOT_FOUND = ("404", "NoSuchKey", "NotFound")
CONDITION_FAILED = ("412", "PreconditionFailed", "ConditionalRequestConflict")
EMPTY_RANGE = ("416", "InvalidRange")


class S3Lock(LockFile):
    """`.distributor.lock` under one S3 storage's prefix, through that storage's client (boto3
    clients are safe to share with the heartbeat thread) and its error translation."""

    def __init__(self, storage):
        self.storage = storage
        self.key = storage._key(LOCK_NAME)
        self.where = storage.describe(LOCK_NAME)
        self._date: float | None = None

    def _call(self, action: str, operation: str, tolerate: tuple, **params):
        return self.storage._call(action, self.key, operation, tolerate, Key=self.key, **params)

    def create(self, record: bytes) -> object | None:
        """If-None-Match: * makes S3 itself decide between two contenders; the ETag is the version
        a renewal must match."""
        reply = self._call("create lock", "put_object", CONDITION_FAILED, Body=record, IfNoneMatch="*",
                           ContentType="application/json")
        return reply["ETag"] if reply is not None else None

    def read(self) -> Seen | None:
        """The first LOCK_LIMIT + 1 bytes (a ranged GET), the ETag and LastModified, and the
        reply's Date for now(). An empty object has no byte range: its head says the rest."""
        reply = self._call("inspect lock", "get_object", NOT_FOUND + EMPTY_RANGE, Range="bytes=0-%d" % LOCK_LIMIT)
        raw = b""
        if reply is None:
            reply = self._call("inspect lock", "head_object", NOT_FOUND)
            if reply is None:
                return None
        else:
            with self.storage._errors("inspect lock", self.key):
                raw = reply["Body"].read(LOCK_LIMIT + 1)
                reply["Body"].close()
        self._date = _epoch(reply.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date"))
        modified = reply.get("LastModified")
        return Seen(raw, reply["ETag"], modified.timestamp() if modified is not None else None)

    def replace(self, version: object, record: bytes) -> object | None:
        """If-Match on the ETag: a renewal after another publisher broke the lock fails instead of
        overwriting its record."""
        reply = self._call("renew lock", "put_object", NOT_FOUND + CONDITION_FAILED, Body=record, IfMatch=version,
                           ContentType="application/json")
        return reply["ETag"] if reply is not None else None

    def delete(self, version: object) -> bool:
        """If-Match: when two publishers break the same stale lock, the slower one must not
        delete the lock the faster one has just created. Either way, `version` is gone."""
        self._call("remove lock", "delete_object", NOT_FOUND + CONDITION_FAILED, IfMatch=version)
        return True

    def now(self) -> float | None:
        """The Date of the storage's reply to the read the protocol made just before."""
        return self._date


def _epoch(date: str | None) -> float | None:
    """An HTTP Date header as epoch seconds; None when absent or not a date."""
    try:
        parsed = parsedate_to_datetime(date) if date else None
        return parsed.replace(tzinfo=parsed.tzinfo or timezone.utc).timestamp() if parsed else None
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
