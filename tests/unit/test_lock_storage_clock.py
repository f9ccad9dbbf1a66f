# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Locks judged on the storage's own clock, against the real servers: OpenSSH sshd (the lock
file's mtime against that of a probe file created there) and moto's S3 server (LastModified
against the Date of its reply; one moto is run under libfaketime so the test can move the
server's clock). A record's own times, written by a publisher's clock, decide nothing."""

from __future__ import annotations

import json
import os
import time
import tracemalloc

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import LOCK_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.s3.lock import S3Lock
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

from services import S3Server

BASE = "reports/2024-05-01"
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
PLANTED_LOCK_BYTES = 256 * 1024 * 1024
# "At once" against the 600 s lease a dead holder declared and the run's lock_timeout of 30 s: a
# wide margin over the second or so it takes, which a busy host may stretch.
AT_ONCE = 20
READ_PEAK_LIMIT = 4 * 1024 * 1024


def behind_by_an_hour() -> bytes:
    """What a live holder whose clock is an hour behind writes: `expires_at` looks long past to
    everyone else."""
    now = time.time() - 3600
    return json.dumps({"holder": "web1:42", "token": "live", "acquired_at": now, "expires_at": now + 600,
                       "expiry": 600}).encode()


def locked(storage, timeout: float) -> DistributorError:
    with pytest.raises(DistributorError) as caught:
        with storage.lock(timeout=timeout):
            pass
    assert caught.value.reason == "locked", caught.value
    return caught.value


@pytest.fixture
def sftp(sshd_server, tmp_path):
    root = tmp_path / "root"
    (root / BASE).mkdir(parents=True)
    storages = []

    def opened(token: str = "t1"):
        storages.append(open_storage(sshd_server.storage(str(root)), BASE, token))
        return storages[-1]

    yield opened, root / BASE
    for storage in storages:
        storage.close()


@pytest.fixture
def s3(s3_server):
    bucket = s3_server.create_bucket()
    return (lambda token="t1": open_storage(s3_server.storage(bucket, prefix="site"), BASE, token)), \
        (s3_server.client(), bucket, "site/%s/%s" % (BASE, LOCK_NAME))


def test_sftp_a_live_lock_is_kept_whatever_its_holders_clock_wrote(sftp):
    opened, directory = sftp
    (directory / LOCK_NAME).write_bytes(behind_by_an_hour())
    error = locked(opened(), timeout=1)
    assert '"web1:42"' in error.message
    assert json.loads((directory / LOCK_NAME).read_bytes())["token"] == "live"


def test_sftp_a_lock_judged_dead_leaves_no_clock_probe_or_guard_behind(sftp):
    opened, directory = sftp
    (directory / LOCK_NAME).write_bytes(behind_by_an_hour())
    locked(opened("waiting"), timeout=1)
    old = time.time() - 7200
    os.utime(directory / LOCK_NAME, (old, old))
    started = time.monotonic()
    with opened("next").lock(timeout=30):
        assert time.monotonic() - started < AT_ONCE, "a lock the server dates two hours old is broken at once"
        assert json.loads((directory / LOCK_NAME).read_bytes())["token"] == "next"
    assert sorted(os.listdir(directory)) == []


# A lock that can never expire, as planted: a record declaring an endless lease, and a lock file
# whose modification time lies ten years ahead of the server's clock. Both are broken by a run
# whose lock.expiry is EXPIRY: not before EXPIRY (less the storage's resolution), and before LATE; a
# live holder is not, in the same time. Time is the behaviour, so the bounds are wide: a busy host
# delays a break (the upper bounds, and the lock_timeout WAIT), it never brings one forward.
EXPIRY = 2.0
LATE = 5 * EXPIRY
WAIT = 30.0
TEN_YEARS = 10 * 365 * 24 * 3600.0


def endless(now: float) -> bytes:
    return json.dumps({"holder": "ghost:1", "token": "planted", "acquired_at": now, "expires_at": 1e300,
                       "expiry": 1e300}).encode()


def broken_within(storage, read_token) -> float:
    """Take the lock with lock.expiry EXPIRY and lock_timeout WAIT; the seconds it took."""
    started = time.monotonic()
    with storage.lock(timeout=WAIT, expiry=EXPIRY):
        took = time.monotonic() - started
        assert read_token() == "t1"
    return took


def test_sftp_a_lock_declaring_an_endless_lease_is_broken_after_lock_expiry(sftp):
    opened, directory = sftp
    (directory / LOCK_NAME).write_bytes(endless(time.time()))
    took = broken_within(opened(), lambda: json.loads((directory / LOCK_NAME).read_bytes())["token"])
    assert took < LATE, "the server dates it older than lock.expiry (plus its resolution) by then"


def test_sftp_a_lock_dated_ten_years_ahead_is_broken_once_seen_unchanged_for_lock_expiry(sftp):
    opened, directory = sftp
    (directory / LOCK_NAME).write_bytes(behind_by_an_hour())
    ahead = time.time() + TEN_YEARS
    os.utime(directory / LOCK_NAME, (ahead, ahead))
    took = broken_within(opened(), lambda: json.loads((directory / LOCK_NAME).read_bytes())["token"])
    assert EXPIRY - 0.5 <= took < LATE, "watched unchanged for lock.expiry on the contender's clock"
    assert os.listdir(directory) == [], "released, and no clock probe or guard left"


def assert_a_live_holder_keeps_its_lock(opened, read_token, plant_ahead=lambda: None) -> None:
    """A holder with the same lock.expiry renews every third of it; a contender waiting several
    expiries never breaks it, even when the holder's lock was first stamped ahead."""
    with opened("holder").lock(timeout=WAIT, expiry=EXPIRY) as lease:
        plant_ahead()
        error = locked_with(opened("t1"), timeout=3 * EXPIRY)
        lease.confirm("writing .distributor.json")
        assert read_token() == "holder"
    assert "Retry later" in error.message


def locked_with(storage, timeout: float) -> DistributorError:
    with pytest.raises(DistributorError) as caught:
        with storage.lock(timeout=timeout, expiry=EXPIRY):
            pass
    assert caught.value.reason == "locked", caught.value
    return caught.value


def test_sftp_a_live_holder_is_never_broken(sftp):
    opened, directory = sftp

    def plant_ahead() -> None:
        ahead = time.time() + TEN_YEARS
        os.utime(directory / LOCK_NAME, (ahead, ahead))

    assert_a_live_holder_keeps_its_lock(opened, lambda: json.loads((directory / LOCK_NAME).read_bytes())["token"],
                                        plant_ahead)


def test_sftp_a_planted_256_mib_lock_is_never_read_whole(sftp):
    opened, directory = sftp
    with open(directory / LOCK_NAME, "wb") as handle:
        handle.truncate(PLANTED_LOCK_BYTES)
    assert_polled_without_reading_whole(opened(), "a 256 MiB lock")


def assert_polled_without_reading_whole(storage, what: str) -> None:
    """Waiting for a planted oversized lock holds no more than a bounded read of it."""
    storage.exists(LOCK_NAME)  # connect, or set the client up, outside the measurement
    tracemalloc.start()
    try:
        error = locked(storage, timeout=1.5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "an unknown holder" in error.message
    assert peak < READ_PEAK_LIMIT, "%d bytes held while polling %s" % (peak, what)


def test_s3_a_live_lock_is_kept_whatever_its_holders_clock_wrote(s3):
    opened, (client, bucket, key) = s3
    client.put_object(Bucket=bucket, Key=key, Body=behind_by_an_hour())
    error = locked(opened(), timeout=1)
    assert '"web1:42"' in error.message
    assert json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read())["token"] == "live"


def test_s3_a_lock_is_dated_by_last_modified_against_the_replys_date(s3):
    opened, (client, bucket, key) = s3
    record = behind_by_an_hour()
    client.put_object(Bucket=bucket, Key=key, Body=record)
    lock = S3Lock(opened())
    seen = lock.read()
    assert seen.raw == record and seen.version
    assert 0 <= lock.now() - seen.stamp < 30, "moto dates the object and its reply on one clock"


def test_s3_a_lock_declaring_an_endless_lease_is_broken_after_lock_expiry(s3):
    opened, (client, bucket, key) = s3
    client.put_object(Bucket=bucket, Key=key, Body=endless(time.time()))
    took = broken_within(opened(), lambda: json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read())["token"])
    assert took < LATE, "S3 dates it older than lock.expiry (plus its resolution) by then"


