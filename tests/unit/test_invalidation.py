# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Invalidation paths as a pure function, and what publish and prune return."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.invalidation import invalidation_paths
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from builders import LATER, MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage

BASE = "https://cdn.example.com/site/"


def urls(*paths):
    return [BASE + p for p in paths]


def test_url_paths_sorted_and_deduplicated():
    assert invalidation_paths(urls("b.css", "a.png", "b.css"), 1000) == ["/site/a.png", "/site/b.css"]


def test_index_pages_also_give_their_directory():
    assert invalidation_paths(urls("index.html", "a/index.html", "a/b.htm"), 1000) == [
        "/site/", "/site/a/", "/site/a/b.htm", "/site/a/index.html", "/site/index.html"]


def test_percent_encoding_is_kept_as_in_the_url():
    assert invalidation_paths(["https://cdn.example.com/caf%C3%A9%20menu.html"], 1000) == ["/caf%C3%A9%20menu.html"]


def test_no_base_url_gives_no_paths():
    assert invalidation_paths([None, None], 1000) == []


def test_within_the_limit_nothing_collapses():
    assert len(invalidation_paths(urls(*("p%d.png" % i for i in range(5))), 5)) == 5


def test_over_the_limit_the_deepest_directories_collapse_first():
    paths = urls("a/b/1.png", "a/b/2.png", "a/b/3.png", "a/c/1.png", "a/c/2.png", "top.css")
    assert invalidation_paths(paths, 4) == ["/site/a/b/*", "/site/a/c/1.png", "/site/a/c/2.png", "/site/top.css"]
    assert invalidation_paths(paths, 3) == ["/site/a/b/*", "/site/a/c/*", "/site/top.css"]
    assert invalidation_paths(paths, 2) == ["/site/a/*", "/site/top.css"]
    assert invalidation_paths(paths, 1) == ["/site/*"]


def test_a_directory_with_its_index_collapses_with_its_directory_form():
    assert invalidation_paths(urls("a/index.html", "a/x.png"), 1) == ["/site/a/*"]
    assert invalidation_paths(["https://h.example/a/index.html", "https://h.example/a/x.png", "https://h.example/b.png"],
                              2) == ["/a/*", "/b.png"]


def test_the_result_never_exceeds_the_limit_and_does_not_depend_on_order():
    paths = urls(*("d%d/f%d.html" % (i % 7, i) for i in range(200)))
    for limit in (1, 2, 5, 8, 50, 199, 400):
        got = invalidation_paths(paths, limit)
        assert len(got) <= limit
        assert got == invalidation_paths(list(reversed(paths)), limit)


def test_ten_thousand_paths_collapse_quickly():
    paths = urls(*("d%d/e%d/f%d.png" % (i % 50, i % 500, i) for i in range(10000)))
    assert len(invalidation_paths(paths, 1000)) <= 1000


def memory(store):
    return lambda cfg, base, token: MemoryStorage(store, base, token)


