# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A release id chosen by the caller, a release built when nothing changed, what a staged
release's switch removes, and check mode's `release.removed` (issue 40 items 1 and 8), on the
memory double and on real disk."""

from __future__ import annotations

import json
import os
import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from builders import MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage
from test_crash_safety import Killed

HOME = ".distributor-releases/site"
PREVIEW = "https://preview.example.com/{release}/"


def at(hour: int) -> str:
    return "20260604T%02d0000Z-0123456789ab" % hour


class Site:
    """One release-mode destination, on the memory double or on disk, and what is in it."""

    def __init__(self, tmp_path, kind):
        self.tmp_path, self.kind, self.store, self.runs, self.bundles = tmp_path, kind, {}, 0, {}
        self.root = tmp_path / "www"
        storage = MEMORY_STORAGE if kind == "memory" else {"type": "local", "root": str(self.root)}
        self.base = {"id": "web", "storage": storage, "path": "site"}

    def publish(self, files, hour, cut=None, **kwargs):
        releases = dict({"keep": 2, "preview_url": PREVIEW}, **kwargs.pop("releases", {}))
        now = NOW.replace(hour=hour)
        self.runs += 1
        created = self.bundles.setdefault(tuple(sorted(files.items())), "2026-06-04T00:%02d:00Z" % len(self.bundles))
        source = write_bundle(self.tmp_path / ("b%d" % self.runs), files, id="site.example", created=created)
        extra = {"opener": lambda cfg, base, token: MemoryStorage(self.store, base, token, cut)} if self.kind == "memory" else {}
        return publish(source, {"id": "site"}, dict(self.base, releases=releases), now=now, **extra, **kwargs)

    def read(self, path) -> bytes:
        if self.kind == "memory":
            return MemoryStorage(self.store, "").read_bytes(path, 1 << 20)
        return (self.root / path).read_bytes()

    def write(self, path, data: bytes) -> None:
        if self.kind == "memory":
            MemoryStorage(self.store, "").write_bytes(path, data)
        else:
            (self.root / path).write_bytes(data)

    def statuses(self) -> dict:
        return {r["id"]: r["status"] for r in json.loads(self.read(HOME + "/.distributor-releases.json"))["releases"]}

    def live(self) -> str:
        if self.kind == "memory":
            return MemoryStorage(self.store, "").entry("site")[1].rpartition("/")[2]
        return os.readlink(self.root / "site").rpartition("/")[2]

    def same_file(self, release_a, release_b, path) -> bool:
        a, b = "%s/%s/%s" % (HOME, release_a, path), "%s/%s/%s" % (HOME, release_b, path)
        if self.kind == "memory":
            return self.store[a] is self.store[b]
        return os.stat(self.root / a).st_ino == os.stat(self.root / b).st_ino


@pytest.fixture(params=["memory", "disk"])
def site(request, tmp_path):
    return Site(tmp_path, request.param)


def test_a_publish_builds_the_release_its_id_names(site):
    done = site.publish({"index.html": b"one"}, 1, releases={"id": at(1)})
    assert done["release"]["id"] == at(1) == site.live() and site.statuses() == {at(1): "active"}


def test_an_id_that_does_not_sort_after_the_newest_release_is_refused_naming_both_before_anything_is_written(site):
    site.publish({"index.html": b"one"}, 1, releases={"id": at(1)})
    site.publish({"index.html": b"two"}, 2, releases={"id": at(3), "activate": False})
    before = site.read(HOME + "/.distributor-releases.json")
    for check_mode in (True, False):
        for earlier in (at(2), at(3)):
            with pytest.raises(DistributorError) as refused:
                site.publish({"index.html": b"three"}, 4, releases={"id": earlier}, check_mode=check_mode)
            assert refused.value.reason == "conflict"
            assert earlier in refused.value.message and at(3) in refused.value.message and "site" in refused.value.message
            assert ("is already a release" in refused.value.message) is (earlier == at(3))
    assert site.read(HOME + "/.distributor-releases.json") == before


@pytest.mark.parametrize("wrong", ["v2", "20260604T010000Z-0123456789AB", "20260604T010000Z-0123456789ab\n",
                                   "2026-06-04T01:00:00Z-0123456789ab"])
def test_an_id_of_another_form_is_invalid_config_naming_the_field(site, wrong):
    with pytest.raises(DistributorError) as refused:
        site.publish({"index.html": b"one"}, 1, releases={"id": wrong})
    assert refused.value.reason == "invalid_config" and "releases" in refused.value.message and "id" in refused.value.message


def test_build_always_makes_a_release_of_links_when_nothing_changed_and_none_when_the_live_one_is_named(site):
    files = {"index.html": b"one", "app.css": b"css"}
    site.publish(files, 1, releases={"id": at(1)})
    skipped = site.publish(files, 2, releases={"id": at(2)})
    assert skipped["changed"] is False and skipped["release"]["id"] is None
    checked = site.publish(files, 2, releases={"id": at(2), "build": "always", "activate": False}, check_mode=True)
    built = site.publish(files, 2, releases={"id": at(2), "build": "always", "activate": False},
                         expect_plan_digest=checked["plan_digest"])
    assert checked["changed"] is built["changed"] is True and checked["release"]["id"] == built["release"]["id"] == at(2)
    assert built["action"] == "skip" and built["written"] == [] and site.statuses() == {at(1): "active", at(2): "staged"}
    assert all(site.same_file(at(1), at(2), path) for path in files)
    assert site.read("%s/%s/.distributor.json" % (HOME, at(2))) == site.read("%s/%s/.distributor.json" % (HOME, at(1)))
    assert checked["plan_digest"] != skipped["plan_digest"]
    again = site.publish(files, 3, releases={"id": at(1), "build": "always"})
    assert again["changed"] is False and again["release"]["id"] is None and len(site.statuses()) == 2
    with pytest.raises(DistributorError) as refused:
        site.publish({"index.html": b"two"}, 3, releases={"id": at(1)})
    assert refused.value.reason == "conflict" and "live release" in refused.value.message


def test_a_staged_publish_reports_what_its_switch_removes_in_check_mode_too(site):
    for hour in (1, 2, 3):
        site.publish({"index.html": b"v%d" % hour}, hour)
    oldest = sorted(site.statuses())[0]
    assert site.statuses()[oldest] == "superseded"
    checked = site.publish({"index.html": b"v4"}, 4, releases={"activate": False}, check_mode=True)
    staged = site.publish({"index.html": b"v4"}, 4, releases={"activate": False}, expect_plan_digest=checked["plan_digest"])
    assert checked["release"]["removes_at_switch"] == staged["release"]["removes_at_switch"] == [oldest]
    assert staged["release"]["removed"] == [] and oldest in site.statuses()
    assert checked["plan"]["release"]["removes_at_switch"] == [oldest]
    assert "removed at its switch: %s (superseded)" % oldest in staged["diff"][1]["after"]


def test_check_mode_lists_exactly_the_releases_the_run_removes_and_the_diff_names_them(site):
    for hour in (1, 2, 3):
        site.publish({"index.html": b"v%d" % hour}, hour, releases={"id": at(hour)})
    site.publish({"index.html": b"v4"}, 4, releases={"id": at(4), "activate": False})
    assert site.statuses() == {at(2): "superseded", at(3): "active", at(4): "staged"}
    site.write("%s/%s/planted.txt" % (HOME, at(2)), b"not distributor's")
    files = {"index.html": b"v5"}
    checked = site.publish(files, 5, releases={"id": at(5)}, check_mode=True, full_result=True)
    done = site.publish(files, 5, releases={"id": at(5)})
    assert checked["release"]["removed"] == done["release"]["removed"] == [at(4)]
    assert checked["release"]["kept"] == done["release"]["kept"] and [k["id"] for k in done["release"]["kept"]] == [at(2)]
    assert checked["release"]["id"] == done["release"]["id"] == at(5)
    assert site.statuses() == {at(2): "superseded", at(3): "superseded", at(5): "active"}
    after = checked["diff"][1]["after"]
    assert "built: %s from %s" % (at(5), at(3)) in after and "switch: %s -> %s" % (at(3), at(5)) in after
    assert "removed: %s (staged: a preview at https://preview.example.com/%s/)" % (at(4), at(4)) in after


def test_check_mode_counts_a_dead_build_the_run_recovers_among_what_it_removes(tmp_path):
    site = Site(tmp_path, "memory")
    for hour in (1, 2, 3):
        site.publish({"index.html": b"v%d" % hour}, hour, releases={"id": at(hour)})

    def killed(op, path):
        if op == "write" and path.endswith("index.html"):
            raise Killed("killed while building")
    with pytest.raises(Killed):
        site.publish({"index.html": b"v4"}, 4, releases={"id": at(4)}, cut=killed)
    assert site.statuses()[at(4)] == "staged"
    checked = site.publish({"index.html": b"v5"}, 5, releases={"id": at(5)}, check_mode=True, full_result=True)
    done = site.publish({"index.html": b"v5"}, 5, releases={"id": at(5)})
    assert checked["release"]["removed"] == done["release"]["removed"] == [at(4), at(2)]
    assert checked["release"]["failed"] == done["release"]["failed"] == [at(4)]
    assert "removed: %s (failed: never completely built)" % at(4) in checked["diff"][1]["after"]
