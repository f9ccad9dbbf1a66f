# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every storage failure is a reason naming the path, and the next plain run recovers by itself:
real local publishes into roots where something is in the way."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from builders import LATER, NOW, read_json, write_bundle

PIPELINE = {"id": "reports"}


def tree(root) -> dict:
    found = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                found[os.path.relpath(path, root)] = handle.read()
    return found


def destination(root, **extra):
    return dict({"id": "archive", "storage": {"type": "local", "root": str(root)}, "path": "site"}, **extra)


def refused(reason, *args, **kwargs) -> str:
    with pytest.raises(DistributorError) as caught:
        publish(*args, **kwargs)
    assert caught.value.reason == reason, caught.value.message
    return caught.value.message


def test_a_root_that_is_a_regular_file_is_a_storage_error_naming_it(tmp_path):
    (tmp_path / "root").write_bytes(b"not a directory")
    bundle = write_bundle(tmp_path / "b", {"index.html": b"x"})
    assert "root" in refused("storage_error", bundle, PIPELINE, destination(tmp_path / "root"), now=NOW)
    assert (tmp_path / "root").read_bytes() == b"not a directory"


def test_a_bundle_path_that_is_a_file_is_a_storage_error_naming_it(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "site").write_bytes(b"someone's file")
    bundle = write_bundle(tmp_path / "b", {"index.html": b"x"})
    assert "site" in refused("storage_error", bundle, PIPELINE, destination(tmp_path / "root"), now=NOW)
    assert tree(tmp_path / "root") == {"site": b"someone's file"}


@pytest.mark.parametrize("reserved", [STATE_NAME, JOURNAL_NAME, ".distributor.lock"])
def test_a_directory_at_a_reserved_name_is_a_reason_and_nothing_is_written(tmp_path, reserved):
    (tmp_path / "root" / "site" / reserved).mkdir(parents=True)
    bundle = write_bundle(tmp_path / "b", {"index.html": b"x"})
    message = refused("storage_error", bundle, PIPELINE, destination(tmp_path / "root"), now=NOW)
    assert reserved in message
    assert tree(tmp_path / "root") == {}


def test_a_name_too_long_for_the_filesystem_fails_with_its_path_and_the_next_run_converges(tmp_path):
    """A 255-byte Markdown name fits the bundle, but its rendered `.html` output does not fit."""
    long_name = "r" * 252 + ".md"
    markdown = {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.html"}]}
    bundle = write_bundle(tmp_path / "b", {"index.html": b"x", long_name: b"# y\n"})
    message = refused("storage_error", bundle, markdown, destination(tmp_path / "root"), now=NOW)
    assert "r" * 252 + ".html" in message
    assert tree(tmp_path / "root") == {}, "the failed attempt removed what it wrote, journal included"
    fixed = write_bundle(tmp_path / "fixed", {"index.html": b"x", "short.md": b"# y\n"})
    assert publish(fixed, markdown, destination(tmp_path / "root"), now=NOW)["action"] == "publish"


def test_replace_turns_its_own_file_into_a_directory_and_back(tmp_path):
    dest = destination(tmp_path / "root")
    publish(write_bundle(tmp_path / "v1", {"docs": b"a file"}, created="2026-06-03T00:00:00Z"), PIPELINE, dest, now=NOW)
    second = publish(write_bundle(tmp_path / "v2", {"docs/index.html": b"a page"}), PIPELINE, dest, now=LATER)
    assert (second["written"], second["deleted"]) == (["docs/index.html"], ["docs"])
    assert tree(tmp_path / "root" / "site") == {"docs/index.html": b"a page", STATE_NAME: tree(tmp_path / "root" / "site")[STATE_NAME]}
    third = publish(write_bundle(tmp_path / "v3", {"docs": b"a file again"}, created="2026-06-05T00:00:00Z"), PIPELINE, dest, now=LATER)
    assert third["written"] == ["docs"] and (tmp_path / "root" / "site" / "docs").read_bytes() == b"a file again"


@pytest.mark.parametrize("obstacle", ["docs", "index.html/old.html"])
def test_merge_refuses_an_unmanaged_file_in_the_way_before_writing_anything(tmp_path, obstacle):
    dest = destination(tmp_path / "root", reconciliation={"mode": "merge"})
    publish(write_bundle(tmp_path / "v1", {"a.html": b"a"}, created="2026-06-03T00:00:00Z"), PIPELINE, dest, now=NOW)
    (tmp_path / "root" / "site" / obstacle).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "root" / "site" / obstacle).write_bytes(b"neighbour")
    before = tree(tmp_path / "root")
    second = write_bundle(tmp_path / "v2", {"a.html": b"a2", "docs/page.html": b"p", "index.html": b"i"})
    assert obstacle in refused("unmanaged", second, PIPELINE, dest, now=LATER)
    assert tree(tmp_path / "root") == before


