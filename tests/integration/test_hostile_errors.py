# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Storage that fails or has something in the way, through ansible-playbook on local and SFTP:
a file where a directory must go, a name too long for the filesystem, permission denied, a root
that is a regular file, a directory at a reserved name. Each run fails with a reason naming the
path and no traceback, nothing outside the bundle path changes, and once the obstacle is gone the
next plain run converges: no root ever needs a file of distributor's deleted by hand."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from conftest import tree
from hostile import OUTSIDE, assert_refused, destination, neighbour_root, outside

PIPELINE = {"id": "reports"}


@pytest.fixture(params=["local", "sftp"])
def root(request, tmp_path):
    return neighbour_root(request, tmp_path)


def site(root) -> dict:
    return tree(os.path.join(str(root.local_root), "site"))


@pytest.mark.parametrize("mode", ["replace", "merge", "shared_root"])
def test_an_unmanaged_file_where_a_directory_must_go_is_unmanaged_before_anything_is_written(root, playbook, make_bundle, mode):
    dest = destination(root, **({"state": {"mode": "shared_root"}} if mode == "shared_root" else {"reconciliation": {"mode": mode}}))
    first = make_bundle({"index.html": b"v1"}, created="2026-06-03T00:00:00Z")
    assert playbook.publish(source=first, pipeline=PIPELINE, destination=dest)["changed"]
    root.put("site/docs", b"a neighbour's file named like a directory")
    before = tree(root.local_root)
    second = make_bundle({"index.html": b"v2", "docs/page.html": b"page"})
    assert_refused(playbook.publish(source=second, pipeline=PIPELINE, destination=dest), "unmanaged", "docs")
    assert tree(root.local_root) == before
    root.remove("site/docs")
    again = playbook.publish(source=second, pipeline=PIPELINE, destination=dest)
    assert again["changed"] and sorted(again["written"]) == ["docs/page.html", "index.html"]
    assert site(root)["docs/page.html"] == b"page" and outside(root) == OUTSIDE


def test_a_name_too_long_for_the_filesystem_is_a_storage_error_and_leaves_no_journal(root, playbook, make_bundle):
    """A 255-byte Markdown name fits the bundle, but its rendered `.html` output does not fit."""
    long_name = "r" * 252 + ".md"
    markdown = {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.html"}]}
    bundle = make_bundle({"index.html": b"x", long_name: b"# y\n"})
    assert_refused(playbook.publish(source=bundle, pipeline=markdown, destination=destination(root)), "storage_error", "r" * 100)
    assert site(root) == {} and outside(root) == OUTSIDE
    fixed = make_bundle({"index.html": b"x", "short.md": b"# y\n"})
    again = playbook.publish(source=fixed, pipeline=markdown, destination=destination(root))
    assert again["action"] == "publish" and sorted(site(root)) == [".distributor.json", "index.html", "short.html"]


def _immutable(path, on: bool) -> None:
    """Root passes every permission check, so the test denies writes the way root cannot pass:
    the immutable attribute (ext4, xfs, btrfs)."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    done = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True, text=True, check=False)
    if done.returncode and on:
        pytest.skip("this filesystem has no immutable attribute: %s" % done.stderr.strip())


def test_permission_denied_is_a_storage_error_and_the_next_run_after_it_converges(root, playbook, make_bundle):
    first = make_bundle({"index.html": b"v1", "deep/page.html": b"p1"}, created="2026-06-03T00:00:00Z")
    assert playbook.publish(source=first, pipeline=PIPELINE, destination=destination(root))["changed"]
    frozen = os.path.join(str(root.local_root), "site", "deep")
    second = make_bundle({"index.html": b"v2", "deep/page.html": b"p2", "deep/new.html": b"n"})
    _immutable(frozen, True)
    try:
        before = tree(root.local_root)
        assert_refused(playbook.publish(source=second, pipeline=PIPELINE, destination=destination(root)), "storage_error", "deep")
        assert tree(root.local_root) == before, "the failed attempt put every old output back as it was"
    finally:
        _immutable(frozen, False)
    again = playbook.publish(source=second, pipeline=PIPELINE, destination=destination(root))
    assert again["changed"] and site(root)["deep/new.html"] == b"n" and outside(root) == OUTSIDE


def test_a_root_that_is_a_regular_file_is_a_storage_error_naming_it(root, playbook, make_bundle, tmp_path):
    plain = tmp_path / ("plain-file-root-" + root.name)
    plain.write_bytes(b"not a directory")
    storage = dict(root.storage, root=str(plain))
    result = playbook.publish(source=make_bundle({"index.html": b"x"}), pipeline=PIPELINE,
                              destination={"id": "archive", "storage": storage, "path": "site"})
    assert_refused(result, "storage_error", str(plain))
    assert plain.read_bytes() == b"not a directory"


@pytest.mark.parametrize("reserved", [".distributor.json", ".distributor.journal.json"])
def test_a_directory_at_a_reserved_name_is_refused_and_nothing_is_written(root, playbook, make_bundle, reserved):
    os.makedirs(os.path.join(str(root.local_root), "site", reserved))
    result = playbook.publish(source=make_bundle({"index.html": b"x"}), pipeline=PIPELINE, destination=destination(root))
    assert result.get("failed") and result.get("reason") in ("storage_error", "invalid_state"), result
    assert reserved in result["msg"] and "Traceback" not in json.dumps(result)
    assert site(root) == {} and outside(root) == OUTSIDE
    os.rmdir(os.path.join(str(root.local_root), "site", reserved))
    assert playbook.publish(source=make_bundle({"index.html": b"x"}), pipeline=PIPELINE, destination=destination(root))["changed"]
