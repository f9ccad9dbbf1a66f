# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every read of destination content is bounded: a state record, a journal, a lock record or an
old output planted at any size is refused (or left unshown) after its bound, and memory does not
grow with it.

Each operation runs in a child Python, whose peak memory is its own (VmHWM, reset when the child
starts: Linux carries ru_maxrss over from the parent through fork and exec): sparse files of
2 GiB (local, SFTP) and objects of 64 MiB (S3, in moto) are planted, and the child's peak must stay
far below what reading them would take. The state and journal limits (512 and 256 MiB, far above
what any real record reaches) are lowered in the child to 1 MiB, so that a bounded read stays small
while an unbounded one still reads the whole planted file.

`verify: sha256` against a 1 GiB object planted at an output in S3 is judged by the bytes that
reach the process (every socket read counted), not by memory or time.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.contentdiff import FILE_BOUND
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import LOCK_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, LOCK_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

import builders
from builders import write_bundle

TEST_LIMIT = 1024 * 1024
SPARSE_SIZE = 2 * 1024 ** 3
S3_SIZE = 64 * 1024 * 1024
PEAK_MIB = 200
GROWTH_MIB = 32  # what the operation may add to the child's peak, its backend library loaded
BUNDLE_PATH = "site"
PIPELINE = {"id": "reports", "outputs": [{"match": "*.txt"}]}

CHILD = r"""
import json, sys
paths, request = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.path[:0] = paths
from ansible_collections.distributor.core.plugins.module_utils._distributor.execution import root
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

def peak_mib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024.0

with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # a peak starting at this process's own: ru_maxrss starts at the parent's

for name, value in request["limits"].items():
    setattr(root, name, value)
warm = open_storage(request["destination"]["storage"], "", "warmup")
warm.exists("warm-up")  # loads the backend's library and connects, as the operation will
warm.close()
before = peak_mib()
try:
    if request["operation"] == "state_info":
        out = {"result": state_info(request["destination"], pipeline_id="reports")}
    else:
        out = {"result": publish(request["source"], request["pipeline"], request["destination"], check_mode=True,
                                 diff_contents=True)}
except DistributorError as error:
    out = {"reason": error.reason, "message": error.message}
out.update(before=before, peak=peak_mib())
print(json.dumps(out, default=str))
"""


def in_child(operation: str, destination: dict, **request) -> dict:
    """Run `operation` in a fresh Python; its outcome with the child's peak memory (MiB)."""
    paths = [p for p in sys.path if p]
    request = dict(request, operation=operation, destination=destination, limits=request.get("limits", {}))
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(paths), json.dumps(request)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["peak"] < PEAK_MIB and out["peak"] - out["before"] < GROWTH_MIB, (
        "peak memory %.0f MiB (%.0f MiB before the operation)" % (out["peak"], out["before"]))
    return out


class Place(builders.Place):
    """One destination on one backend, where a test plants a file of any size."""

    def plant(self, name: str, head: bytes = b"") -> None:
        """`head` followed by filler: 2 GiB of zeros, sparse, on local and SFTP; 64 MiB of spaces
        in S3 (a read of zeros from a socket hardly shows in the reader's peak memory)."""
        if self.kind == "s3":
            body = head + b" " * (S3_SIZE - len(head))
            self.client.put_object(Bucket=self.bucket, Key="%s/%s" % (BUNDLE_PATH, name), Body=body)
            return
        with open(self.root / BUNDLE_PATH / name, "wb") as handle:
            handle.write(head)
            handle.truncate(SPARSE_SIZE)


@pytest.fixture(params=["local", "sftp", "s3"])
def place(request, tmp_path):
    return Place(request.param, tmp_path, request)


def test_a_huge_state_record_is_invalid_state_naming_it_and_its_limit_without_being_read_whole(place, tmp_path):
    place.plant(STATE_NAME, b'{"schema_version": 2, "outputs": [')
    info = in_child("state_info", place.destination, limits={"STATE_LIMIT": TEST_LIMIT})["result"]
    assert (info["exists"], info["valid"], info["owners"]) == (True, False, [])
    assert "%s is larger than %d bytes" % (STATE_NAME, TEST_LIMIT) in info["error"]
    source = write_bundle(tmp_path / "bundle", {"a.txt": b"a\n"})
    refused = in_child("publish", place.destination, source=source, pipeline=PIPELINE, limits={"STATE_LIMIT": TEST_LIMIT})
    assert refused["reason"] == "invalid_state"
    assert "%s is larger than %d bytes" % (STATE_NAME, TEST_LIMIT) in refused["message"]


def test_a_huge_journal_is_invalid_state_naming_it_and_its_limit_without_being_read_whole(place, tmp_path):
    place.plant(JOURNAL_NAME, b'{"token": "t", "writes": [')
    info = in_child("state_info", place.destination, limits={"JOURNAL_LIMIT": TEST_LIMIT})["result"]
    assert info["valid"] is False and "%s is larger than %d bytes" % (JOURNAL_NAME, TEST_LIMIT) in info["error"]
    source = write_bundle(tmp_path / "bundle", {"a.txt": b"a\n"})
    refused = in_child("publish", place.destination, source=source, pipeline=PIPELINE, limits={"JOURNAL_LIMIT": TEST_LIMIT})
    assert refused["reason"] == "invalid_state"
    assert "%s is larger than %d bytes" % (JOURNAL_NAME, TEST_LIMIT) in refused["message"]


