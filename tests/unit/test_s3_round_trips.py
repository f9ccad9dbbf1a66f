# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Round trips to S3, which latency makes the cost of a publish: what distributor sends, seen
as botocore hands each request to the network, against moto's S3 server."""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.storage import s3
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage


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
