# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Round trips to S3, which latency makes the cost of a publish: what distributor sends, seen
as botocore hands each request to the network, against moto's S3 server."""

from __future__ import annotations

import threading
import time

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, LOCK_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.s3 import storage as s3
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

from builders import write_bundle

PIPELINE = {"id": "reports", "outputs": [{"match": "*.txt"}]}


@pytest.fixture
def storage(s3_server):
    opened = open_storage(s3_server.storage(s3_server.create_bucket()), "site", "t1")
    yield opened
    opened.close()


def sent(storage) -> list:
    """(method, key, whether it asked for a 100 Continue) of every request the client sends."""
    requests = []

    def record(request, **_):
        expect = request.headers.get("Expect")
        requests.append((request.method, request.url.split("/site/", 1)[-1].split("?")[0], expect is not None))
    storage.client.meta.events.register("before-send.s3", record)
    return requests


def test_small_bodies_go_with_their_put_and_only_larger_ones_wait_for_100_continue(storage):
    """Expect: 100-continue holds a body back for a round trip: a PUT of a small output, a
    record or the lock would wait twice as long behind latency."""
    requests = sent(storage)
    storage.write_bytes("index.html", b"<p>page</p>")
    storage.write_bytes(".distributor.json", b"{}")
    with storage.lock(timeout=5):
        pass
    storage.write("big.bin", [b"x" * (s3.SMALL_BODY + 1)])
    puts = [(key, expect) for method, key, expect in requests if method == "PUT"]
    assert puts == [("index.html", False), (".distributor.json", False), (".distributor.lock", False), ("big.bin", True)]


def test_the_files_a_run_deletes_or_writes_over_cost_no_request(storage):
    """S3 objects have no owner that tells one writer of a bucket from another: nothing to
    doubt, so a replace pays nothing for the look local and SFTP storage take."""
    storage.write_bytes("index.html", b"<p>page</p>")
    requests = sent(storage)
    assert storage.doubt_files(["index.html", "gone.html"]) == [None, None]
    assert requests == []


def test_listed_times_are_read_by_datetime_and_only_header_times_by_botocore_s_parser(s3_server, monkeypatch):
    """botocore's general timestamp parser costs 50 µs a key, a fifth of a listing's time in the
    client: the listing's ISO 8601 times are read by datetime; a lock's Last-Modified header (its
    age on S3's clock) still by the general parser."""
    import botocore.utils
    general = botocore.utils.parse_timestamp
    parsed = []
    monkeypatch.setattr(botocore.utils, "parse_timestamp", lambda value: parsed.append(value) or general(value))
    storage = open_storage(s3_server.storage(s3_server.create_bucket()), "site", "t1")
    storage.write_many(("f%d.txt" % i, lambda: [b"x"]) for i in range(5))
    listing = storage.client.list_objects_v2(Bucket=storage.bucket, Prefix="site/")
    assert storage.list_files() == ["f%d.txt" % i for i in range(5)] and parsed == []
    assert all(item["LastModified"].utcoffset().total_seconds() == 0 for item in listing["Contents"])
    with storage.lock(timeout=5):
        seen = s3.S3Lock(storage).read()
    assert seen.stamp is not None and len(parsed) == 1
    storage.close()


def test_a_replace_reads_both_records_at_once_and_removes_its_journal_without_asking_first(s3_server, tmp_path):
    """Each record request of a replace, in order: the state and journal reads in flight
    together (one round trip), a lock renewal before each record written, and the journal
    removed by one DELETE, no HEAD before it: a round trip each at S3's latency."""
    destination = {"id": "archive", "storage": s3_server.storage(s3_server.create_bucket()), "path": "site"}
    files = {"a.txt": b"a", "b.txt": b"b", "c.txt": b"c"}
    publish(write_bundle(tmp_path / "one", files), PIPELINE, destination)
    requests, flying, most = [], [0], [0]
    mutex = threading.Lock()

    def watched(storage_settings, base, token):
        storage = open_storage(storage_settings, base, token)
        get_object = storage.client.get_object

        def slow_get(**kwargs):
            with mutex:
                flying[0] += 1
                most[0] = max(most[0], flying[0])
            try:
                time.sleep(0.2)
                return get_object(**kwargs)
            finally:
                with mutex:
                    flying[0] -= 1
        storage.client.get_object = slow_get
        storage.client.meta.events.register("before-send.s3", lambda request, **_: requests.append(
            (request.method, request.url.split("/site/", 1)[-1].split("?")[0])))
        return storage
    changed = write_bundle(tmp_path / "two", dict(files, **{"b.txt": b"bb"}), created="2026-06-05T00:00:00Z")
    assert publish(changed, PIPELINE, destination, opener=watched)["action"] == "replace"
    records = [request for request in requests if request[1].startswith(".distributor")]
    assert records[0] == ("PUT", LOCK_NAME) and sorted(records[1:3]) == [("GET", JOURNAL_NAME), ("GET", STATE_NAME)]
    assert records[3:] == [("PUT", LOCK_NAME), ("PUT", JOURNAL_NAME), ("PUT", LOCK_NAME), ("PUT", STATE_NAME),
                           ("DELETE", JOURNAL_NAME), ("DELETE", LOCK_NAME)], records
    assert most[0] == 2