def test_a_huge_lock_record_is_an_unreadable_holder_read_no_further_than_its_limit(place):
    place.plant(LOCK_NAME, b'{"holder": "' + b"h" * LOCK_LIMIT)
    info = in_child("state_info", place.destination)["result"]
    assert info["lock"] == {"holder": None, "acquired_at": None, "expires_at": None, "expired": True}


def test_a_huge_old_output_is_not_shown_under_diff_and_is_read_no_further_than_the_bound(place, tmp_path):
    first = write_bundle(tmp_path / "v1", {"a.txt": b"old\n", "b.txt": b"b\n"}, created="2026-06-03T00:00:00Z")
    publish(first, PIPELINE, place.destination, opener=open_storage)
    place.plant("a.txt", b"grown\n")
    second = write_bundle(tmp_path / "v2", {"a.txt": b"new\n", "b.txt": b"b2\n"})
    result = in_child("publish", place.destination, source=second, pipeline=PIPELINE)["result"]
    entries = {entry["after_header"].rpartition("/")[2]: entry for entry in result["diff"][1:]}
    assert entries["a.txt"]["prepared"].endswith(
        "old content has grown past its record's 4 bytes, over the bound of %d bytes per file\n" % FILE_BOUND)
    assert (entries["b.txt"]["before"], entries["b.txt"]["after"]) == ("b\n", "b2\n")


# -- verify against a planted object of 1 GiB -------------------------------------------------

PLANTED_SIZE = 1024 ** 3
RECORDED = b"<p>the page as published</p>\n" * 2048  # 60 KiB
OVERHEAD = 64 * 1024  # what the run receives besides the output's bytes: headers, the records


def plant_zeros(server, bucket: str, key: str, size: int) -> None:
    """`size` zero bytes PUT at `key` through a presigned URL, streamed: its payload is not signed
    (boto3 would hash a signed one whole first), and the test never holds it whole."""
    url = urlsplit(server.client().generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": key}))
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    connection.putrequest("PUT", "%s?%s" % (url.path, url.query))
    connection.putheader("Content-Length", str(size))
    connection.endheaders()
    zeros = bytes(8 * 1024 * 1024)
    for start in range(0, size, len(zeros)):
        connection.send(zeros[:size - start])
    reply = connection.getresponse()
    assert reply.status == 200, reply.read()
    connection.close()


class Received:
    """Every byte the test's process reads from a socket, and the GETs of one key: their Range
    and the length each reply declares."""

    def __init__(self, monkeypatch, key: str):
        self.key = key
        self.restart()
        for name in ("recv", "recv_into"):
            monkeypatch.setattr(socket.socket, name, self._counting(getattr(socket.socket, name)))

    def restart(self) -> None:
        self.bytes, self.gets = 0, []

    def _counting(self, receive):
        def counted(sock, *args, **kwargs):
            got = receive(sock, *args, **kwargs)
            self.bytes += got if isinstance(got, int) else len(got)
            return got
        return counted

    def watch(self, storage, head_size: int | None = None):
        """Record `storage`'s GETs of the key; with `head_size`, its HEAD of the key answers that
        size, as a HEAD made right before the object was swapped for the planted one would."""
        def sent(request, **_):
            if request.url.endswith("/" + self.key):
                asked = request.headers.get("Range")
                self.gets.append([asked.decode("ascii") if asked else None, None])

        def replied(http_response, parsed, model, **_):
            if model.name == "GetObject" and self.gets and self.gets[-1][1] is None:
                self.gets[-1][1] = int(http_response.headers["Content-Length"])
            if model.name == "HeadObject" and head_size is not None and parsed.get("ContentLength") == PLANTED_SIZE:
                parsed["ContentLength"] = head_size
        storage.client.meta.events.register("before-send.s3.GetObject", sent)
        storage.client.meta.events.register("after-call.s3.*", replied)
        return storage


def test_verify_reads_no_more_of_a_planted_1_gib_s3_object_than_the_recorded_size_and_one_byte(
        s3_server, tmp_path, monkeypatch):
    """1 GiB of zeros planted at an output: measured by a HEAD only; and where the HEAD saw the
    recorded size (the object swapped right after it), by one ranged GET of that size + 1 byte,
    for state_info's verify and for publish's, which puts the output back."""
    bucket = s3_server.create_bucket()
    destination = {"id": "archive", "storage": s3_server.storage(bucket), "path": BUNDLE_PATH}
    source = write_bundle(tmp_path / "bundle", {"page.txt": RECORDED})
    publish(source, PIPELINE, destination)
    key = "%s/page.txt" % BUNDLE_PATH
    plant_zeros(s3_server, bucket, key, PLANTED_SIZE)
    try:
        received = Received(monkeypatch, key)
        info = state_info(destination, pipeline_id="reports", verify="sha256",
                          opener=lambda *args: received.watch(open_storage(*args)))
        assert (info["drifted"], received.gets) == (["page.txt"], [])
        assert received.bytes < OVERHEAD
        for run in (lambda opener: state_info(destination, pipeline_id="reports", verify="sha256", opener=opener),
                    lambda opener: publish(source, PIPELINE, destination, verify="sha256", opener=opener)):
            received.restart()
            result = run(lambda *args: received.watch(open_storage(*args), head_size=len(RECORDED)))
            assert ["page.txt"] in (result.get("drifted"), result.get("repaired")), result
            assert received.gets == [["bytes=0-%d" % len(RECORDED), len(RECORDED) + 1]], received.gets
            assert received.bytes < len(RECORDED) + 1 + OVERHEAD, received.bytes
        assert s3_server.client().head_object(Bucket=bucket, Key=key)["ContentLength"] == len(RECORDED)
    finally:
        s3_server.client().delete_object(Bucket=bucket, Key=key)
