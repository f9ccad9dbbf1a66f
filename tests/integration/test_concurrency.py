# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Many publishers at once, as AWX schedules them: separate ansible-playbook processes, each
publishing its own pipeline into one shared root, serialised by the per-root lock on every
backend; the same lock hammered directly by threads on separate connections, starting from a
dead holder's expired lock; and the lock's two promises to a publisher: a dead holder does not
block it, a live one fails it as `locked` naming the holder."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import yaml

from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import STATE_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage
from conftest import VENV_BIN, collections_path

PUBLISHERS = 8
DEADLINE_SECONDS = 240
LEFTOVER_PREFIXES = (".distributor.lock", ".distributor.journal.json", ".distributor.tmp.")
PIPELINE_RULES = [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.png"}]


def shared_destination(backend, path: str) -> dict:
    return {"id": "site", "storage": backend.storage, "path": path, "state": {"mode": "shared_root"}}


def write_playbook(path: str, task: dict) -> str:
    """A one-task playbook. Its result is read from the minimal callback's output rather than
    recorded by a second task: each task is a module run, and these publishers share the CPU."""
    with open(path, "w") as handle:
        yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [task]}], handle)
    return path


def start_playbook(playbook: str, log: str) -> subprocess.Popen:
    """ansible-playbook in its own process group, so a hung run can be stopped with its workers."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal",
               PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))
    command = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local",
               "-e", "ansible_python_interpreter=%s" % sys.executable, playbook]
    with open(log, "wb") as output:
        return subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def task_result(output: str) -> dict:
    """The result the minimal callback printed as `localhost | CHANGED => {...}`."""
    return json.JSONDecoder().raw_decode(output[output.index("localhost | "):].split("=> ", 1)[1])[0]


def wait_all(processes: list, deadline: float) -> list:
    """Return codes; any process still running at the deadline is killed with its group."""
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(timeout=max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            for other in processes:
                if other.poll() is None:
                    os.killpg(other.pid, signal.SIGKILL)
                    other.wait()
            raise AssertionError("concurrent publishers did not finish within %ds" % DEADLINE_SECONDS) from None
    return codes


def leftovers(files: dict) -> list:
    return [path for path in files if any(part.startswith(LEFTOVER_PREFIXES) for part in path.split("/"))]


def expired_record() -> dict:
    """A dead holder's record. Its age is judged on the storage's clock, from the moment the test
    writes it, against the lease the record declares: one second."""
    now = time.time()
    return {"holder": "ghost-host:4242", "acquired_at": now - 1200, "expires_at": now - 600, "expiry": 1}


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_eight_concurrent_playbooks_publish_different_pipelines_into_one_shared_root(backend, make_bundle, tmp_path):
    runs = []
    for i in range(PUBLISHERS):
        pipeline_id = "team%d" % i
        bundle = make_bundle({"%s/report.md" % pipeline_id: b"# Report of team %d\n" % i,
                              "%s/chart.png" % pipeline_id: b"\x89PNG team %d" % i}, id=pipeline_id)
        task = {"distributor.core.distributor_publish": {
            "source": bundle, "pipeline": {"id": pipeline_id, "outputs": PIPELINE_RULES},
            "destination": shared_destination(backend, "shared"), "lock_timeout": 120}}
        playbook = write_playbook(str(tmp_path / ("publish-%s.yml" % pipeline_id)), task)
        runs.append((pipeline_id, playbook, str(tmp_path / ("publish-%s.log" % pipeline_id))))

    processes = [start_playbook(playbook, log) for _id, playbook, log in runs]
    codes = wait_all(processes, time.monotonic() + DEADLINE_SECONDS)

    for (pipeline_id, _playbook, log), code in zip(runs, codes):
        with open(log) as handle:
            output = handle.read()
        assert code == 0, "publisher %s failed:\n%s" % (pipeline_id, output)
        result = task_result(output)
        assert (result["action"], result["changed"]) == ("publish", True), result
        assert sorted(result["written"]) == ["%s/chart.png" % pipeline_id, "%s/report.html" % pipeline_id]

    files = backend.files("shared")
    state = json.loads(files[".distributor.json"])
    ids = ["team%d" % i for i in range(PUBLISHERS)]
    assert state["schema_version"] == 3
    assert sorted((o["pipeline_id"], o["destination_id"]) for o in state["owners"]) == [(p, "site") for p in ids]
    expected = {"%s/%s" % (p, name): p for p in ids for name in ("chart.png", "report.html")}
    assert {o["path"]: o["pipeline_id"] for o in state["outputs"]} == expected
    assert sorted(files) == sorted(list(expected) + [".distributor.json"]), "unexpected files: %s" % leftovers(files)
    for record in state["outputs"]:
        assert record["sha256"] == sha(files[record["path"]]), record["path"]
        assert record["source_id"] == record["pipeline_id"]
    assert leftovers(backend.files()) == []


def test_lock_excludes_every_other_holder_under_contention(backend):
    """Storage-level stress behind the playbook test: holders on separate connections each
    increment a counter file inside the lock; a lost update or a spurious error means two held
    the lock at once, or a contended lock failed instead of waiting. They start against the
    expired lock of a dead holder, which all of them find expired at once."""
    holders, rounds = 8, 8
    errors = []
    backend.put("counter/.distributor.lock", json.dumps(expired_record()).encode())

    def hold(number: int) -> None:
        storage = open_storage(backend.storage, "counter", "holder%d" % number)
        try:
            for _round in range(rounds):
                with storage.lock(timeout=60):
                    count = int(storage.read_bytes("count", STATE_LIMIT) or b"0")
                    storage.write_bytes("count", b"%d" % (count + 1))
        except Exception as error:  # reported below, with the holder's number
            errors.append("holder %d: %r" % (number, error))
        finally:
            storage.close()

    threads = [threading.Thread(target=hold, args=(n,)) for n in range(holders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=DEADLINE_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "lock holders still running"
    assert errors == []
    assert backend.files("counter") == {"count": b"%d" % (holders * rounds)}


def test_dead_holders_lock_does_not_block_and_a_live_lock_fails_as_locked(backend, playbook, make_bundle):
    now = time.time()
    if backend.name == "local":
        # A holder killed with SIGKILL leaves its file and a record that looks valid; the flock
        # died with it, and the flock is what counts.
        record = {"holder": "ghost-host:4242", "acquired_at": now - 60, "expires_at": now + 540}
    else:
        record = expired_record()
    backend.put("dead/.distributor.lock", json.dumps(record).encode())
    bundle = make_bundle({"team/report.md": b"# Report\n"}, id="team")

    def task(path: str, lock_timeout: float) -> dict:
        return {"distributor.core.distributor_publish": {
            "source": bundle, "pipeline": {"id": "team", "outputs": PIPELINE_RULES},
            "destination": shared_destination(backend, path), "lock_timeout": lock_timeout}}

    holder = open_storage(backend.storage, "live", "test-holder")
    try:
        with holder.lock(timeout=10):
            blocked, unblocked = playbook.run([task("live", 1), task("dead", 30)])
            assert backend.files("live").keys() == {".distributor.lock"}, "a publish wrote past a live lock"
    finally:
        holder.close()

    assert blocked["failed"] and blocked["reason"] == "locked", blocked
    assert "%s:%d" % (socket.gethostname(), os.getpid()) in blocked["msg"], blocked["msg"]
    assert "lock_timeout" in blocked["msg"]
    assert not unblocked.get("failed") and unblocked["action"] == "publish", unblocked
    assert backend.files("dead").keys() == {".distributor.json", "team/report.html"}
    assert backend.files("live") == {}, "the live holder's lock outlived its release"