PIPELINE = {"id": "reports", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.png"}, {"match": "*.css"}]}


def dest(**extra):
    return dict({"id": "archive", "storage": MEMORY_STORAGE, "links": {"base_url": BASE}}, **extra)


def test_publish_gives_written_and_deleted_paths(tmp_path):
    store = {}
    first = write_bundle(tmp_path / "v1", {"index.md": b"# a\n", "old.png": b"1", "same.css": b"c"}, created="2026-06-03T00:00:00Z")
    assert publish(first, PIPELINE, dest(), now=NOW, opener=memory(store))["invalidation_paths"] == [
        "/site/", "/site/index.html", "/site/old.png", "/site/same.css"]
    second = write_bundle(tmp_path / "v2", {"index.md": b"# b\n", "same.css": b"c"})
    assert publish(second, PIPELINE, dest(), now=LATER, opener=memory(store))["invalidation_paths"] == [
        "/site/", "/site/index.html", "/site/old.png"]
    assert publish(second, PIPELINE, dest(), now=LATER, opener=memory(store))["invalidation_paths"] == []


def test_without_base_url_publish_gives_no_paths(tmp_path):
    bundle = write_bundle(tmp_path / "v1", {"a.png": b"1"})
    assert publish(bundle, PIPELINE, {"id": "archive", "storage": MEMORY_STORAGE}, now=NOW, opener=memory({}))[
        "invalidation_paths"] == []


def test_prune_gives_the_deleted_paths_and_their_count(tmp_path):
    store = {}
    bundle = write_bundle(tmp_path / "v1", {"a.png": b"1", "b/index.md": b"# b\n"})
    publish(bundle, PIPELINE, dest(), now=NOW, opener=memory(store))
    pruned = prune("reports", dest(retention={"max_age": "1h"}), now=NOW + timedelta(hours=2), opener=memory(store))
    assert pruned["deleted_count"] == 2
    assert pruned["invalidation_paths"] == ["/site/a.png", "/site/b/", "/site/b/index.html"]


# URLs are made, not read: from each output's path and links.base_url, never from a record.

def rewrite_record(store: dict, edit) -> None:
    """Change the state record as anyone who can write the destination could."""
    state = json.loads(store[STATE_NAME])
    edit(state)
    store[STATE_NAME] = json.dumps(state).encode()


def set_url(path: str, url: str):
    def edit(state: dict) -> None:
        next(o for o in state["outputs"] if o["path"] == path)["url"] = url
    return edit


PLANTED_URLS = ["https://cdn.example.com/*", "https://cdn.example.com/docs/site/../../admin/old.png",
                "https://cdn.example.com/site/%2e%2e/admin/old.png", "https://cdn.example.com/site/old.png?x=/*",
                "https://cdn.example.com/site/old.png#/*", "https://cdn.example.com/site\\..\\old.png",
                "https://cdn.example.com/site/other.png"]


@pytest.mark.parametrize("planted", PLANTED_URLS)
def test_a_state_whose_url_was_rewritten_is_refused_never_turned_into_invalidation_paths(tmp_path, planted):
    store = {}
    first = write_bundle(tmp_path / "v1", {"index.md": b"# a\n", "old.png": b"1"}, created="2026-06-03T00:00:00Z")
    publish(first, PIPELINE, dest(), now=NOW, opener=memory(store))
    rewrite_record(store, set_url("old.png", planted))
    second = write_bundle(tmp_path / "v2", {"index.md": b"# b\n"})
    for run in (lambda: publish(second, PIPELINE, dest(), now=LATER, opener=memory(store)),
                lambda: prune("reports", dest(retention={"max_age": "1h"}), now=NOW + timedelta(hours=2), opener=memory(store))):
        with pytest.raises(DistributorError) as refused:
            run()
        assert refused.value.reason == "invalid_state"
        assert "outputs[1].url %r" % planted in refused.value.message and "'old.png'" in refused.value.message
        assert "links.base_url + '/old.png'" in refused.value.message
    assert store["old.png"] == b"1", "nothing deleted"


def test_a_planted_primary_url_is_refused(tmp_path):
    store = {}
    publish(write_bundle(tmp_path / "v1", {"index.md": b"# a\n"}), PIPELINE, dest(), now=NOW, opener=memory(store))
    rewrite_record(store, lambda state: state["links"].update(primary_url="https://cdn.example.com/a/../../admin/"))
    with pytest.raises(DistributorError) as refused:
        publish(write_bundle(tmp_path / "v1", {"index.md": b"# a\n"}), PIPELINE, dest(), now=NOW, opener=memory(store))
    assert refused.value.reason == "invalid_state" and "links.primary_url" in refused.value.message


def test_urls_recorded_under_another_base_are_kept_but_invalidation_uses_the_configured_one(tmp_path):
    """A record's URL under another sound base (links.base_url changed since, another owner's
    destination, an earlier publication) is not refused; the paths a run invalidates are where
    the bundle path is served now, and the primary URL of a skip is made again too."""
    store = {}
    first = write_bundle(tmp_path / "v1", {"index.md": b"# a\n", "old.png": b"1"}, created="2026-06-03T00:00:00Z")
    publish(first, PIPELINE, dest(), now=NOW, opener=memory(store))
    moved = dest(links={"base_url": "https://www.example.com/reports/"})
    skipped = publish(first, PIPELINE, moved, now=LATER, opener=memory(store))
    assert skipped["action"] == "skip" and skipped["primary_url"] == "https://www.example.com/reports/index.html"
    rewrite_record(store, lambda state: state["links"].update(primary_url="https://evil.example/phish.html"))
    assert publish(first, PIPELINE, moved, now=LATER, opener=memory(store))["primary_url"] == (
        "https://www.example.com/reports/index.html"), "a sound but planted primary URL is never returned"
    second = write_bundle(tmp_path / "v2", {"index.md": b"# b\n"})
    result = publish(second, PIPELINE, moved, now=LATER, opener=memory(store))
    assert result["invalidation_paths"] == ["/reports/", "/reports/index.html", "/reports/old.png"]
    assert json.loads(store[STATE_NAME])["links"]["primary_url"] == "https://www.example.com/reports/index.html"


def test_prune_invalidates_at_the_configured_base_url_not_the_recorded_one(tmp_path):
    store = {}
    publish(write_bundle(tmp_path / "v1", {"a.png": b"1"}), PIPELINE, dest(), now=NOW, opener=memory(store))
    rewrite_record(store, set_url("a.png", "https://evil.example/a.png"))
    pruned = prune("reports", dest(retention={"max_age": "1h"}), now=NOW + timedelta(hours=2), opener=memory(store))
    assert pruned["invalidation_paths"] == ["/site/a.png"]


def test_prune_renders_a_base_url_with_placeholders_from_the_owners_recorded_source(tmp_path):
    store = {}
    templated = dest(links={"base_url": "https://cdn.example.com/{source_id}/{created:%Y}/"})
    publish(write_bundle(tmp_path / "v1", {"a.png": b"1"}, id="weekly"), PIPELINE, templated, now=NOW, opener=memory(store))
    pruned = prune("reports", dict(templated, retention={"max_age": "1h"}), now=NOW + timedelta(hours=2),
                   opener=memory(store))
    assert pruned["invalidation_paths"] == ["/weekly/%s/a.png" % json.loads(store[STATE_NAME])["source"]["manifest"]["created"][:4]]