def test_shared_root_force_clears_unmanaged_files_in_the_way_and_keeps_other_owners(tmp_path):
    dest = destination(tmp_path / "root", state={"mode": "shared_root"})
    publish(write_bundle(tmp_path / "e", {"events.html": b"e"}, id="events.daily"), {"id": "events"}, dest, now=NOW)
    (tmp_path / "root" / "site" / "docs").write_bytes(b"neighbour")
    (tmp_path / "root" / "site" / "index.html").mkdir()
    (tmp_path / "root" / "site" / "index.html" / "stray.html").write_bytes(b"stray")
    bundle = write_bundle(tmp_path / "r", {"docs/page.html": b"p", "index.html": b"i"})
    refused("unmanaged", bundle, PIPELINE, dest, now=NOW)
    forced = publish(bundle, PIPELINE, dest, force=True, now=NOW)
    assert forced["action"] == "force_replace"
    assert sorted(forced["deleted"]) == ["docs", "index.html/stray.html"] == forced["forced"]
    files = tree(tmp_path / "root" / "site")
    assert (files["docs/page.html"], files["index.html"], files["events.html"]) == (b"p", b"i", b"e")
    owners = {o["path"]: o["pipeline_id"] for o in read_json(files[STATE_NAME])["outputs"]}
    assert owners == {"events.html": "events", "docs/page.html": "reports", "index.html": "reports"}


def test_a_journal_whose_directory_was_swapped_for_a_link_stays_until_the_directory_is_back(tmp_path):
    """A file where the attempt's directory was: its files may be hidden, not gone, so recovery
    deletes nothing, keeps the journal and resolves it once the directory is back."""
    dest = destination(tmp_path / "root")
    site = tmp_path / "root" / "site"
    publish(write_bundle(tmp_path / "v1", {"index.html": b"v1"}, created="2026-06-03T00:00:00Z"), PIPELINE, dest, now=NOW)
    (site / "docs").mkdir()
    (site / "docs" / "page.html").write_bytes(b"left by a killed attempt")
    entry = {"path": "docs/page.html", "sha256": "sha256:" + hashlib.sha256(b"left by a killed attempt").hexdigest(), "size": 24}
    (site / JOURNAL_NAME).write_text(json.dumps({"token": "dead", "writes": [entry]}))
    os.rename(site / "docs", tmp_path / "moved")
    (site / "docs").symlink_to(tmp_path / "moved")
    second = write_bundle(tmp_path / "v2", {"index.html": b"v2"})
    assert "docs" in refused("storage_error", second, PIPELINE, dest, now=LATER)
    assert (site / JOURNAL_NAME).exists() and (tmp_path / "moved" / "page.html").exists()
    (site / "docs").unlink()
    os.rename(tmp_path / "moved", site / "docs")
    assert publish(second, PIPELINE, dest, now=LATER)["changed"]
    assert sorted(tree(site)) == [STATE_NAME, "index.html"]
