# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lock protocol of storage/lease.py over the memory primitive, with both clocks in the
test's hand: the storage's (what a real storage stamps on what is written to it) and the
contender's monotonic clock (advanced by the protocol's own sleeps). Publishers' wall clocks
take no part: a record's times are the holder's and only inform people."""

from __future__ import annotations

import json

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import LOCK_LIMIT, SHOWN_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import LOCK_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.lease import (
    LOCK_POLL_SECONDS, Lease, describe_holder, held, holder_record)

from memory_storage import MemoryLock, MemoryStorage, StorageClock

START = 1_780_000_000.0
HOUR = 3600.0


class Clocks:
    """The storage's clock and the contender's monotonic clock, moved together by its sleeps."""

    def __init__(self, dated: bool = True):
        self.storage_time = START
        self.monotonic = 0.0
        self.storage_clock = StorageClock(lambda: self.storage_time) if dated else None
        self.on_sleep = lambda: None

    def monotonic_now(self) -> float:
        return self.monotonic

    def sleep(self, seconds: float) -> None:
        self.monotonic += seconds
        self.storage_time += seconds
        self.on_sleep()


def storage(store: dict, clocks: Clocks, token: str) -> MemoryStorage:
    return MemoryStorage(store, "site", token, clock=clocks.storage_clock)


def plant(store: dict, clocks: Clocks, record: dict) -> None:
    """A lock record written through the primitive, so the storage dates it now."""
    MemoryLock(storage(store, clocks, "holder")).create(json.dumps(record).encode())


def take(store: dict, clocks: Clocks, timeout: float, expiry: float = 600.0, token: str = "contender"):
    """Take and release the lock as `token`; the seconds waited on the contender's own clock."""
    started = clocks.monotonic
    with held(MemoryLock(storage(store, clocks, token)), token, timeout, expiry, clocks.monotonic_now, clocks.sleep):
        assert json.loads(store["site/" + LOCK_NAME])["token"] == token
    return clocks.monotonic - started


def holder(wall_clock_offset: float, expiry: float = 600.0) -> dict:
    """The record a live holder wrote just now with its own clock `wall_clock_offset` away."""
    now = START + wall_clock_offset
    return {"holder": "web1:42", "token": "holder", "acquired_at": now, "expires_at": now + expiry, "expiry": expiry}


def test_a_lock_whose_holder_died_hours_ago_is_broken_at_once():
    store, clocks = {}, Clocks()
    plant(store, clocks, holder(0))
    clocks.storage_time += 5 * HOUR
    assert take(store, clocks, timeout=30) == 0, "no waiting: the storage says the record is five hours old"


@pytest.mark.parametrize("offset", [-HOUR, -601.0, HOUR, 24 * HOUR])
def test_a_live_lock_holds_whatever_the_holders_clock_says(offset):
    """A holder whose clock is an hour behind writes an `expires_at` that looks long past to
    everyone else; one an hour ahead, one far in the future. Neither decides anything."""
    store, clocks = {}, Clocks()
    plant(store, clocks, holder(offset))
    with pytest.raises(DistributorError) as caught:
        take(store, clocks, timeout=30)
    assert caught.value.reason == "locked" and '"web1:42"' in caught.value.message
    assert json.loads(store["site/" + LOCK_NAME])["token"] == "holder"


@pytest.mark.parametrize("declared, contender, waited",
                         [(10.0, 600.0, 11.0), (None, 10.0, 11.0), (600.0, 10.0, 11.0), (1e300, 10.0, 11.0)])
def test_a_lock_is_broken_once_the_storage_dates_it_older_than_its_lease(declared, contender, waited):
    """The lease the holder declared counts (it renews within it) up to the contender's
    `lock.expiry`: a record may make its lock expire sooner, never later. One second more for
    the storage's coarse stamps, never less."""
    store, clocks = {}, Clocks()
    record = holder(0)
    record.pop("expiry")
    plant(store, clocks, dict(record, **({"expiry": declared} if declared else {})))
    assert take(store, clocks, timeout=900, expiry=contender) == pytest.approx(waited, abs=LOCK_POLL_SECONDS * 1.5)


def test_a_storage_without_a_clock_breaks_only_a_record_unchanged_for_a_whole_expiry():
    store, clocks = {}, Clocks(dated=False)
    plant(store, clocks, holder(0, expiry=5))
    assert take(store, clocks, timeout=60) == pytest.approx(5.0, abs=LOCK_POLL_SECONDS * 1.5)


def test_a_storage_without_a_clock_never_breaks_a_record_that_keeps_changing():
    """A live holder renews: each renewal is a new record (its renewal count), so the watch
    starts again and the contender waits out its timeout."""
    store, clocks = {}, Clocks(dated=False)
    key = "site/" + LOCK_NAME
    plant(store, clocks, holder(0, expiry=5))
    renewals = iter(range(1, 10_000))

    def renew() -> None:
        if clocks.monotonic % 1.0 < LOCK_POLL_SECONDS:
            store[key] = json.dumps(dict(json.loads(store[key]), renewal=next(renewals))).encode()

    clocks.on_sleep = renew
    with pytest.raises(DistributorError) as caught:
        take(store, clocks, timeout=60)
    assert caught.value.reason == "locked" and json.loads(store[key])["token"] == "holder"


TEN_YEARS = 10 * 365 * 24 * HOUR


