# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render keys through ansible-playbook on local storage: a replace with a tenth of the pages
changed renders and writes only those (the other pages' files and records stay as they were), and
a changed page option renders every page again."""

from __future__ import annotations

import json
import os

PAGES = {"docs/p%02d.md" % i: b"# Page %d\n\nSome <b>raw</b> text.\n" % i for i in range(20)}
CHANGED = ("docs/p04.md", "docs/p13.md")


def pipeline(**markdown):
    return {"id": "site", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}], "markdown": markdown}


def records(root) -> dict:
    with open(os.path.join(root, ".distributor.json")) as handle:
        return {o["path"]: o for o in json.load(handle)["outputs"]}


def stamps(root) -> dict:
    found = {}
    for path in records(root):
        info = os.stat(os.path.join(root, path))
        found[path] = (info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
    return found


def test_a_replace_renders_only_the_changed_pages_and_a_page_option_renders_all(playbook, make_bundle, tmp_path):
    root = str(tmp_path / "www")
    destination = {"id": "web", "storage": {"type": "local", "root": root}}
    first = playbook.publish(source=make_bundle(PAGES), pipeline=pipeline(), destination=destination)
    assert first["changed"] and len(first["written"]) == 20, first
    before, untouched = records(root), stamps(root)
    assert all(r["render_key"].startswith("sha256:") for r in before.values())

    changed = make_bundle(dict(PAGES, **{p: b"# Changed\n" for p in CHANGED}), created="2026-06-05T11:55:00Z")
    checked = playbook.publish(source=changed, pipeline=pipeline(), destination=destination, check=True)
    result = playbook.publish(source=changed, pipeline=pipeline(), destination=destination,
                              expect_plan_digest=checked["plan_digest"])
    pages = ["docs/p04.html", "docs/p13.html"]
    assert (checked["written"], result["written"], result["action"]) == (pages, pages, "replace"), result
    after = records(root)
    assert sorted(p for p in after if after[p]["render_key"] != before[p]["render_key"]) == pages
    now = stamps(root)
    assert {p: s for p, s in now.items() if p not in pages} == {p: s for p, s in untouched.items() if p not in pages}

    again = make_bundle(dict(PAGES, **{p: b"# Changed\n" for p in CHANGED}), created="2026-06-06T11:55:00Z")
    raw = playbook.publish(source=again, pipeline=pipeline(allow_raw_html=True), destination=destination)
    assert len(raw["written"]) == 18 and not set(raw["written"]) & set(pages), raw  # the changed pages hold no raw HTML
    rendered = records(root)
    assert all(rendered[p]["render_key"] != after[p]["render_key"] for p in rendered)
    with open(os.path.join(root, "docs/p00.html")) as handle:
        assert "<b>raw</b>" in handle.read()
