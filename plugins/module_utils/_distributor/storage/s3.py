# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A prefix in an S3 bucket (AWS or any S3-compatible endpoint), through boto3.

An object appears only when its PUT (or its multipart upload) completes, so there is no staged
name: a failed upload leaves nothing behind. Publishes are dominated by many small files whose
requests are latency bound, so write_many and delete_many work concurrently and in batches.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import deque
import traceback
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from functools import partial
from typing import Callable, Iterable, Iterator

from ..attributes import s3_object_args
from ..errors import DistributorError, MissingLibrary
from ..paths import LOCK_NAME, join
from .base import (
    LOCK_EXPIRY_SECONDS, Lease, Storage, holder_record, holds, in_parallel, lock_is_expired, mentions_secret, redact,
    wait_for_lock)

PART_SIZE = 8 * 1024 * 1024
DELETE_BATCH = 1000
WORKERS = 8
PARTS_IN_FLIGHT = 3  # per storage, across all files: bounds memory to a few parts whatever the file count
NOT_FOUND = ("404", "NoSuchKey", "NotFound")
CONDITION_FAILED = ("412", "PreconditionFailed", "ConditionalRequestConflict")


class S3Storage(Storage):
    kind = "s3"

    def __init__(self, storage: dict, base: str, token: str):
        super().__init__(token)
        self.bucket = storage.get("bucket") or ""
        if not self.bucket:
            raise DistributorError("invalid_config", "storage.bucket is required for s3 storage")
        self.prefix = join(storage.get("prefix") or "", base)
        self._secrets = [value for value in (storage.get("secret_key"), storage.get("session_token")) if value]
        self._held: str | None = None
        self._acquired_at: float | None = None
        self._part_slots = threading.BoundedSemaphore(PARTS_IN_FLIGHT)
        self._part_buffers: list[bytearray] = []  # free part buffers, reused (see _multipart)
        self._settings = storage
        try:
            import boto3
            from botocore.config import Config
            from botocore.exceptions import BotoCoreError, ClientError
        except ImportError:
            raise MissingLibrary("boto3", "s3 storage", traceback.format_exc()) from None
        self._client_error = ClientError
        self._sdk_errors = (ClientError, BotoCoreError)
        with self._errors("connect to", self.prefix):
            try:
                self.client = _session(boto3, storage).client(
                    "s3",
                    endpoint_url=storage.get("endpoint_url") or None,
                    config=Config(max_pool_connections=WORKERS + PARTS_IN_FLIGHT),
                    verify=_verify(storage),
                )
            except ValueError as exc:
                # boto3 refuses a malformed endpoint_url with a bare ValueError.
                raise DistributorError(
                    "invalid_config",
                    self._redact("cannot connect to s3://%s/%s: %s; check storage.endpoint_url" % (self.bucket, self.prefix, exc)),
                ) from None

    # -- locations and errors -------------------------------------------------------------

    def _key(self, path: str) -> str:
        return join(self.prefix, path)

    def describe(self, path: str = "") -> str:
        return "s3://%s/%s" % (self.bucket, self._key(path))

    @contextmanager
    def _errors(self, action: str, key: str) -> Iterator[None]:
        """botocore errors leave as storage_error naming s3://bucket/key and the error code."""
        try:
            yield
        except self._sdk_errors as exc:
            message = "cannot %s s3://%s/%s: %s" % (action, self.bucket, key, exc)
            error = DistributorError("storage_error", self._redact(message))
            # A cause quoting a secret would print it in a traceback: the message says enough.
            raise error from (None if mentions_secret(exc, self._secrets) else exc)

    def _redact(self, text: str) -> str:
        return redact(text, self._secrets)

    def _call(self, action: str, key: str, operation: str, tolerate: tuple = (), **params):
        """One request on this bucket; None when it failed with an error code in `tolerate`."""
        with self._errors(action, key):
            try:
                return getattr(self.client, operation)(Bucket=self.bucket, **params)
            except self._client_error as exc:
                if exc.response.get("Error", {}).get("Code") in tolerate:
                    return None
                raise

    # -- files ----------------------------------------------------------------------------

    def _read(self, key: str) -> bytes | None:
        reply = self._call("read", key, "get_object", NOT_FOUND, Key=key)
        if reply is None:
            return None
        with self._errors("read", key):
            return reply["Body"].read()

    def read_bytes(self, path: str, limit: int) -> bytes | None:
        data = self._read(self._key(path))
        return None if data is None else data[:limit + 1]

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        """A file of one part is one PUT; larger files go multipart, PARTS_IN_FLIGHT at a time."""
        key = self._key(path)
        stream = iter(chunks)
        first, size = [], 0
        for chunk in stream:
            first.append(chunk)
            size += len(chunk)
            if size > PART_SIZE:
                break
        settings = s3_object_args(self._settings, path)
        if size <= PART_SIZE:
            self._call("write", key, "put_object", Key=key, Body=b"".join(first), **settings)
        else:
            self._multipart(key, settings, _PartReader(itertools.chain(first, stream)))

    def _multipart(self, key: str, settings: dict, reader: _PartReader) -> None:
        """The object appears only when the upload completes; an abandoned upload is aborted so
        it neither appears nor keeps costing storage.

        Each part is read into one of the storage's PARTS_IN_FLIGHT part buffers, taken before
        the part is read and given back when its upload ends: memory is those buffers whatever
        the file size or the number of files, and reusing them keeps the allocator from holding
        on to a freed 8 MiB block per thread (a fresh `bytes` per part grew the peak by about
        20 MiB a part in flight)."""
        upload = self._call("start upload of", key, "create_multipart_upload", Key=key, **settings)["UploadId"]
        in_flight: deque = deque()

        def send(number: int, buffer: bytearray, size: int) -> dict:
            try:
                body = buffer if size == len(buffer) else bytes(memoryview(buffer)[:size])
                reply = self._call("write", key, "upload_part", Key=key, UploadId=upload, PartNumber=number, Body=body)
                return {"ETag": reply["ETag"], "PartNumber": number}
            finally:
                self._give_back(buffer)

        try:
            done = []
            with ThreadPoolExecutor(max_workers=PARTS_IN_FLIGHT) as pool:
                try:
                    for number in itertools.count(1):
                        while in_flight and in_flight[0][0].done():
                            done.append(in_flight.popleft()[0].result())
                        buffer = self._take_part_buffer()
                        try:
                            size = reader.fill(buffer)
                            last = reader.at_end()
                            in_flight.append((pool.submit(send, number, buffer, size), buffer))
                        except BaseException:
                            self._give_back(buffer)
                            raise
                        if last:
                            break
                    while in_flight:
                        done.append(in_flight[0][0].result())
                        in_flight.popleft()
                finally:
                    for future, buffer in in_flight:
                        if future.cancel():
                            self._give_back(buffer)
            self._call(
                "write", key, "complete_multipart_upload", Key=key, UploadId=upload, MultipartUpload={"Parts": done}
            )
        except BaseException:
            with suppress(Exception):
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload)
            raise

    def _take_part_buffer(self) -> bytearray:
        """A PART_SIZE buffer, waiting while PARTS_IN_FLIGHT are in use (by any file)."""
        self._part_slots.acquire()
        try:
            return self._part_buffers.pop()
        except IndexError:
            return bytearray(PART_SIZE)

    def _give_back(self, buffer: bytearray) -> None:
        self._part_buffers.append(buffer)
        self._part_slots.release()

    def write_many(self, items: Iterable[tuple[str, Callable[[], Iterable[bytes]]]]) -> None:
        """write() for many files at once, WORKERS at a time: small files are latency bound.

        Each item is (path, chunks_factory); the factory is called in the worker, so sources are
        opened only when their upload starts. The first failure cancels uploads not yet started
        and is raised once the running ones end; files already uploaded stay.
        """
        in_parallel(WORKERS, lambda item: self.write(item[0], item[1]()), items)

    def delete(self, path: str) -> bool:
        if not self.exists(path):
            return False
        self._call("delete", self._key(path), "delete_object", Key=self._key(path))
        return True

    def delete_many(self, paths: Iterable[str]) -> list[str]:
        """One listing tells which paths exist (only those are reported), then each request
        deletes up to DELETE_BATCH keys."""
        wanted = list(dict.fromkeys(paths))
        present = set(self.list_files()) if wanted else set()
        existing = [path for path in wanted if path in present]
        for start in range(0, len(existing), DELETE_BATCH):
            self._delete_batch(existing[start:start + DELETE_BATCH])
        return existing

    def _delete_batch(self, paths: list[str]) -> None:
        objects = [{"Key": self._key(path)} for path in paths]
        reply = self._call("delete", self._key(paths[0]), "delete_objects", Delete={"Objects": objects, "Quiet": True})
        failures = reply.get("Errors") or []
        if failures:
            first = failures[0]
            raise DistributorError(
                "storage_error",
                "cannot delete s3://%s/%s: %s (%s); %d deletions failed in all"
                % (self.bucket, first.get("Key"), first.get("Code"), first.get("Message"), len(failures)),
            )

    def exists(self, path: str) -> bool:
        return self._call("inspect", self._key(path), "head_object", NOT_FOUND, Key=self._key(path)) is not None

    def list_files(self) -> list[str]:
        """Keys ending in '/' are folder markers some tools create, not files."""
        prefix = self.prefix + "/" if self.prefix else ""
        found: list[str] = []
        with self._errors("list", prefix):
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
                found.extend(item["Key"][len(prefix):] for item in page.get("Contents", ()))
        return sorted(key for key in found if key and not key.endswith("/"))

    # -- lock -----------------------------------------------------------------------------

    @contextmanager
    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> Iterator[Lease]:
        """A conditional PUT creates `.distributor.lock` only when absent; nothing releases it
        when a holder dies, so a record past its expiry is broken by the next publisher. A live
        holder renews it (boto3 clients are safe to share with the heartbeat thread)."""
        key = self._key(LOCK_NAME)
        wait_for_lock(lambda: self._try_lock(key, expiry), lambda: self._read(key), timeout, self.describe())
        try:
            with Lease(partial(self._renew, key, expiry), lambda: self._read(key), expiry, self.describe(LOCK_NAME)) as lease:
                yield lease
        except BaseException:
            with suppress(DistributorError):
                self._release(key)
            raise
        self._release(key)

    def _try_lock(self, key: str, expiry: float) -> bool:
        if self._create_lock(key, expiry):
            return True
        current = self._call("inspect lock", key, "get_object", NOT_FOUND, Key=key)
        if current is not None:
            with self._errors("inspect lock", key):
                raw = current["Body"].read()
            if not lock_is_expired(raw, time.time()):
                return False
            # If-Match: when two publishers break the same expired lock, the slower one must not
            # delete the lock the faster one has just created.
            self._call("break expired lock", key, "delete_object", NOT_FOUND + CONDITION_FAILED, Key=key, IfMatch=current["ETag"])
        return self._create_lock(key, expiry)

    def _create_lock(self, key: str, expiry: float) -> bool:
        acquired_at = time.time()
        record = holder_record(acquired_at, expiry, self.token)
        reply = self._call(
            "create lock", key, "put_object", CONDITION_FAILED, Key=key, Body=record, IfNoneMatch="*", ContentType="application/json"
        )
        if reply is None:
            return False
        self._held, self._acquired_at = reply["ETag"], acquired_at
        return True

    def _renew(self, key: str, expiry: float) -> bool:
        """Replace our holder record with one of a later expiry, only while the object is the one
        we wrote (If-Match on its ETag): a lock broken and taken by another publisher keeps
        theirs, and a lock that is gone is not created again. When the condition fails the lock
        is read: a renewal whose reply was lost (botocore retries a timed-out PUT, which then
        fails its own condition) has left a record of ours there, with a later expiry, and only
        this attempt writes its token."""
        record = holder_record(time.time(), expiry, self.token, self._acquired_at)
        reply = self._call("renew lock", key, "put_object", NOT_FOUND + CONDITION_FAILED, Key=key, Body=record,
                           IfMatch=self._held, ContentType="application/json")
        if reply is not None:
            self._held = reply["ETag"]
            return True
        current = self._call("inspect lock", key, "get_object", NOT_FOUND, Key=key)
        if current is None:
            return False
        with self._errors("inspect lock", key):
            raw = current["Body"].read()
        if not holds(raw, self.token):
            return False
        self._held = current["ETag"]
        return True

    def _release(self, key: str) -> None:
        """Delete the lock only while it is still ours: a holder that outlived its expiry may
        have been broken and replaced by the next publisher."""
        if self._held is not None:
            self._call("release lock", key, "delete_object", NOT_FOUND + CONDITION_FAILED, Key=key, IfMatch=self._held)
        self._held = None


