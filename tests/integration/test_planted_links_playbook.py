# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hard links planted at a destination, through ansible-playbook: a managed output replaced by a
hard link to a root-only file outside the root is never read, and a run that would write over it
(`--check --diff`, `verify`) refuses, `unmanaged`, and leaves it; a planted lock is refused and left as it was; and on a
host whose kernel lets other accounts plant links, a root publisher is warned (this machine has
fs.protected_symlinks at 0, and the tests run as root)."""

from __future__ import annotations

import json
import os

import pytest

from planted import SECRET, fingerprint, plant_secret

OURS = b"x" * (len(SECRET) - 1) + b"\n"  # the planted file's size: only the link count tells them apart unread


def destination(root, **storage) -> dict:
    return {"id": "archive", "storage": dict({"type": "local", "root": str(root)}, **storage), "path": "site"}


def publish(source: str, root, task: dict | None = None, **options) -> dict:
    return dict({"distributor.core.distributor_publish": dict(
        source=source, pipeline={"id": "reports", "outputs": [{"match": "*.txt"}]}, destination=destination(root),
        **options)}, **(task or {}))


def state_info(root, verify: str) -> dict:
    return {"distributor.core.distributor_state_info": dict(destination=destination(root), pipeline_id="reports",
                                                            verify=verify)}


@pytest.fixture
def secret(tmp_path):
    return plant_secret(tmp_path)


def test_a_hard_linked_output_is_never_read_and_no_run_writes_over_it(playbook, make_bundle, tmp_path, secret):
    root = tmp_path / "root"
    first = make_bundle({"a.txt": OURS, "b.txt": b"b\n"}, created="2026-06-03T00:00:00Z")
    playbook.run([publish(first, root)])
    output = root / "site" / "a.txt"
    output.unlink()
    os.link(secret, output)
    before = fingerprint(secret)

    second = make_bundle({"a.txt": b"a, rewritten\n", "b.txt": b"b, rewritten\n"})
    checked, checked_verify = playbook.run([publish(second, root), publish(first, root, verify="sha256")],
                                           check=True, diff=True)
    info_size, info_digest, verified = playbook.run([
        state_info(root, "size"),
        state_info(root, "sha256"),
        publish(first, root, verify="sha256"),
    ])
    assert info_size["drifted"] == info_digest["drifted"] == ["a.txt"]
    for result in (checked, checked_verify, verified):
        assert result.get("failed") and result["reason"] == "unmanaged", result
        assert "a.txt (has 2 links, and a file distributor writes has one)" in result["msg"]
        assert result["unvouched"] == [{"path": "a.txt", "why": "has 2 links, and a file distributor writes has one"}]
    assert "root-only" not in json.dumps([checked, checked_verify, info_size, info_digest, verified])
    assert fingerprint(secret) == before and os.stat(output).st_nlink == 2
    assert secret.read_bytes() == SECRET


def test_a_lock_hard_linked_to_a_file_outside_fails_every_module_and_is_left_as_it_was(
        playbook, make_bundle, tmp_path, secret):
    root = tmp_path / "root"
    bundle = make_bundle({"a.txt": OURS})
    playbook.run([publish(bundle, root)])
    lock = root / "site" / ".distributor.lock"
    os.link(secret, lock)
    before = fingerprint(secret)
    results = playbook.run([
        publish(bundle, root),
        {"distributor.core.distributor_prune": dict(pipeline_id="reports",
                                                    destination=dict(destination(root), retention={"max_outputs": 1}))},
        {"distributor.core.distributor_reconcile_state": {"pipeline_id": "reports", "destination": destination(root)}},
    ])
    for result in results:
        assert result["failed"] and result["reason"] == "storage_error", result
        assert "%s has 2 links" % lock in result["msg"]
    assert fingerprint(secret) == before and secret.read_bytes() == SECRET


def test_a_root_publisher_is_warned_on_a_host_that_lets_other_accounts_plant_links(playbook, make_bundle, tmp_path):
    with open("/proc/sys/fs/protected_symlinks") as symlinks, open("/proc/sys/fs/protected_hardlinks") as hardlinks:
        off = [name for name, handle in (("fs.protected_hardlinks", hardlinks), ("fs.protected_symlinks", symlinks))
               if handle.read().strip() == "0"]
    if os.geteuid() != 0 or not off:
        pytest.skip("needs root on a host with fs.protected_hardlinks or fs.protected_symlinks at 0")
    root = tmp_path / "root"
    (root / "site").mkdir(parents=True)
    os.chmod(root / "site", 0o777)
    bundle = make_bundle({"a.txt": OURS})
    strict = publish(bundle, root)
    strict["distributor.core.distributor_publish"]["destination"] = destination(root, require_private_directories=True)
    refused, warned = playbook.run([strict, publish(bundle, root, task={"check_mode": True})])
    assert refused["failed"] and refused["reason"] == "storage_error"
    assert "%s is writable by every account (mode 0777)" % (root / "site") in refused["msg"]
    [warning] = warned["warnings"]
    assert "%s is writable by every account (mode 0777)" % (root / "site") in warning
    assert all("%s" % name in warning for name in off) and "require_private_directories" in warning
