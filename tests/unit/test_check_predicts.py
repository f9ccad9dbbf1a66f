# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check mode predicts the refusals of the run it reviews: a bundle edited after its manifest
fails verification_failed, and a directory the publishing account cannot write fails
storage_error, in the check, not in the approved run."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import stat
import tempfile

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.private import unwritable

from builders import NOW, write_bundle

NOBODY = 65534
SHOWN = ("failed", "msg", "changed")  # what a child dropped to NOBODY reports of its result
FILES = {"a.txt": b"alpha", "docs/b.txt": b"bravo"}


def local(root) -> dict:
    return {"id": "site", "storage": {"type": "local", "root": str(root)}, "path": "site"}


def outcome(source, root, check_mode=True, **options) -> dict:
    """A publish's result, or {'failed': reason, 'msg': ...}."""
    try:
        return publish(source, {"id": "reports"}, local(root), check_mode=check_mode, now=NOW, **options)
    except DistributorError as exc:
        return {"failed": exc.reason, "msg": exc.message}


@pytest.fixture
def shared_tmp():
    """A directory every account may enter (pytest's own is root's alone)."""
    path = tempfile.mkdtemp(prefix="distributor-check-")
    os.chmod(path, 0o755)
    yield pathlib.Path(path)
    shutil.rmtree(path)


def as_nobody(run):
    """`run()` in a child that has given up root for good: root writes any directory, so the
    kernel's refusal is seen only by another account."""
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(reader)
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(writer, json.dumps({k: v for k, v in run().items() if k in SHOWN}).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(writer)
    with os.fdopen(reader, "rb") as handle:
        shown = handle.read().decode()
    os.waitpid(child, 0)
    return json.loads(shown)


def test_check_fails_verification_of_a_file_edited_after_its_manifest_with_the_same_size(tmp_path):
    source = write_bundle(tmp_path / "bundle", FILES)
    with open(os.path.join(source, "docs/b.txt"), "wb") as handle:
        handle.write(b"BRAVO")
    checked = outcome(source, tmp_path / "www")
    assert checked["failed"] == "verification_failed"
    assert "docs/b.txt" in checked["msg"] and "sha256 mismatch" in checked["msg"]
    assert outcome(source, tmp_path / "www", check_mode=False)["failed"] == "verification_failed"
    assert not os.path.exists(tmp_path / "www" / "site" / "docs" / "b.txt")


def test_a_clean_check_reads_every_file_the_run_writes_and_the_run_then_succeeds(tmp_path):
    source = write_bundle(tmp_path / "bundle", FILES)
    checked = outcome(source, tmp_path / "www")
    assert checked["changed"] and sorted(checked["written"]) == sorted(FILES)
    ran = outcome(source, tmp_path / "www", check_mode=False, expect_plan_digest=checked["plan_digest"])
    assert ran["written"] == checked["written"]


def test_a_skip_reads_no_bundle_file_in_check_mode(tmp_path):
    """A skip writes nothing, so a run cannot fail verification: the check reads nothing either."""
    source = write_bundle(tmp_path / "bundle", FILES)
    outcome(source, tmp_path / "www", check_mode=False)
    with open(os.path.join(source, "a.txt"), "wb") as handle:
        handle.write(b"ALPHA")
    assert outcome(source, tmp_path / "www")["action"] == "skip"


def readable_bundle(directory) -> str:
    """The bundle, readable by every account."""
    source = write_bundle(directory / "bundle", FILES)
    for folder, _dirs, files in os.walk(source):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    return source


@pytest.mark.skipif(os.geteuid() != 0, reason="drops root to see the kernel refuse another account")
def test_check_fails_storage_error_where_the_account_cannot_write_and_the_run_would_too(shared_tmp):
    source = readable_bundle(shared_tmp)
    root = shared_tmp / "www"
    os.makedirs(root / "site", mode=0o755)
    checked = as_nobody(lambda: outcome(source, root))
    assert checked["failed"] == "storage_error"
    assert "%s/site" % root in checked["msg"] and "uid %d" % NOBODY in checked["msg"]
    ran = as_nobody(lambda: outcome(source, root, check_mode=False))
    assert ran["failed"] == "storage_error"
    os.chown(root / "site", NOBODY, NOBODY)
    assert as_nobody(lambda: outcome(source, root))["changed"] is True


@pytest.mark.skipif(os.geteuid() != 0, reason="drops root to see the kernel refuse another account")
def test_check_judges_the_nearest_existing_parent_of_a_directory_the_run_would_make(shared_tmp):
    source = readable_bundle(shared_tmp)
    checked = as_nobody(lambda: outcome(source, shared_tmp / "missing" / "www"))
    assert checked["failed"] == "storage_error" and "cannot write in %s:" % shared_tmp in checked["msg"]


@pytest.mark.parametrize("mode, owner, username, refused", [
    (0o755, "deploy", "deploy", False),
    (0o555, "deploy", "deploy", True),
    (0o755, "www", "deploy", True),
    (0o775, "www", "deploy", False),  # its group may be deploy's: SFTP does not say
    (0o757, "www", "deploy", False),
    (0o755, None, "deploy", False),  # the server does not name the owner: cannot tell
    (0o555, "www", "root", False),
])
def test_sftp_judges_writability_from_mode_and_owner_and_refuses_only_what_it_can_tell(mode, owner, username, refused):
    assert (unwritable(stat.S_IFDIR | mode, owner, username) is not None) == refused
