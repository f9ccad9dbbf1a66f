# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A prefix in an S3 bucket (AWS or any S3-compatible endpoint), through boto3.

An object appears only when its PUT (or its multipart upload) completes, so there is no staged
name: a failed upload leaves nothing behind. Every PUT and every part carries its SHA-256
(ChecksumSHA256), so S3 itself refuses bytes that changed on the way instead of storing them. Publishes are dominated by many small files whose
requests are latency bound, so write_many and delete_many work concurrently and in batches.

Requests in flight at once, per storage: at most WORKERS object PUTs (or HEADs) from write_many
and delete_many, PARTS_IN_FLIGHT multipart parts, and the lock's heartbeat; the client's
connection pool has a connection for each. Memory for bodies stays bounded whatever that count:
a file over SMALL_BODY is read whole (up to PART_SIZE) only while it holds one of LARGE_BODIES
slots, and multipart parts live in the PARTS_IN_FLIGHT part buffers.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections import deque
import traceback
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import Callable, ContextManager, Iterable, Iterator

from ...records.attributes import s3_object_args, s3_record_args
from ...errors import DistributorError, MissingLibrary
from ...limits import LOCK_EXPIRY_SECONDS
from ...paths import is_reserved, join
from ..base import Storage, hash_stream, in_parallel
from ..judging import verdict
from ..lease import Lease, held
from ..redaction import mentions_secret, redact
from .bodies import PartReader, checksum, full_object_digest, gather, refused_checksum
from .client import client_for, session_for
from .errors import explain
from .lock import EMPTY_RANGE, NOT_FOUND, S3Lock

PART_SIZE = 8 * 1024 * 1024
DELETE_BATCH = 1000
WORKERS = 32  # small files cost a round trip each: 2,000 files wait 63 round trips (8 workers: 250)
COPY_LIMIT = 5 * 1024 ** 3  # the largest object one CopyObject copies
SMALL_BODY = 256 * 1024  # read whole by any of the WORKERS: WORKERS x SMALL_BODY = 8 MiB at most
LARGE_BODIES = 8  # bodies of up to PART_SIZE held at once: 64 MiB at most, as with 8 workers before
PARTS_IN_FLIGHT = 3  # per storage, across all files: bounds memory to a few parts whatever the file count