def _session(boto3, storage: dict):
    """Explicit keys win, then a named profile, then the standard AWS chain (environment,
    shared files, instance and container roles), as the aws command would."""
    region = storage.get("region") or os.environ.get("AWS_REGION") or None
    if storage.get("access_key"):
        return boto3.session.Session(
            aws_access_key_id=storage["access_key"],
            aws_secret_access_key=storage.get("secret_key"),
            aws_session_token=storage.get("session_token"),
            region_name=region,
        )
    return boto3.session.Session(profile_name=storage.get("profile") or None, region_name=region)


def _verify(storage: dict):
    """botocore's `verify`: a CA bundle path, False to skip TLS verification, or None (default)."""
    if storage.get("validate_certs") is False:
        return False
    return os.path.expanduser(storage["ca_bundle"]) if storage.get("ca_bundle") else None


class _PartReader:
    """A stream of chunks read part by part into caller's buffers."""

    def __init__(self, chunks: Iterator[bytes]):
        self._chunks = chunks
        self._left = memoryview(b"")

    def fill(self, buffer: bytearray) -> int:
        """Copy the next len(buffer) bytes into `buffer`; how many (fewer only at the end)."""
        view = memoryview(buffer)
        filled = 0
        while filled < len(view) and self._more():
            count = min(len(self._left), len(view) - filled)
            view[filled:filled + count] = self._left[:count]
            self._left = self._left[count:]
            filled += count
        return filled

    def at_end(self) -> bool:
        """Whether the stream is exhausted. Asking reads ahead: a source that verifies its bytes
        after the last chunk (Bundle.chunks) fails here, before the upload completes."""
        return not self._more()

    def _more(self) -> bool:
        while not self._left:
            chunk = next(self._chunks, None)
            if chunk is None:
                return False
            self._left = memoryview(chunk)
        return True
