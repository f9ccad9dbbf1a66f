# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A publish killed with SIGKILL mid-write converges on the next run, without force."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import yaml

from conftest import tree

# 100 MiB in files of 64 KiB: more than one durability batch of local storage (64 MiB), so the
# first batch's outputs appear while the second still waits for the disk, and the kill lands
# before the state is written. With one batch, the renames and the state follow each other
# within milliseconds and a poll can miss the moment.
FILES = 1600


def publish_playbook(tmp_path, source, root):
    playbook = tmp_path / "publish.yml"
    task = {"distributor.core.distributor_publish": {
        "source": source, "pipeline": {"id": "reports"},
        "destination": {"id": "archive", "storage": {"type": "local", "root": str(root)}}}}
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [task]}]))
    return str(playbook)


def descendants(pid: int) -> list:
    """Every process below `pid`: Ansible runs the module in processes of their own session."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def kill_tree(pid: int) -> None:
    for member in descendants(pid):
        try:
            os.kill(member, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_for_outputs(process, root, at_least, timeout=60.0):
    """Until the publish has written some outputs but not its state: the moment to kill it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        written = os.listdir(root) if root.is_dir() else []
        if len([n for n in written if n.startswith("f") and n.endswith(".png")]) >= at_least:
            return True
        time.sleep(0.01)
    return False


def test_sigkill_mid_publish_leaves_a_root_the_next_run_finishes(playbook, make_bundle, tmp_path):
    root = tmp_path / "www"
    old = make_bundle({"keep.png": b"k", "old.png": b"o"}, created="2026-06-03T00:00:00Z")
    assert playbook.publish(source=old, pipeline={"id": "reports"},
                            destination={"id": "archive", "storage": {"type": "local", "root": str(root)}})["changed"]
    new = make_bundle({"f%04d.png" % i: os.urandom(64 * 1024) for i in range(FILES)})
    path = publish_playbook(tmp_path, new, root)
    command = playbook.command(path)
    process = subprocess.Popen(command, env=playbook.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        reached = wait_for_outputs(process, root, FILES // 4)
    finally:
        kill_tree(process.pid)
        process.wait()
    assert reached, "the publish finished or failed before it could be killed"
    assert (root / ".distributor.journal.json").exists()
    # An attempt killed before it wrote its journal leaves its staging directory and nothing else.
    (root / ".distributor.tmp.0dead0000000").mkdir()

    finished = playbook.publish(source=new, pipeline={"id": "reports"},
                                destination={"id": "archive", "storage": {"type": "local", "root": str(root)}})
    assert finished["action"] == "replace", finished
    # The killed attempt's files are what this run writes anyway: replaced, not deleted, so the
    # default transfer.max_deletes (256) does not stop a run that finds hundreds of them.
    assert finished["recovered"] == [] and finished["staging_removed"] == [".distributor.tmp.0dead0000000"]
    files = tree(root)
    state = json.loads(files.pop(".distributor.json"))
    assert sorted(files) == sorted(o["path"] for o in state["outputs"]) == sorted("f%04d.png" % i for i in range(FILES))
    assert [d for d, _dirs, _files in os.walk(root) if ".distributor.tmp." in d] == []
