# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`verify: sha256` reads no more of a managed output than its record's size: a file planted at an
output's name, much larger than the record, is reported drifted from its size alone, on every
backend. Before, SFTP prefetched the planted file whole (paramiko buffers it faster than the
digest consumes it), S3 fetched the whole object and local storage hashed it to its end.

Reads are counted where each backend makes them: os.read for local storage, the files paramiko
opens and the bytes read replies bring for SFTP, the GetObject requests botocore sends for S3.
"""

from __future__ import annotations

import hashlib
import os

import paramiko
import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp import wire as sftp_wire
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.base import hash_stream
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

import builders
from builders import write_bundle

BUNDLE_PATH = "site"
PIPELINE = {"id": "reports", "outputs": [{"match": "*.txt"}]}
GiB = 1024 ** 3
S3_GROWTH = 8 * 1024 * 1024


class Place(builders.Place):
    """One destination on one backend, and a record of what each backend reads there."""

    def __init__(self, kind: str, tmp_path, request, monkeypatch):
        super().__init__(kind, tmp_path, request)
        self.read: list = []  # (name or None, bytes asked or read)
        self.monkeypatch = monkeypatch

    def grow(self, name: str, extra: int) -> None:
        """The output `name` with `extra` bytes more than published: sparse zeros on disk."""
        if self.kind == "s3":
            key = "%s/%s" % (BUNDLE_PATH, name)
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
            self.client.put_object(Bucket=self.bucket, Key=key, Body=body + b" " * extra)
            return
        path = self.root / BUNDLE_PATH / name
        with open(path, "r+b") as handle:
            handle.truncate(os.path.getsize(path) + extra)

    def opener(self, storage: dict, base: str, token: str):
        """open_storage, with the reads of this backend counted from here on."""
        opened = open_storage(storage, base, token)
        read = self.read
        if self.kind == "s3":
            def get(params, **_):
                read.append((params["Key"].rpartition("/")[2], None))
            opened.client.meta.events.register("before-parameter-build.s3.GetObject", get)
        elif self.kind == "sftp":
            opens, data = paramiko.SFTPClient.open, sftp_wire.Pipe.data

            def counted_open(client, name, *args, **kwargs):
                read.append((os.path.basename(name.decode() if isinstance(name, bytes) else name), None))
                return opens(client, name, *args, **kwargs)

            def counted_data(pipe, number):
                got = data(pipe, number)
                read.append((None, len(got)))
                return got
            self.monkeypatch.setattr(paramiko.SFTPClient, "open", counted_open)
            self.monkeypatch.setattr(sftp_wire.Pipe, "data", counted_data)
        else:
            plain = os.read

            def counted_read(fd, count):
                data = plain(fd, count)
                read.append((None, len(data)))
                return data
            self.monkeypatch.setattr(os, "read", counted_read)
        return opened


@pytest.fixture(params=["local", "sftp", "s3"])
def place(request, tmp_path, monkeypatch):
    return Place(request.param, tmp_path, request, monkeypatch)


def test_an_output_grown_far_past_its_record_is_drifted_without_being_read(place, tmp_path):
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": b"a\n", "b.txt": b"b\n"})
    publish(bundle, PIPELINE, place.destination, opener=open_storage)
    place.grow("a.txt", S3_GROWTH if place.kind == "s3" else GiB)
    info = state_info(place.destination, pipeline_id="reports", verify="sha256", opener=place.opener)
    assert (info["drifted"], info["missing"]) == (["a.txt"], [])
    assert ("a.txt", None) not in place.read
    assert sum(size or 0 for _name, size in place.read) < 64 * 1024


def test_an_output_of_its_recorded_size_is_still_hashed(place, tmp_path):
    """The size alone lets a same-size edit through; the digest is what catches it."""
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": b"aaaa"})
    publish(bundle, PIPELINE, place.destination, opener=open_storage)
    if place.kind == "s3":
        place.client.put_object(Bucket=place.bucket, Key=BUNDLE_PATH + "/a.txt", Body=b"AAAA")
    else:
        (place.root / BUNDLE_PATH / "a.txt").write_bytes(b"AAAA")
    assert state_info(place.destination, pipeline_id="reports", verify="size")["drifted"] == []
    assert state_info(place.destination, pipeline_id="reports", verify="sha256")["drifted"] == ["a.txt"]


def test_a_digest_reads_at_most_its_limit_of_a_file_that_keeps_growing():
    """A file grown between its size and its digest is hashed one byte past the record (so it
    differs), not read to an end that may never come."""
    asked = []

    def endless(count: int) -> bytes:
        asked.append(count)
        return b"x" * count
    assert hash_stream(endless, 5) == "sha256:" + hashlib.sha256(b"xxxxx").hexdigest()
    assert sum(asked) == 5