def test_s3_a_live_holder_is_never_broken(s3):
    opened, (client, bucket, key) = s3
    assert_a_live_holder_keeps_its_lock(
        opened, lambda: json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read())["token"])


def test_s3_a_planted_oversized_lock_is_never_read_whole(s3):
    opened, (client, bucket, key) = s3
    client.put_object(Bucket=bucket, Key=key, Body=b"{" * (32 * 1024 * 1024))
    assert_polled_without_reading_whole(opened(), "a 32 MiB lock")


@pytest.fixture
def shifted_s3(tmp_path):
    """moto's S3 server on a clock the test moves: libfaketime reads the offset from a file at
    every call (FAKETIME_NO_CACHE)."""
    if not os.path.exists(LIBFAKETIME):
        pytest.fail("%s is missing: install Debian's faketime package (see .ci/run)" % LIBFAKETIME)
    offset = tmp_path / "faketime"
    offset.write_text("-3h\n")
    server = S3Server(str(tmp_path / "moto"), wrapper=(
        "env", "LD_PRELOAD=" + LIBFAKETIME, "FAKETIME_TIMESTAMP_FILE=%s" % offset, "FAKETIME_NO_CACHE=1"))
    os.makedirs(server.directory)
    server.start()
    yield server, offset
    server.stop()