class S3Storage(Storage):
    """Keys under one prefix of one bucket; S3 has no directories, so creating, confining and
    syncing them cost nothing and a listing is the whole truth about the prefix."""
    def __init__(self, storage: dict, base: str, token: str):
        super().__init__(token)
        self.bucket = storage.get("bucket") or ""
        if not self.bucket:
            raise DistributorError("invalid_config", "storage.bucket is required for s3 storage")
        self.prefix = join(storage.get("prefix") or "", base)
        self._secrets = [value for value in (storage.get("secret_key"), storage.get("session_token")) if value]
        self._part_slots = threading.BoundedSemaphore(PARTS_IN_FLIGHT)
        self._part_buffers: list[bytearray] = []  # free part buffers, reused (see _multipart)
        self._large_bodies = threading.BoundedSemaphore(LARGE_BODIES)
        self._settings = storage
        self._session = None
        self.client = None
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
                self._session = session_for(boto3, storage)
                self.client = client_for(self._session, Config(max_pool_connections=WORKERS + PARTS_IN_FLIGHT + 1), storage,
                                         SMALL_BODY)
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
        """The s3:// URL an operator can paste into `aws s3 ls`."""
        return "s3://%s/%s" % (self.bucket, self._key(path))

    @contextmanager
    def _errors(self, action: str, key: str) -> Iterator[None]:
        """botocore errors leave as storage_error naming s3://bucket/key and the error code; a
        missing bucket and credential failures say so first (s3.errors.explain)."""
        try:
            yield
        except self._sdk_errors as exc:
            location = "s3://%s/%s" % (self.bucket, key)
            if refused_checksum(getattr(exc, "response", None) or {}):
                reason = "verification_failed"
                message = ("%s: S3 refused the upload because the bytes it received do not match the "
                           "SHA-256 distributor sent with them (%s); nothing was stored under that key" % (location, exc))
            else:
                endpoint = self.client.meta.endpoint_url if self.client is not None else None
                reason = "storage_error"
                message = (explain(exc, action, location, self._settings, endpoint, self._credentials_method)
                           or "cannot %s %s: %s" % (action, location, exc))
            error = DistributorError(reason, self._redact(message))
            # A cause quoting a secret would print it in a traceback: the message says enough.
            raise error from (None if mentions_secret(exc, self._secrets) else exc)

    def _credentials_method(self) -> str | None:
        """Which of boto3's providers gave the credentials in use (resolved once, by the client)."""
        try:
            credentials = self._session.get_credentials() if self._session is not None else None
        except self._sdk_errors:
            return None
        return getattr(credentials, "method", None)

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

    def _read(self, key: str, limit: int) -> bytes | None:
        """A ranged GET, so S3 sends no more than `limit + 1` bytes whatever the object's size;
        the body is read to that bound too, in case an S3-compatible server ignores the range.
        An empty object has no byte 0, so S3 refuses the range (416 InvalidRange): it is empty."""
        with self._errors("read", key):
            try:
                reply = self.client.get_object(Bucket=self.bucket, Key=key, Range="bytes=0-%d" % limit)
            except self._client_error as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code in NOT_FOUND + EMPTY_RANGE:
                    return None if code in NOT_FOUND else b""
                raise
            try:
                return reply["Body"].read(limit + 1)
            finally:
                reply["Body"].close()

    def read_bytes(self, path: str, limit: int) -> bytes | None:
        """One ranged GET of at most limit+1 bytes, so a planted huge object is never read whole."""
        return self._read(self._key(path), limit)

    def read_many(self, reads: list[tuple[str, int]]) -> list[bytes | None]:
        """Every ranged GET in flight at once (WORKERS at most): one round trip for a publish's
        state and journal. When several fail, the first in order is raised, as reading one
        after another would (a missing bucket is reported at the state, whichever answer came
        back first)."""
        found: list = [None] * len(reads)
        failed: list = [None] * len(reads)

        def read(index: int) -> None:
            try:
                found[index] = self.read_bytes(*reads[index])
            except DistributorError as error:
                failed[index] = error
        in_parallel(WORKERS, read, range(len(reads)))
        first = next((error for error in failed if error is not None), None)
        if first is not None:
            raise first
        return found

    def measure(self, path: str, size: int, digest: bool) -> tuple[int, str | None] | None:
        """One HEAD; an object of another size than `size` is not read. The stored ChecksumSHA256
        is the digest when it is of the full object (a multipart upload's composite
        "<digest>-<parts>" is not), else a ranged GET reads at most `size + 1` bytes: the object
        may have been replaced by a larger one since the HEAD."""
        key = self._key(path)
        head = self._call("inspect", key, "head_object", NOT_FOUND, Key=key, ChecksumMode="ENABLED")
        if head is None:
            return None
        found = head["ContentLength"]
        if not digest or found != size:
            return found, None
        stored = full_object_digest(head)
        if stored:
            return found, stored
        if not found:
            return found, "sha256:" + hashlib.sha256(b"").hexdigest()
        reply = self._call("read", key, "get_object", NOT_FOUND, Key=key, Range="bytes=0-%d" % size)
        if reply is None:
            return None
        with self._errors("read", key):
            try:
                return found, hash_stream(reply["Body"].read, size + 1)
            finally:
                reply["Body"].close()

    def doubt(self, path: str, size: int | None = None, sha256: str | None = None, own_build: bool = False) -> str | None:
        """An object's owner in S3 is the bucket's owner (with Object Ownership's default,
        BucketOwnerEnforced), whoever wrote it: the digest alone vouches, the ChecksumSHA256
        every upload of distributor carries (measure). S3 has no staging, so a name only
        distributor gives is one it may remove; nor links, so `own_build` changes nothing."""
        return verdict(None, None, None, size, sha256, lambda: self.measure(path, size, True))

    def doubt_many(self, asked: list[tuple[str, int | None, str | None]], own_build: bool = False) -> list[str | None]:
        """One HEAD per object (and a ranged GET where no full-object checksum is stored),
        WORKERS at a time, as delete_many asks: recovery of a killed publish of thousands of
        files would otherwise wait for each in turn."""
        answers: list = [None] * len(asked)

        def ask(index: int) -> None:
            answers[index] = self.doubt(*asked[index], own_build=own_build)
        in_parallel(WORKERS, ask, range(len(asked)))
        return answers

    def doubt_files(self, paths: list[str]) -> list[str | None]:
        """Nothing to doubt, and no request: an object has no owner that tells one writer of
        the bucket from another, and whoever may write the prefix may delete its objects
        directly, so no principal gains a right through distributor. The bucket policy is the
        boundary (docs/untrusted-destinations.md, records and files of other accounts)."""
        return [None] * len(paths)

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        """A file of one part is one PUT; larger files go multipart, PARTS_IN_FLIGHT at a time.
        Reading on past SMALL_BODY waits for a LARGE_BODIES slot (see the module docstring).
        The state and the journal are written with s3_record_args: never served by the outputs' ACL."""
        key = self._key(path)
        stream = iter(chunks)
        settings = s3_record_args(self._settings) if is_reserved(path) else s3_object_args(self._settings, path)
        first: list = []
        size = gather(stream, first, 0, SMALL_BODY)
        if size <= SMALL_BODY:
            self._put(key, first, settings)
            return
        with self._large_bodies:
            size = gather(stream, first, size, PART_SIZE)
            if size <= PART_SIZE:
                self._put(key, first, settings)
            else:
                self._multipart(key, settings, PartReader(itertools.chain(first, stream)))

    def _put(self, key: str, chunks: list, settings: dict) -> None:
        """One PUT of a body held whole, with the SHA-256 S3 checks it against."""
        body = b"".join(chunks)
        self._call("write", key, "put_object", Key=key, Body=body, ChecksumAlgorithm="SHA256",
                   ChecksumSHA256=checksum(body), **settings)

    def _multipart(self, key: str, settings: dict, reader: PartReader) -> None:
        """The object appears only when the upload completes; an abandoned upload is aborted so
        it neither appears nor keeps costing storage.

        Each part is read into one of the storage's PARTS_IN_FLIGHT part buffers, taken before
        the part is read and given back when its upload ends: memory is those buffers whatever
        the file size or the number of files, and reusing them keeps the allocator from holding
        on to a freed 8 MiB block per thread (a fresh `bytes` per part grew the peak by about
        20 MiB a part in flight)."""
        upload = self._call(
            "start upload of", key, "create_multipart_upload", Key=key, ChecksumAlgorithm="SHA256", **settings
        )["UploadId"]
        in_flight: deque = deque()

        def send(number: int, buffer: bytearray, size: int) -> dict:
            try:
                body = buffer if size == len(buffer) else bytes(memoryview(buffer)[:size])
                digest = checksum(body)
                reply = self._call("write", key, "upload_part", Key=key, UploadId=upload, PartNumber=number, Body=body,
                                   ChecksumAlgorithm="SHA256", ChecksumSHA256=digest)
                return {"ETag": reply["ETag"], "PartNumber": number, "ChecksumSHA256": digest}
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

    def resettle(self, path: str, sha256: str, size: int) -> bool:
        """A copy of the object onto itself with its settings replaced: S3 copies the bytes
        inside the bucket, none are uploaded. Only an object whose full-object ChecksumSHA256 and
        length are the recorded ones, and only that very object (the copy is conditional on the
        ETag the HEAD saw); one over S3's 5 GiB copy limit is written again instead."""
        key = self._key(path)
        head = self._call("inspect", key, "head_object", NOT_FOUND, Key=key, ChecksumMode="ENABLED")
        if head is None or head["ContentLength"] != size or size > COPY_LIMIT or full_object_digest(head) != sha256:
            return False
        copied = self._call("change the settings of", key, "copy_object", ("PreconditionFailed",), Key=key,
                            CopySource={"Bucket": self.bucket, "Key": key}, CopySourceIfMatch=head["ETag"],
                            MetadataDirective="REPLACE", ChecksumAlgorithm="SHA256",
                            **s3_object_args(self._settings, path))
        return copied is not None

    def resettle_many(self, items: Iterable[tuple[str, str, int]]) -> list[str]:
        """resettle() WORKERS at a time, as writes go: each is a round trip or two."""
        again: list[str] = []
        in_parallel(WORKERS, lambda item: None if self.resettle(*item) else again.append(item[0]), items)
        return sorted(again)

    def delete(self, path: str) -> bool:
        """S3 deletes a missing key without complaint; asking first keeps the contract that delete
        says whether something was removed."""
        if not self.exists(path):
            return False
        self.discard(path)
        return True

    def discard(self, path: str) -> None:
        """One DeleteObject: S3 deletes a missing key without complaint."""
        self._call("delete", self._key(path), "delete_object", Key=self._key(path))

    def delete_many(self, paths: Iterable[str]) -> list[str]:
        """Only the paths that exist are reported: up to WORKERS paths are asked for with one
        HEAD each, all at once (one round trip, where a listing of a large prefix takes one per
        thousand keys, one after another); more are found in one listing. Then each request
        deletes up to DELETE_BATCH keys."""
        wanted = list(dict.fromkeys(paths))
        if len(wanted) > WORKERS:
            present = set(self.list_files())
        else:
            present = set()
            in_parallel(WORKERS, lambda path: present.add(path) if self.exists(path) else None, wanted)
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
        """A HEAD request: delete asks first so that it can report whether the key was there.
        The storage contract tests observe every backend through it."""
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

    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> ContextManager[Lease]:
        """The protocol of lease.held over S3Lock."""
        return held(S3Lock(self), self.token, timeout, expiry)
