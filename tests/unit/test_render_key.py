# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The render key (state decision 43): a page whose key equals its record's is not rendered again,
in check mode or in a run; every input of the rendering changes the key; a page the plan must
write is rendered then, and what is recorded is what was written."""

from __future__ import annotations

import hashlib
import json
import os

import markdown
import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations import publish as publish_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.records import transforms
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import output_to_dict, state_to_dict
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_parse import parse_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.transforms import Page, render_key

from builders import LATER, NOW, manifest, single_state, write_bundle

SHA = "sha256:" + "a" * 64
PAGES = {"p%d.md" % i: b"# Page %d\n\nText.\n" % i for i in range(10)}
PIPELINE = {"id": "site", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}]}


def local(root):
    return {"id": "web", "storage": {"type": "local", "root": str(root)}}


@pytest.fixture
def renders(monkeypatch):
    """The source paths publish renders, in order."""
    seen = []

    def counting(source, source_path, page=Page()):
        seen.append(source_path)
        return transforms.render_markdown(source, source_path, page)
    monkeypatch.setattr(publish_module, "render_markdown", counting)
    return seen


def state_of(root) -> dict:
    return json.loads((root / ".distributor.json").read_bytes())


def keys_of(root) -> dict:
    return {o["path"]: o.get("render_key") for o in state_of(root)["outputs"]}


def published(tmp_path):
    bundle = write_bundle(tmp_path / "b1", PAGES, created="2026-06-04T11:55:00Z")
    result = publish(bundle, PIPELINE, local(tmp_path / "www"), now=NOW)
    assert result["changed"] and len(result["written"]) == len(PAGES)
    return tmp_path / "www"


def changed_bundle(tmp_path, changes: dict, name="b2"):
    return write_bundle(tmp_path / name, dict(PAGES, **changes), created="2026-06-05T11:55:00Z")


# the key


def test_the_same_inputs_give_the_same_key_in_the_documented_form():
    key = render_key("markdown_to_html", SHA, "docs/a.md", Page())
    assert key == render_key("markdown_to_html", SHA, "docs/a.md", Page(False, None, transforms.DEFAULT_TEMPLATE))
    assert key.startswith("sha256:") and len(key) == 71 and int(key[7:], 16) >= 0


@pytest.mark.parametrize("other", [
    ("copy", SHA, "docs/a.md", Page()),
    ("markdown_to_html", "sha256:" + "b" * 64, "docs/a.md", Page()),
    ("markdown_to_html", SHA, "docs/b.md", Page()),
    ("markdown_to_html", SHA, "docs/a.md", Page(allow_raw_html=True)),
    ("markdown_to_html", SHA, "docs/a.md", Page(stylesheet="/site.css")),
    ("markdown_to_html", SHA, "docs/a.md", Page(template=transforms.DEFAULT_TEMPLATE + " ")),
    ("markdown_to_html", SHA, "docs/a.md", Page(lang="de")),
])
def test_each_input_of_the_rendering_changes_the_key(other):
    assert render_key(*other) != render_key("markdown_to_html", SHA, "docs/a.md", Page())


@pytest.mark.parametrize("owner, name, value", [
    ("transforms", "RENDERER_VERSION", 999), ("transforms", "PYGMENTS_VERSION", None),
    ("transforms", "PYGMENTS_VERSION", "0.1"), ("markdown", "__version__", "0.0.1")])
def test_the_renderer_and_library_versions_change_the_key(monkeypatch, owner, name, value):
    before = render_key("markdown_to_html", SHA, "a.md", Page())
    monkeypatch.setattr(transforms if owner == "transforms" else markdown, name, value)
    transforms._page_facts.cache_clear()
    try:
        assert render_key("markdown_to_html", SHA, "a.md", Page()) != before
    finally:
        monkeypatch.undo()
        transforms._page_facts.cache_clear()
    assert render_key("markdown_to_html", SHA, "a.md", Page()) == before


# planning reuses records whose key is equal


def test_a_replace_renders_only_the_changed_pages_in_check_mode_and_in_the_run(tmp_path, renders):
    www = published(tmp_path)
    keys = keys_of(www)
    assert all(k and k.startswith("sha256:") for k in keys.values())
    renders.clear()
    bundle = changed_bundle(tmp_path, {"p3.md": b"# Changed\n"})
    checked = publish(bundle, PIPELINE, local(www), now=LATER, check_mode=True)
    assert renders == ["p3.md"] and checked["written"] == ["p3.html"]
    renders.clear()
    result = publish(bundle, PIPELINE, local(www), now=LATER, expect_plan_digest=checked["plan_digest"])
    assert renders == ["p3.md"] and result["written"] == ["p3.html"] and result["action"] == "replace"
    after = keys_of(www)
    assert [p for p in after if after[p] != keys[p]] == ["p3.html"]
    assert (www / "p3.html").read_bytes() == transforms.render_markdown(b"# Changed\n", "p3.md")


def test_a_changed_page_option_renders_every_page(tmp_path, renders):
    www = published(tmp_path)
    renders.clear()
    bundle = changed_bundle(tmp_path, {})
    publish(bundle, dict(PIPELINE, markdown={"allow_raw_html": True}), local(www), now=LATER)
    assert sorted(renders) == sorted(PAGES)


def test_a_changed_stylesheet_rewrites_the_pages_of_an_unchanged_bundle_in_check_mode_and_the_run(tmp_path, renders):
    """The same bundle again is no skip when the pipeline's page settings changed: its pages
    were rendered with other settings than it now gives (issue 31: a stylesheet moved from
    1.css to 2.css must reach every published page)."""
    bundle = write_bundle(tmp_path / "b1", PAGES, created="2026-06-04T11:55:00Z")
    first = dict(PIPELINE, markdown={"stylesheet": "/1.css"})
    publish(bundle, first, local(tmp_path / "www"), now=NOW)
    assert publish(bundle, first, local(tmp_path / "www"), now=LATER)["action"] == "skip"
    renders.clear()

    second = dict(PIPELINE, markdown={"stylesheet": "/2.css"})
    check = publish(bundle, second, local(tmp_path / "www"), now=LATER, check_mode=True)
    assert check["action"] == "replace" and "page settings of" in check["reason"]
    assert sorted(check["written"]) == sorted(p.replace(".md", ".html") for p in PAGES)
    ran = publish(bundle, second, local(tmp_path / "www"), now=LATER, expect_plan_digest=check["plan_digest"])
    assert ran["written"] == check["written"]
    assert b"/2.css" in (tmp_path / "www" / "p0.html").read_bytes()
    assert publish(bundle, second, local(tmp_path / "www"), now=LATER)["action"] == "skip"


DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")


def doc_text(name: str) -> str:
    """A document of docs/ with its lines joined, so a sentence is found across a line break."""
    with open(os.path.join(DOCS, name), encoding="utf-8") as handle:
        return " ".join(handle.read().split())


def test_the_docs_say_what_the_test_above_shows():
    """The statements of the render-key behaviour drifted from the code once (issue 41): docs/config.md
    said both that a stylesheet change renders every page of an unchanged bundle and that an
    unchanged bundle is a skip that keeps its pages; the architecture notes called the render key
    coming. What the tests above show is what the docs say."""
    config, architecture = doc_text("config.md"), doc_text("internal/architecture.md")
    assert ("so changing one of them renders every page again at the next publish, an unchanged bundle included: its "
            "publish is a `replace` that writes the pages, in check mode too, not a `skip`") in config
    assert "A page recorded without a render key (state written before render keys existed, schema 1 included) is a match" in config
    assert "an unchanged bundle is a skip and keeps its pages" not in config
    assert "the pages take the new template with the next changed bundle" not in config
    assert "a recorded key that differs makes an unchanged bundle no `skip` and renders that page again" in architecture
    assert "coming render_key" not in architecture and "What it does not do yet" not in architecture


def test_a_changed_language_renders_every_page_of_an_unchanged_bundle(tmp_path, renders):
    bundle = write_bundle(tmp_path / "b1", PAGES, created="2026-06-04T11:55:00Z")
    publish(bundle, PIPELINE, local(tmp_path / "www"), now=NOW)
    assert (tmp_path / "www" / "p0.html").read_bytes().startswith(b'<!DOCTYPE html>\n<html lang="en">')
    renders.clear()
    german = dict(PIPELINE, markdown={"lang": "de"})
    ran = publish(bundle, german, local(tmp_path / "www"), now=LATER)
    assert ran["action"] == "replace" and sorted(renders) == sorted(PAGES)
    assert (tmp_path / "www" / "p0.html").read_bytes().startswith(b'<!DOCTYPE html>\n<html lang="de">')
    assert publish(bundle, german, local(tmp_path / "www"), now=LATER)["action"] == "skip"


def without_keys(root, schema: int) -> None:
    """The state at `root` as written before render keys existed: schema 1 (the seed's), or
    schema 2 by an earlier version."""
    data = state_of(root)
    for record in data["outputs"]:
        del record["render_key"]
    if schema == 1:
        data = dict({k: v for k, v in data.items() if k in ("pipeline_id", "destination_id", "published_at", "source", "links")},
                    schema_version=1, outputs=[{k: v for k, v in o.items() if k not in ("created_at", "updated_at", "attributes")}
                                               for o in data["outputs"]])
    (root / ".distributor.json").write_text(json.dumps(data))


@pytest.mark.parametrize("schema", [1, 2])
def test_records_without_a_key_of_the_same_bundle_are_a_skip_and_the_next_write_records_the_keys(tmp_path, renders, schema):
    """A record written before render keys existed cannot say how its pages were rendered; its
    embedded manifest being the bundle's, it is a match (the seed contract: v1 state embedding
    the same manifest compares as a match), in check mode and in the run, and nothing is rendered
    or written. The next publish that writes outputs renders the pages and records their keys."""
    www = published(tmp_path)
    without_keys(www, schema)
    before = (www / ".distributor.json").read_bytes()
    renders.clear()
    bundle = str(tmp_path / "b1")
    checked = publish(bundle, PIPELINE, local(www), now=LATER, check_mode=True)
    skipped = publish(bundle, PIPELINE, local(www), now=LATER, expect_plan_digest=checked["plan_digest"])
    assert [(r["action"], r["changed"], r["written"]) for r in (checked, skipped)] == [("skip", False, [])] * 2
    assert renders == [] and (www / ".distributor.json").read_bytes() == before

    written = publish(changed_bundle(tmp_path, {"p3.md": b"# Changed\n"}), PIPELINE, local(www), now=LATER)
    assert (written["action"], written["written"], sorted(renders)) == ("replace", ["p3.html"], sorted(PAGES))
    assert state_of(www)["schema_version"] == 2 and all(keys_of(www).values())


def test_records_without_a_key_are_rendered_and_get_one(tmp_path, renders):
    www = published(tmp_path)
    state = state_of(www)
    for record in state["outputs"]:
        del record["render_key"]
    (www / ".distributor.json").write_text(json.dumps(state))
    renders.clear()
    result = publish(changed_bundle(tmp_path, {}), PIPELINE, local(www), now=LATER)
    assert sorted(renders) == sorted(PAGES) and result["written"] == []
    assert all(keys_of(www).values())


def test_a_page_missing_at_the_destination_is_rendered_and_written(tmp_path, renders):
    www = published(tmp_path)
    expected = (www / "p5.html").read_bytes()
    (www / "p5.html").unlink()
    renders.clear()
    result = publish(changed_bundle(tmp_path, {"p3.md": b"# Changed\n"}), PIPELINE, local(www), now=LATER)
    assert sorted(renders) == ["p3.md", "p5.md"] and result["written"] == ["p3.html", "p5.html"]
    assert (www / "p5.html").read_bytes() == expected


def test_a_page_whose_bytes_differ_from_its_reused_record_is_recorded_as_written(tmp_path, renders):
    www = published(tmp_path)
    state = state_of(www)
    record = next(o for o in state["outputs"] if o["path"] == "p5.html")
    record.update(sha256="sha256:" + "0" * 64, size=1)  # a record that lies, keeping its key
    (www / ".distributor.json").write_text(json.dumps(state))
    (www / "p5.html").unlink()
    renders.clear()
    result = publish(changed_bundle(tmp_path, {}), PIPELINE, local(www), now=LATER)
    data = (www / "p5.html").read_bytes()
    recorded = next(o for o in state_of(www)["outputs"] if o["path"] == "p5.html")
    assert renders == ["p5.md"] and result["written"] == ["p5.html"]
    assert (recorded["sha256"], recorded["size"]) == ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))
    assert data == transforms.render_markdown(PAGES["p5.md"], "p5.md")


def test_verify_repairs_a_drifted_page_rendering_only_that_one(tmp_path, renders):
    www = published(tmp_path)
    expected = (www / "p2.html").read_bytes()
    (www / "p2.html").write_bytes(b"x")
    renders.clear()
    result = publish(tmp_path / "b1", PIPELINE, local(www), now=LATER, verify="size")
    assert renders == ["p2.md"] and result["repaired"] == ["p2.html"]
    assert (www / "p2.html").read_bytes() == expected


def test_another_owners_keys_are_not_reused(tmp_path, renders):
    www = published(tmp_path)
    renders.clear()
    result = publish(changed_bundle(tmp_path, {}), dict(PIPELINE, id="other"), dict(local(www), id="web"),
                     now=LATER, force=True)
    assert sorted(renders) == sorted(PAGES) and result["action"] in ("takeover", "force_replace")


# the record


def _v2(**changes) -> dict:
    m = manifest(files={"a.md": b"a"})
    data = state_to_dict(single_state(m, paths=("a.md",)))
    data["outputs"][0].update(kind="generated", transform="markdown_to_html", path="a.html", **changes)
    return data


def test_a_valid_key_is_read_and_written_back():
    state = parse_state(json.dumps(_v2(render_key=SHA)).encode(), "here")
    assert state.outputs[0].render_key == SHA
    assert output_to_dict(state.outputs[0], False)["render_key"] == SHA
    assert "render_key" not in output_to_dict(parse_state(json.dumps(_v2()).encode(), "here").outputs[0], True)


@pytest.mark.parametrize("value, message", [
    (5, "here: outputs[0].render_key must be a string, not an integer"),
    ("sha256:" + "A" * 64, 'here: outputs[0].render_key "sha256:%s" is not sha256: followed by 64 lowercase hex digits' % ("A" * 64)),
    (SHA + "\n", "here: outputs[0].render_key must not be longer than 71 characters"),
    (None, "here: outputs[0].render_key must be a string, not null"),
])
def test_a_malformed_key_makes_the_state_invalid_naming_the_field(value, message):
    with pytest.raises(DistributorError) as raised:
        parse_state(json.dumps(_v2(render_key=value)).encode(), "here")
    assert raised.value.reason == "invalid_state"
    assert "outputs[0].render_key" in raised.value.message
    if "longer" not in message:
        assert raised.value.message == message


def test_schema_1_has_no_render_key_and_an_extra_one_is_ignored():
    data = _v2(render_key=SHA)
    v1 = {k: v for k, v in data.items() if k in ("pipeline_id", "destination_id", "published_at", "source", "links")}
    v1.update(schema_version=1, outputs=[{k: v for k, v in o.items() if k not in ("created_at", "updated_at")} for o in data["outputs"]])
    assert parse_state(json.dumps(v1).encode(), "here").outputs[0].render_key is None


# the renderer's version guard

GOLDEN_PAGES = {  # RENDERER_VERSION -> sha256 of each sample page's bytes, as that version renders it
    1: ("4deead37ab9fc2c38ecec100c1b177473adc88a56edeacded9848823043bad40",
        "2967778554d6a6ed6fe9d68c3f08b3e17078c089c50e5da491c206886011eaee"),
    # 2 escapes the title's quotes: pages whose title has none (the first two) kept their bytes; the
    # third sample, a title in a template's attributes, was added with it.
    2: ("4deead37ab9fc2c38ecec100c1b177473adc88a56edeacded9848823043bad40",
        "2967778554d6a6ed6fe9d68c3f08b3e17078c089c50e5da491c206886011eaee",
        "728788d84b06f774bc71fea97f3663e5c7c251229d4cddc7500a1d4a226a80da"),
    # 3 writes the page's language (<html lang="en">): the built-in page's samples changed, the
    # template's (which has no {lang}) kept its bytes.
    3: ("798c2e1a86c00a694bbeab0ac075fe0f4bce757c304a91b37ca9751ee7eb0531",
        "2c3c44ffe5a2e1d53a263f91f5e72c48ae97c4ae2fa25e201116e59829ea7d37",
        "728788d84b06f774bc71fea97f3663e5c7c251229d4cddc7500a1d4a226a80da"),
}
SAMPLES = (
    (b"# Release notes\n\nSee [the guide](guide/intro.md#setup), [home](https://example.com/a.md) and "
     b"[bad](javascript:alert(1)).\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<b>raw</b> & more\n", "notes/release.md", Page()),
    (b"no heading here\n", "notes/plain-page.md", Page(stylesheet="/site.css")),
    (b"# It's' onload='alert(1)\" & <b>\n", "notes/quoted.md",
     Page(template="<title>{title}</title><meta content='{title}'><meta content=\"{title}\">{stylesheet}{content}")),
)


def test_the_rendered_bytes_change_only_with_the_renderer_version():
    """A key equal to a record's reuses that record's page, so distributor's own rendering (title,
    link rewriting, template, escaping) must not change under the same RENDERER_VERSION: pages
    rendered by the old code would be kept as if current. Pages built only from Markdown's most
    stable constructs keep this independent of the library's releases."""
    rendered = tuple(hashlib.sha256(transforms.render_markdown(*sample)).hexdigest() for sample in SAMPLES)
    assert rendered == GOLDEN_PAGES.get(transforms.RENDERER_VERSION), (
        "the renderer's output changed: raise transforms.RENDERER_VERSION and record the new digests in GOLDEN_PAGES")


def test_an_older_source_is_skipped_whatever_its_pages_render_keys(tmp_path):
    """Render keys hold the source's digest: an older source skipped under on_destination_newer
    has other keys than the newer one recorded, and that is no change of page settings."""
    www = published(tmp_path)
    older = write_bundle(tmp_path / "old", dict(PAGES, **{"p0.md": b"# Older\n"}), created="2026-06-03T11:55:00Z")
    skipped = publish(older, PIPELINE, local(www), now=LATER)
    assert (skipped["action"], skipped["changed"], skipped["written"]) == ("skip", False, [])