def test_s3_a_lock_whose_holder_died_hours_ago_on_the_servers_clock_is_broken_at_once(shifted_s3):
    server, offset = shifted_s3
    bucket = server.create_bucket()
    storage = open_storage(server.storage(bucket, prefix="site"), BASE, "next")
    key = "site/%s/%s" % (BASE, LOCK_NAME)
    now = time.time()
    dead = {"holder": "ghost:1", "token": "dead", "acquired_at": now, "expires_at": now + 600, "expiry": 600}
    server.client().put_object(Bucket=bucket, Key=key, Body=json.dumps(dead).encode())
    written = server.client().head_object(Bucket=bucket, Key=key)["LastModified"].timestamp()
    assert now - 3 * 3600 - 60 < written < now - 3 * 3600 + 60, "moto stamped the lock on its own clock, 3 h back"
    offset.write_text("+0\n")
    started = time.monotonic()
    with storage.lock(timeout=30):
        assert time.monotonic() - started < AT_ONCE, "LastModified three hours before the reply's Date: dead at once"
        assert json.loads(server.client().get_object(Bucket=bucket, Key=key)["Body"].read())["token"] == "next"


def test_s3_a_lock_dated_ahead_of_the_servers_clock_is_broken_once_seen_unchanged_for_lock_expiry(shifted_s3):
    """S3 stamps LastModified itself, so a lock dated ahead is one written before the server's
    clock was set back: here moto writes it ten years ahead, then its clock returns."""
    server, offset = shifted_s3
    bucket = server.create_bucket()
    key = "site/%s/%s" % (BASE, LOCK_NAME)
    offset.write_text("+3650d\n")
    server.client().put_object(Bucket=bucket, Key=key, Body=behind_by_an_hour())
    offset.write_text("+0\n")
    storage = open_storage(server.storage(bucket, prefix="site"), BASE, "t1")
    lock = S3Lock(storage)
    seen = lock.read()
    assert seen.stamp - lock.now() > TEN_YEARS - 30 * 24 * 3600, "LastModified lies ten years after the reply's Date"
    took = broken_within(storage, lambda: json.loads(server.client().get_object(Bucket=bucket, Key=key)["Body"].read())["token"])
    assert EXPIRY - 0.5 <= took < LATE, "watched unchanged for lock.expiry on the contender's clock"
