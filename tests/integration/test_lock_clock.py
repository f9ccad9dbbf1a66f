# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lock is judged on the storage's clock, never a publisher's, through real ansible-playbook
runs against sshd and moto: two publishers whose clocks are an hour apart (libfaketime moves
one) never both hold the lock and leave nothing unrecorded, and the lock of a holder killed
with SIGKILL is broken by the next run within its lock_timeout, as soon as its lease is over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from botocore.exceptions import ClientError

from conftest import collections_path
from test_concurrency import start_playbook, task_result, wait_all, write_playbook

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
FILES = 200
EXPIRY = 2.0
LOCK = ".distributor.lock"
DEADLINE_SECONDS = 180


def destination(backend) -> dict:
    """Either publisher's bundle replaces the other's (same pipeline, another source)."""
    return {"id": "site", "storage": backend.storage, "path": "docs", "lock": {"expiry": EXPIRY},
            "transfer": {"on_conflict": "replace"}}


def lock_token(backend):
    """The token of the lock record at the bundle path now, or None (read alone: the watcher
    polls it while the publishers work)."""
    try:
        if backend.local_root is not None:
            with open(os.path.join(str(backend.local_root), "docs", LOCK), "rb") as handle:
                raw = handle.read()
        else:
            client, bucket = backend.s3
            raw = client.get_object(Bucket=bucket, Key=backend._key("docs/" + LOCK))["Body"].read()
        return json.loads(raw)["token"]
    except (OSError, ValueError, KeyError, ClientError):
        return None  # no lock, a record being written, or one released while it was read


@pytest.mark.parametrize("backend", ["sftp", "s3"], indirect=True)
def test_publishers_with_clocks_an_hour_apart_take_turns_and_leave_nothing_unrecorded(backend, make_bundle, tmp_path,
                                                                                      monkeypatch):
    """With `lock.expiry: 2` each holder renews every 0.7 s while it publishes 200 files for
    several seconds; the other waits. Judged by the records' own times, the publisher an hour
    ahead would find every lock of the other long expired and break it at once."""
    if not os.path.exists(LIBFAKETIME):
        pytest.fail("%s is missing: install Debian's faketime package (see .ci/run)" % LIBFAKETIME)
    runs = []
    for name, offset in (("behind", None), ("ahead", "+1h")):
        bundle = make_bundle({"%s/page-%04d.html" % (name, i): b"%s %d" % (name.encode(), i) for i in range(FILES)},
                             id=name)
        task = {"distributor.core.distributor_publish": {
            "source": bundle, "pipeline": {"id": "reports"}, "destination": destination(backend),
            "lock_timeout": 120}}
        runs.append((name, offset, write_playbook(str(tmp_path / ("%s.yml" % name)), task), str(tmp_path / ("%s.log" % name))))

    tokens, watching = [], threading.Event()

    def watch() -> None:
        while not watching.is_set():
            token = lock_token(backend)
            if token and (not tokens or tokens[-1] != token):
                tokens.append(token)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    processes = []
    for name, offset, playbook, log in runs:
        with monkeypatch.context() as env:
            if offset:
                env.setenv("LD_PRELOAD", LIBFAKETIME)
                env.setenv("FAKETIME", offset)
            processes.append(start_playbook(playbook, log))
    try:
        codes = wait_all(processes, time.monotonic() + DEADLINE_SECONDS)
    finally:
        watching.set()
        watcher.join()

    results = {}
    for (name, _offset, _playbook, log), code in zip(runs, codes):
        with open(log) as handle:
            output = handle.read()
        assert code == 0, "publisher %s failed:\n%s" % (name, output[-3000:])
        results[name] = task_result(output)
        assert results[name]["changed"], results[name]
    assert len(tokens) == 2, "each publisher held the lock once, one after the other: %s" % tokens

    files = backend.files("docs")
    state = json.loads(files.pop(".distributor.json"))
    recorded = {output["path"] for output in state["outputs"]}
    assert set(files) == recorded, "unrecorded: %s" % sorted(set(files) - recorded)[:10]
    last = "behind" if "behind/page-0000.html" in recorded else "ahead"
    assert recorded == {"%s/page-%04d.html" % (last, i) for i in range(FILES)}


HOLDER = """
import sys, time
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage
storage = open_storage(__import__("json").loads(sys.argv[1]), "docs", "killed-holder")
with storage.lock(timeout=10, expiry=%r):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("backend", ["sftp", "s3"], indirect=True)
def test_a_killed_holders_lock_is_broken_by_the_next_run_within_lock_timeout(backend, playbook, make_bundle):
    """The holder renews its 3 s lease until SIGKILL; its record then stays as it last wrote it.
    The next run (configured with the default 600 s expiry) judges it by the lease the record
    declares, on the storage's clock: it waits out that lease, not its own (it would fail
    `locked` after its lock_timeout), and not less."""
    lease = 3.0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER % lease, json.dumps(backend.storage)],
                              env=dict(os.environ, PYTHONPATH=collections_path()), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        time.sleep(2.0)  # two renewals: a live holder's lock is never broken
        assert lock_token(backend) == "killed-holder"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    killed = time.monotonic()
    bundle = make_bundle({"index.html": b"<p>next</p>"})
    result = playbook.publish(source=bundle, pipeline={"id": "reports"},
                              destination={"id": "site", "storage": backend.storage, "path": "docs"}, lock_timeout=30)
    waited = time.monotonic() - killed
    assert not result.get("failed") and result["changed"], "not broken within lock_timeout: %s" % result
    assert waited > lease - 1, "broken %.1f s after the kill, before the lease was over" % waited
    assert set(backend.files("docs")) == {".distributor.json", "index.html"}


@pytest.mark.parametrize("backend", ["sftp", "s3"], indirect=True)
def test_a_planted_lock_declaring_an_endless_lease_is_broken_by_a_run_within_lock_expiry_and_lock_timeout(
        backend, playbook, make_bundle):
    """A lock record is anyone's to write: one declaring `"expiry": 1e300` blocked every run
    forever. The run's own `lock.expiry` (2 s) bounds it; the lock_timeout leaves a busy host room."""
    now = time.time()
    backend.put("docs/" + LOCK, json.dumps({"holder": "ghost:1", "token": "planted", "acquired_at": now,
                                            "expires_at": 1e300, "expiry": 1e300}).encode())
    result = playbook.publish(source=make_bundle({"index.html": b"<p>next</p>"}), pipeline={"id": "reports"},
                              destination=destination(backend), lock_timeout=30)
    assert not result.get("failed") and result["changed"], "not broken within lock_timeout: %s" % result
    assert set(backend.files("docs")) == {".distributor.json", "index.html"}
