# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""S3 checks the bytes end to end: every PUT and every part of a multipart upload carries its
SHA-256, and S3's refusal of a mismatch is verification_failed naming the output, against moto's
S3 server.

moto (5.2) stores and returns the checksum it is sent but does not verify it against the body
(its `_get_checksum` leaves that as a TODO), so it cannot refuse a wrong one. The tests therefore
record the checksum headers distributor sends, read them back with ChecksumMode=ENABLED, and put
AWS's refusal (BadDigest) in moto's place through botocore's before-call hook to show how
distributor reports it and that the refused attempt leaves nothing behind."""

from __future__ import annotations

import base64
import hashlib

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.s3 import bodies
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.s3 import storage as s3
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage


def b64sha(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode("ascii")


@pytest.fixture
def storage(s3_server):
    bucket = s3_server.create_bucket()
    opened = open_storage(s3_server.storage(bucket), "site", "t1")
    opened.bucket_name = bucket
    yield opened
    opened.close()


def header(request, name: str):
    value = request.headers.get(name)
    return value.decode("ascii") if isinstance(value, bytes) else value


def sent_checksums(storage) -> list:
    """(x-amz-checksum-sha256, x-amz-checksum-algorithm) of every request the storage's client
    sends with either."""
    sent = []

    def record(request, **_):
        found = (header(request, "x-amz-checksum-sha256"), header(request, "x-amz-checksum-algorithm"))
        if any(found):
            sent.append(found)
    storage.client.meta.events.register("before-send.s3", record)
    return sent


def refuse(storage, operation: str) -> None:
    """Answer `operation` as AWS answers a body that does not match its checksum."""
    def bad_digest(**_):
        response = {"Error": {"Code": "BadDigest", "Message": "The SHA256 you specified did not match the calculated checksum."},
                    "ResponseMetadata": {"HTTPStatusCode": 400}}
        return type("Http", (), {"status_code": 400, "headers": {}})(), response
    storage.client.meta.events.register("before-call.s3.%s" % operation, bad_digest)


def test_a_single_part_upload_sends_the_sha256_and_s3_keeps_it(storage, s3_server):
    body = b"<p>report</p>"
    sent = sent_checksums(storage)
    storage.write("report.html", [body[:4], body[4:]])
    assert [value for value, _algorithm in sent] == [b64sha(body)]
    head = s3_server.client().head_object(Bucket=storage.bucket_name, Key="site/report.html", ChecksumMode="ENABLED")
    assert head["ChecksumSHA256"] == b64sha(body)


def test_a_multipart_upload_sends_each_parts_sha256(storage, s3_server):
    body = bytes(range(256)) * (s3.PART_SIZE // 256) + b"tail"
    sent = sent_checksums(storage)
    storage.write("big.bin", [body[i:i + (1 << 20)] for i in range(0, len(body), 1 << 20)])
    parts = [body[:s3.PART_SIZE], body[s3.PART_SIZE:]]
    assert sorted(value for value, _algorithm in sent if value) == sorted(b64sha(part) for part in parts)
    assert any(algorithm == "SHA256" for _value, algorithm in sent), "the upload was not created for SHA-256"
    client = s3_server.client()
    assert client.get_object(Bucket=storage.bucket_name, Key="site/big.bin")["Body"].read() == body


@pytest.mark.parametrize("operation, size", [("PutObject", 10), ("UploadPart", s3.PART_SIZE + 10)])
def test_a_refused_checksum_is_verification_failed_naming_the_output_and_leaves_nothing(storage, s3_server, operation, size):
    refuse(storage, operation)
    with pytest.raises(DistributorError) as caught:
        storage.write("img/chart.png", [b"x" * size])
    assert caught.value.reason == "verification_failed"
    assert "s3://%s/site/img/chart.png" % storage.bucket_name in str(caught.value)
    client = s3_server.client()
    assert client.list_objects_v2(Bucket=storage.bucket_name).get("KeyCount") == 0
    assert not client.list_multipart_uploads(Bucket=storage.bucket_name).get("Uploads"), "the refused upload was not aborted"


@pytest.mark.parametrize("error, refused", [
    ({"Code": "BadDigest"}, True),
    ({"Code": "XAmzContentSHA256Mismatch"}, True),
    ({"Code": "InvalidRequest", "Message": "Value for x-amz-checksum-sha256 header is invalid."}, True),
    ({"Code": "InvalidRequest", "Message": "Bucket is missing ObjectLockConfiguration"}, False),
    ({"Code": "AccessDenied"}, False),
])
def test_only_a_checksum_refusal_is_verification_failed(error, refused):
    assert bodies.refused_checksum({"Error": error}) is refused