def test_a_lock_stamped_ahead_of_the_storages_clock_is_broken_once_seen_unchanged_for_lock_expiry():
    """A lock file whose mtime was set ten years ahead (or written before the storage's clock was
    set back) has no age on the storage's clock: the contender watches it instead."""
    store, clocks = {}, Clocks()
    clocks.storage_time += TEN_YEARS
    plant(store, clocks, holder(0))
    clocks.storage_time -= TEN_YEARS
    assert take(store, clocks, timeout=30, expiry=10) == pytest.approx(10.0, abs=LOCK_POLL_SECONDS * 1.5)


def test_a_live_holder_whose_renewals_are_stamped_ahead_is_never_broken():
    """The holder renews every second through the primitive; its storage stamps each renewal ten
    years ahead of the clock the contender reads. Each renewal is a new record, so the watch
    starts again and the contender waits out its timeout, several expiries long."""
    store, clocks = {}, Clocks()
    ahead = StorageClock(lambda: clocks.storage_time + TEN_YEARS)
    ahead.stamps = clocks.storage_clock.stamps
    live = MemoryLock(MemoryStorage(store, "site", "holder", clock=ahead))
    version = [live.create(holder_record(START, 5, "holder"))]
    renewals = iter(range(1, 10_000))

    def renew() -> None:
        if clocks.monotonic % 1.0 < LOCK_POLL_SECONDS:
            version[0] = live.replace(version[0], holder_record(START, 5, "holder", START, next(renewals)))

    clocks.on_sleep = renew
    with pytest.raises(DistributorError) as caught:
        take(store, clocks, timeout=30, expiry=5)
    assert caught.value.reason == "locked" and json.loads(store["site/" + LOCK_NAME])["token"] == "holder"
    assert "Retry later" in caught.value.message


def test_a_wait_too_short_to_watch_a_whole_lease_says_how_to_break_the_lock():
    store, clocks = {}, Clocks()
    clocks.storage_time += TEN_YEARS
    plant(store, clocks, holder(0))
    clocks.storage_time -= TEN_YEARS
    with pytest.raises(DistributorError) as caught:
        take(store, clocks, timeout=60, expiry=600)
    assert caught.value.reason == "locked"
    assert "seen unchanged for 600s (lock.expiry)" in caught.value.message
    assert "lock_timeout above that" in caught.value.message


def test_a_contender_that_breaks_a_stale_lock_leaves_a_newer_one_alone():
    """Two contenders found the same dead record; the first broke it and took the lock. The
    second's delete is conditional on the dead record, so the new lock stays."""
    store, clocks = {}, Clocks()
    plant(store, clocks, holder(0))
    clocks.storage_time += HOUR
    slow = MemoryLock(storage(store, clocks, "slow"))
    dead = slow.read()
    take_and_keep = MemoryLock(storage(store, clocks, "fast"))
    assert take_and_keep.delete(dead.version) and take_and_keep.create(holder_record(START, 600, "fast"))
    assert slow.delete(dead.version), "the dead version is gone either way"
    assert json.loads(store["site/" + LOCK_NAME])["token"] == "fast"


def test_an_oversized_lock_record_is_read_bounded_and_still_judged_by_its_age():
    store, clocks = {}, Clocks()
    MemoryLock(storage(store, clocks, "planter")).create(b"{" * (4 * LOCK_LIMIT))
    seen = MemoryLock(storage(store, clocks, "reader")).read()
    assert len(seen.raw) == LOCK_LIMIT + 1 and describe_holder(seen.raw) == "an unknown holder"
    clocks.storage_time += 601 + 1
    assert take(store, clocks, timeout=1) == 0


def test_a_long_holder_string_is_cut_in_messages():
    raw = json.dumps({"holder": "h" * 50_000 + "\x1b[2K", "acquired_at": START, "expires_at": START + 600}).encode()
    described = describe_holder(raw)
    assert len(described) < SHOWN_LIMIT + 80 and "\x1b" not in described and described.startswith('"hhh')


def test_a_renewal_whose_reply_was_lost_keeps_the_lock():
    """The write landed but its reply did not: the condition then fails on our own new record,
    which the holder recognises by its token."""
    store, clocks = {}, Clocks()
    key = "site/" + LOCK_NAME

    def lost_reply(op: str, path: str) -> None:
        if op == "renew":
            store[key] = json.dumps(dict(json.loads(store[key]), renewal=99)).encode()

    mine = MemoryStorage(store, "site", "mine", fault=lost_reply, clock=clocks.storage_clock)
    with held(MemoryLock(mine), "mine", 1, 600, clocks.monotonic_now, clocks.sleep) as lease:
        lease.confirm("writing .distributor.json")
        assert json.loads(store[key])["renewal"] == 99


def test_a_lease_renews_on_the_runs_own_check_once_the_heartbeat_falls_behind():
    now, renewals = [0.0], []
    lease = Lease(lambda: renewals.append(now[0]) or True, lambda: None, 30.0, "memory:/site/.distributor.lock",
                  lambda: now[0])
    lease.check("writing a.html")
    assert renewals == [], "a fresh lease costs no round trip"
    now[0] = 20.0
    lease.check("writing b.html")
    assert renewals == [20.0], "two thirds of the lease gone: the run renews before its change"
    now[0] = 21.0
    lease.check("writing c.html")
    assert renewals == [20.0]


def test_a_lease_that_lost_its_lock_refuses_every_change_after():
    lease = Lease(lambda: False, lambda: None, 30.0, "memory:/site/.distributor.lock", lambda: 0.0)
    with pytest.raises(DistributorError) as caught:
        lease.confirm("writing .distributor.json")
    assert caught.value.reason == "locked" and "nobody holds it now" in caught.value.message
    with pytest.raises(DistributorError):
        lease.check("writing page.html")
