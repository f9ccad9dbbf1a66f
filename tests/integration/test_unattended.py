# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Safe unattended runs through the real ansible-playbook (issue 23): the delete guard, exact CDN
invalidation paths, and pages written after their assets.

The guard and the invalidation paths run on every backend (local, the test sshd, the moto
server); the page order is observed on local storage, where the files' change times show it.
"""

from __future__ import annotations

import os

PIPELINE = {
    "id": "reports",
    "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.png", "transform": "copy"}],
}
V1 = {"index.md": b"# Home\n", "docs/index.md": b"# Docs\n", "img/a.png": b"\x89PNG a", "img/b.png": b"\x89PNG b"}
SITE = "https://reports.example.com"


def destination(backend, area: str, **extra) -> dict:
    return dict({"id": "web", "storage": backend.storage, "path": area, "links": {"base_url": "%s/%s/" % (SITE, area)}},
                **extra)


def publish(source: str, dest: dict, check: bool = False) -> dict:
    return {"distributor.core.distributor_publish": {"source": source, "pipeline": PIPELINE, "destination": dest},
            "check_mode": check}


def outputs(backend, area: str) -> dict:
    return {p: d for p, d in backend.files(area).items() if not p.startswith(".distributor")}


def refused(result: dict, *phrases: str) -> None:
    assert result.get("failed") and result["reason"] == "delete_limit", result
    for phrase in phrases:
        assert phrase in result["msg"], result["msg"]


def test_the_delete_guard_refuses_before_anything_is_written_in_check_mode_too(playbook, make_bundle, backend):
    v1 = make_bundle(dict(V1, **{"img/c.png": b"c", "img/d.png": b"d"}), created="2026-06-04T10:00:00Z")
    smaller = make_bundle({"index.md": b"# Home, smaller\n"}, created="2026-06-04T11:00:00Z")
    empty = make_bundle({}, created="2026-06-04T12:00:00Z")
    limited = destination(backend, "guard", transfer={"max_deletes": 3})
    (first,) = playbook.run([publish(v1, limited)])
    assert not first.get("failed"), first
    before = backend.files("guard")

    over_checked, over, empty_checked, empty_default = playbook.run([
        publish(smaller, limited, check=True), publish(smaller, limited),
        publish(empty, destination(backend, "guard"), check=True), publish(empty, destination(backend, "guard")),
    ])
    for result in (over_checked, over):
        refused(result, "destination web", "delete 5 output(s), more than transfer.max_deletes (3)",
                "docs/index.html, img/a.png, img/b.png, img/c.png, img/d.png", "raise transfer.max_deletes")
    for result in (empty_checked, empty_default):
        refused(result, "the bundle is empty", "delete 6 output(s)", "transfer.allow_empty: true")
    assert backend.files("guard") == before, "a refused publish changed the destination"

    allowed = destination(backend, "guard", transfer={"allow_empty": True})
    allowed_checked, allowed_run = playbook.run([publish(empty, allowed, check=True), publish(empty, allowed)])
    for result in (allowed_checked, allowed_run):
        assert not result.get("failed"), result
        assert (result["changed"], len(result["deleted"])) == (True, 6)
    assert outputs(backend, "guard") == {}


def test_invalidation_paths_of_publish_replace_merge_skip_collapse_and_prune(playbook, make_bundle, backend):
    v1 = make_bundle(V1, created="2026-06-04T10:00:00Z")
    v2 = make_bundle({"index.md": b"# Home, again\n", "img/a.png": b"\x89PNG a"}, created="2026-06-04T11:00:00Z")
    v3 = make_bundle({"new.png": b"\x89PNG new"}, created="2026-06-04T12:00:00Z")
    cdn = destination(backend, "cdn")
    merged = destination(backend, "cdn", reconciliation={"mode": "merge"})
    collapsed = destination(backend, "wide", links={"base_url": SITE + "/wide/", "invalidation_limit": 4})
    bare = {"id": "web", "storage": backend.storage, "path": "bare"}
    pruning = dict(merged, retention={"max_outputs": 0})
    prune = {"distributor.core.distributor_prune": {"pipeline_id": "reports", "destination": pruning}}
    results = playbook.run([
        publish(v1, cdn), publish(v2, cdn), publish(v3, merged), publish(v3, merged), publish(v1, collapsed),
        publish(v1, bare), dict(prune, check_mode=True), prune,
    ])
    for result in results:
        assert not result.get("failed"), result
    first, replaced, merge, skip, wide, no_links, prune_checked, pruned = results

    assert first["invalidation_paths"] == ["/cdn/", "/cdn/docs/", "/cdn/docs/index.html", "/cdn/img/a.png",
                                           "/cdn/img/b.png", "/cdn/index.html"]
    assert (replaced["written"], replaced["deleted"]) == (["index.html"], ["docs/index.html", "img/b.png"])
    assert replaced["invalidation_paths"] == ["/cdn/", "/cdn/docs/", "/cdn/docs/index.html", "/cdn/img/b.png",
                                              "/cdn/index.html"]
    assert (merge["action"], merge["invalidation_paths"]) == ("merge", ["/cdn/new.png"])
    assert (skip["action"], skip["invalidation_paths"]) == ("skip", [])
    assert wide["invalidation_paths"] == ["/wide/", "/wide/docs/*", "/wide/img/*", "/wide/index.html"]
    assert no_links["invalidation_paths"] == []
    for result in (prune_checked, pruned):
        assert result["deleted_count"] == 3, result
        assert result["invalidation_paths"] == ["/cdn/", "/cdn/img/a.png", "/cdn/index.html", "/cdn/new.png"]
    assert outputs(backend, "cdn") == {}


def test_pages_are_put_in_place_after_every_asset(playbook, make_bundle, tmp_path):
    """Observed by the change time (ctime_ns) of each published file: a file's ctime is set when
    it is renamed from its staged name into place, so every asset must show a ctime no later than
    the earliest page's. Pages sort first by path (a*.html before z*.png) and there are more files
    than one staging batch, so a path-ordered publish would put most pages in place before the
    assets and fail this."""
    files = {"a%03d.md" % i: b"# Page %d\n\n![](z%03d.png)\n" % (i, i) for i in range(300)}
    files.update({"z%03d.png" % i: b"\x89PNG %d" % i for i in range(300)})
    root = tmp_path / "www"
    (result,) = playbook.run([publish(make_bundle(files), {"id": "web", "storage": {"type": "local", "root": str(root)}})])
    assert not result.get("failed") and result["written_count"] == 600, result
    ctime = {name: os.stat(os.path.join(str(root), name)).st_ctime_ns for name in os.listdir(str(root))}
    pages = [t for name, t in ctime.items() if name.endswith(".html")]
    assets = [t for name, t in ctime.items() if name.endswith(".png")]
    assert len(pages) == len(assets) == 300
    assert max(assets) <= min(pages)
