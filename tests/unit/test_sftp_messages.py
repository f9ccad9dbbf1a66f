# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A failed SFTP request names its cause and the fix, against the real sshd: SFTP version 3 says
only "No such file", "Permission denied" or "Failure", and a read-only filesystem is the last."""

from __future__ import annotations

import subprocess

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.connect import failure_cause

from builders import NOW, write_bundle

PIPELINE = {"id": "reports"}


def refused(bundle, storage) -> str:
    with pytest.raises(DistributorError) as caught:
        publish(bundle, PIPELINE, {"id": "archive", "storage": storage, "path": "site"}, now=NOW)
    assert caught.value.reason == "storage_error", caught.value.message
    return caught.value.message


@pytest.fixture
def read_only(tmp_path):
    """A directory on a filesystem mounted read-only (a tmpfs: mounting needs root)."""
    mount_point = tmp_path / "ro"
    mount_point.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mount_point)], capture_output=True,
                      check=False).returncode:
        pytest.skip("cannot mount a read-only tmpfs here (needs root)")
    yield mount_point
    subprocess.run(["umount", str(mount_point)], check=True)


def test_a_read_only_filesystem_is_named_with_the_fix(tmp_path, sshd_server, read_only):
    message = refused(write_bundle(tmp_path / "b", {"index.html": b"x"}), sshd_server.storage(str(read_only)))
    assert "cannot create directory sftp://" in message and "/ro/site: Failure: " in message
    assert "mounted read-only on the server; remount it read-write or choose a root on a writable filesystem" in message


def test_permission_denied_names_the_account_and_the_fix(tmp_path, unprivileged_sshd):
    root = tmp_path / "root"
    root.mkdir(mode=0o555)
    message = refused(write_bundle(tmp_path / "b", {"index.html": b"x"}), unprivileged_sshd.storage(str(root)))
    assert "Permission denied: the server refuses the account %s; give it permission there" % unprivileged_sshd.username in message


def test_no_such_file_says_where_to_look(tmp_path, sshd_server):
    """The server's own answer to a request for a missing path, as every request's errors turn it."""
    storage = open_storage(sshd_server.storage(str(tmp_path)), "site", "t1")
    missing = str(tmp_path / "missing")
    try:
        with pytest.raises(DistributorError) as caught:
            with storage._errors("inspect", missing):
                storage._open().stat(missing)
    finally:
        storage.close()
    assert caught.value.message.endswith("/missing: No such file: no such file or directory on the server at that path or on "
                                         "the way to it; check the destination's root and path")


@pytest.mark.parametrize("filesystem, said", [
    ((False, True), "is full (no free blocks or inodes for deploy); free space there"),
    (None, "the server gave no detail (SSH_FX_FAILURE"),
    ((False, False), "the server's log names the cause"),
])
def test_a_generic_failure_says_what_the_filesystem_shows(filesystem, said):
    assert said in failure_cause(filesystem, "deploy")
