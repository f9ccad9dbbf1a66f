# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The column checks (columns.py) change nothing but speed: a manifest or a single-owner state
they accept is one the full path accepts, with the same model; one they decline goes through the
full path unchanged, so acceptances, refusals and their wording stay the full path's."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor.records import columns
from ansible_collections.distributor.core.plugins.module_utils._distributor.records import manifest as manifest_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.records import state_parse as state_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.formats import is_sha256
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import Pipeline, Rule
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest import Manifest, ManifestFile, parse_manifest
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import all_clean, path_problem
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.plan import PlannedOutput, plan_outputs
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import Output, State, state_to_dict
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_parse import parse_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.urls import all_made, recorded_url_problem

from builders import manifest, single_state

SHA = "sha256:" + "a" * 64
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
PATHS = ["a.md", "b/c.png", "b", "b/c.png/d", "a.md/x", "é.html", "caf\udce9.html", "", ".", "..", "...", "a/./b",
         "a//b", "/a", "a/", "a\\b", "a\nb", "a\x7f", "a\x00", ".distributor.json", "x/.distributor-y", "b/.distributorx",
         "z.html", "0.md"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 5), st.sampled_from([1.0, 0.5, 4.0]),
                    st.sampled_from(PATHS + [SHA, SHA + "\n", "sha256:" + "A" * 64, "sha256:" + "a" * 63, SHA[:-1] + "g",
                                             "sha256:sha256:" + "a" * 57, "source", "generated", "markdown_to_html",
                                             "https://e.org/a.html", "https://e.org/b/c.png", "http://x\nhttp://y",
                                             "http://x\nhttps://e.org/site/b/c.png",
                                             "ftp://e.org", "https://e.org/?a", "2026-06-04T12:00:00Z", "2026-13-04T12:00:00Z",
                                             "replace", "merge", "single_owner"]))
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=2), st.dictionaries(st.sampled_from(["mode", "a", "file_mode"]),
                                                                           SCALARS, max_size=2))


@contextlib.contextmanager
def full_path_only():
    """parse_manifest and parse_state with their column checks left out: the full path alone."""
    saved = manifest_module.recognised, state_module._recognised
    manifest_module.recognised = state_module._recognised = lambda data: None
    try:
        yield
    finally:
        manifest_module.recognised, state_module._recognised = saved


def outcome(parse, data, full: bool):
    """The model `parse` makes of `data`, or the message it refuses it with; nothing remembered
    from an earlier parse (manifest._VALID)."""
    manifest_module._VALID.clear()
    with full_path_only() if full else contextlib.nullcontext():
        try:
            return parse(copy.deepcopy(data))
        except DistributorError as error:
            return error.reason, error.message


def parse_manifest_json(data):
    return parse_manifest(data, "manifest.json")


def parse_state_json(data):
    return parse_state(json.dumps(data).encode(), ".distributor.json")


def digest_of(files) -> str | None:
    """The manifest digest of `files` written out the way compute_digest did before columns.py
    (a line at a time), or None when there is none to compute."""
    try:
        ordered = sorted(files, key=lambda f: f["path"].encode("utf-8"))
        hasher = hashlib.sha256()
        for entry in ordered:
            hasher.update(("%s\0%s\0%d\n" % (entry["path"], entry["sha256"], entry["size"])).encode("utf-8"))
    except (TypeError, KeyError, UnicodeEncodeError, AttributeError):
        return None
    return "sha256:" + hasher.hexdigest()


def manifest_of(paths, **top) -> dict:
    files = [{"path": p, "sha256": "sha256:" + hashlib.sha256(p.encode("utf-8", "surrogatepass")).hexdigest(), "size": len(p)}
             for p in paths]
    data = {"schema_version": 1, "id": "reports", "digest": digest_of(files) or SHA, "created": "2026-06-04T11:55:00Z",
            "files": files}
    data.update(top)
    return data


MANIFEST = manifest_of(["a.md", "b/c.png", "b/d/e.txt", "é.html"])


def _state() -> dict:
    m = manifest(files={"a.md": b"# A\n", "b/c.png": b"c", "b/d/e.txt": b"e"})
    data = state_to_dict(single_state(m, paths=("a.md", "b/c.png", "b/d/e.txt")))
    data["outputs"][0].update(kind="generated", transform="markdown_to_html", url="https://e.org/site/a.html", render_key=SHA,
                              attributes={"file_mode": "0640"}, path="a.html")
    data["outputs"][1].update(url="https://e.org/site/b/c.png", attributes={})
    data["outputs"].sort(key=lambda o: o["path"])
    data["links"] = {"primary_url": "https://e.org/site/a.html"}
    return data


STATE = _state()
OUTPUT_FIELDS = ["path", "sha256", "size", "kind", "source_path", "transform", "url", "created_at", "updated_at", "attributes",
                 "render_key", "extra"]
MUTATIONS = st.one_of(
    st.tuples(st.just("set"), st.integers(0, 4), st.sampled_from(OUTPUT_FIELDS), VALUES),
    st.tuples(st.just("drop"), st.integers(0, 4), st.sampled_from(OUTPUT_FIELDS), st.none()),
    st.tuples(st.just("replace"), st.integers(0, 4), st.none(), VALUES),
    st.tuples(st.just("swap"), st.integers(0, 4), st.none(), st.integers(0, 4)),
    st.tuples(st.just("repeat"), st.integers(0, 4), st.none(), st.none()),
)


def mutated(items: list, mutations) -> list:
    items = copy.deepcopy(items)
    for how, index, field, value in mutations:
        index %= len(items)
        if how == "replace":
            items[index] = value
        elif how == "swap":
            items[index], items[value % len(items)] = items[value % len(items)], items[index]
        elif how == "repeat":
            items.insert(index, copy.deepcopy(items[index]))
        elif isinstance(items[index], dict):
            if how == "set":
                items[index][field] = value
            else:
                items[index].pop(field, None)
    return items


def test_valid_documents_take_the_column_path():
    """Else every test below would compare the full path with itself."""
    assert columns.manifest_columns(MANIFEST) is not None
    embedded = STATE["source"]["manifest"]
    assert columns.manifest_columns(embedded) is not None
    assert columns.single_owner_columns(STATE, [f["path"] for f in embedded["files"]]) is not None
    assert isinstance(outcome(parse_manifest_json, MANIFEST, False), Manifest)
    assert isinstance(outcome(parse_state_json, STATE, False), State)


@pytest.mark.parametrize("data, parse", [(MANIFEST, parse_manifest_json), (STATE, parse_state_json)], ids=["manifest", "state"])
def test_the_column_path_makes_the_full_paths_model(data, parse):
    assert outcome(parse, data, False) == outcome(parse, data, True)


@SETTINGS
@given(mutations=st.lists(MUTATIONS, max_size=3), top=st.one_of(st.none(), st.tuples(
    st.sampled_from(["schema_version", "id", "digest", "created", "files", "extra"]), VALUES)), redigest=st.booleans())
def test_a_mutated_manifest_gets_the_full_paths_verdict(mutations, top, redigest):
    data = dict(MANIFEST, files=mutated(MANIFEST["files"], mutations))
    if top is not None:
        data[top[0]] = top[1]
    if redigest and isinstance(data.get("files"), list):
        data["digest"] = digest_of(data["files"]) or data["digest"]
    fast = outcome(parse_manifest_json, data, False)
    assert fast == outcome(parse_manifest_json, data, True)
    if columns.manifest_columns(data) is not None:
        assert isinstance(fast, Manifest)


@SETTINGS
@given(paths=st.lists(st.sampled_from(PATHS) | st.text("ab/.\\\n\x00é", max_size=6), max_size=6))
def test_a_manifest_of_any_paths_gets_the_full_paths_verdict(paths):
    """Paths in any order, repeated, inside one another, reserved, unclean: the digest always
    matches, so only the path rules can object."""
    data = manifest_of(paths)
    assert outcome(parse_manifest_json, data, False) == outcome(parse_manifest_json, data, True)


@SETTINGS
@given(mutations=st.lists(MUTATIONS, max_size=3),
       top=st.one_of(st.none(), st.tuples(st.sampled_from(
           ["schema_version", "distributor_version", "pipeline_id", "published_at", "created_at", "state", "reconciliation",
            "source", "links", "outputs", "extra"]), VALUES)),
       files=st.lists(MUTATIONS, max_size=1), drop=st.sampled_from([None, "links", "distributor_version", "updated_at"]))
def test_a_mutated_single_owner_state_gets_the_full_paths_verdict(mutations, top, files, drop):
    data = copy.deepcopy(STATE)
    data["outputs"] = mutated(data["outputs"], mutations)
    data["source"]["manifest"]["files"] = mutated(data["source"]["manifest"]["files"], files)
    if top is not None:
        data[top[0]] = top[1]
    data.pop(drop, None)
    assert outcome(parse_state_json, data, False) == outcome(parse_state_json, data, True)


def recorded_json(data):
    return state_module.recorded_files(json.dumps(data).encode(), ".distributor.json")


def files_of(found):
    """What removing a release generation reads of a record: each output's size and digest by
    path, or the refusal."""
    return {o.path: (o.size, o.sha256) for o in found.outputs} if isinstance(found, State) else found


@SETTINGS
@given(mutations=st.lists(MUTATIONS, max_size=3),
       top=st.one_of(st.none(), st.tuples(st.sampled_from(
           ["schema_version", "pipeline_id", "published_at", "source", "outputs", "extra"]), VALUES)),
       files=st.lists(MUTATIONS, max_size=1))
def test_the_files_a_record_vouches_for_are_those_the_full_path_reads_from_it(mutations, top, files):
    """state_parse.recorded_files, read from the columns without a model of each output, accepts and
    refuses exactly the records parse_state does, and names the same files."""
    data = copy.deepcopy(STATE)
    data["outputs"] = mutated(data["outputs"], mutations)
    data["source"]["manifest"]["files"] = mutated(data["source"]["manifest"]["files"], files)
    if top is not None:
        data[top[0]] = top[1]
    assert outcome(recorded_json, data, False) == files_of(outcome(parse_state_json, data, True))


def test_a_schema_1_record_whose_output_time_is_a_list_is_refused_naming_it():
    """Schema 1 leaves an output's times untyped: a list there was looked up among the valid
    times and raised TypeError (found by the test above) instead of the record being refused."""
    data = copy.deepcopy(STATE)
    data["schema_version"] = 1
    data["outputs"][0]["created_at"] = []
    refused = outcome(parse_state_json, data, True)
    assert refused[0] == "invalid_state" and "outputs[0].created_at" in refused[1]
    assert outcome(recorded_json, data, False) == refused


def test_the_files_of_a_valid_record_are_read_from_its_columns():
    assert outcome(recorded_json, STATE, False) == files_of(outcome(parse_state_json, STATE, True))
    assert state_module._columns(copy.deepcopy(STATE), state_module._paths_of) is not None


def test_a_state_claiming_the_bundles_digest_for_other_files_is_refused():
    """The bundle's manifest is remembered by digest; a record claiming that digest for files
    of other content is not taken for it: its files are compared, then its digest recomputed."""
    bundle = parse_manifest(copy.deepcopy(STATE["source"]["manifest"]), "manifest.json")
    data = copy.deepcopy(STATE)
    data["source"]["manifest"]["files"][1]["sha256"] = SHA
    with pytest.raises(DistributorError) as caught:
        parse_state_json(data)
    assert "source.manifest: digest" in caught.value.message and "does not match its files" in caught.value.message
    data["source"]["manifest"]["files"][1]["sha256"] = bundle.files[1].sha256
    data["source"]["manifest"]["files"][1]["size"] = float(bundle.files[1].size)
    with pytest.raises(DistributorError) as caught:
        parse_state_json(data)
    assert caught.value.message.endswith("source.manifest: files[1].size must be an integer, not a number")


@SETTINGS
@given(st.lists(st.sampled_from(PATHS) | st.text("ab/.\\\n\x00\x7fé", max_size=7), max_size=5))
def test_paths_are_all_clean_exactly_when_each_is(paths):
    assert all_clean(paths) == all(path_problem(p) is None for p in paths)


@SETTINGS
@given(st.lists(st.sampled_from([SHA, "sha256:" + "0123456789abcdef" * 4, SHA + "\n", "sha256:" + "A" * 64, SHA[:-1],
                                 "sha256:sha256:" + "a" * 57, "xsha256:" + "a" * 63, SHA[:-1] + "é", "", "sha256"])
                | st.text("sha256:0af", min_size=70, max_size=72), max_size=4))
def test_sha256_columns_pass_exactly_when_each_value_does(values):
    assert columns.sha256_column(values) == all(map(is_sha256, values))


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["https://e.org/", "https://e.org/site/", "http://e.org/?q/", "https://", "ftp://e.org/",
                                           "https://e.org/%2e%2e/", "https://e.org/a#/", "https://e.org/x\\/"]),
                          st.sampled_from(["a.html", "b/c.png", "d/e f.html", "g.html"]), st.booleans()), max_size=4))
def test_urls_made_in_columns_are_those_each_record_passes(pairs):
    urls = [base + (path if plain else "other.html") for base, path, plain in pairs]
    paths = [path for _base, path, _plain in pairs]
    if all_made(urls, paths):
        assert all(recorded_url_problem(url, path) is None for url, path in zip(urls, paths))
    if all(" " not in p for p in paths) and all(recorded_url_problem(url, path) is None for url, path in zip(urls, paths)):
        assert all_made(urls, paths), "sound bases and plain paths should not need the per-record check"


@pytest.mark.parametrize("field, value", [
    ("url", "http://x\nhttps://e.org/site/b/c.png"),
    ("url", "https://e.org/site/b/c.png\n"),
    ("sha256", SHA + "\n" + SHA),
    ("render_key", SHA + "\n"),
    ("path", "b/c.png\nb/c.png"),
    ("created_at", "2026-06-04T12:00:00Z\n"),
])
def test_a_value_holding_a_newline_is_not_taken_for_two(field, value):
    """Columns are checked joined by newlines: a value holding one must not pass as two lines.
    The column path declines each (the full path accepts a URL ending with one, as the schema's
    `$` and urlsplit do)."""
    data = copy.deepcopy(STATE)
    data["outputs"][1][field] = value
    assert columns.single_owner_columns(data, [f["path"] for f in data["source"]["manifest"]["files"]]) is None
    assert outcome(parse_state_json, data, False) == outcome(parse_state_json, data, True)


def test_records_made_from_columns_read_and_compare_like_the_dataclasses_they_replace():
    """A manifest's files, the plan's outputs and a state's records are Rows made at C level:
    each equals only a record of its own kind with equal fields (never a tuple, nor another kind
    with the same values), hashes by its fields and cannot be changed."""
    entry = ManifestFile("a.md", SHA, 1)
    made = columns.rows(ManifestFile, ["a.md"], [SHA], [1])
    assert made == (entry,) and made[0].__class__ is ManifestFile
    assert (entry.path, entry.sha256, entry.size) == ("a.md", SHA, 1)
    assert repr(entry) == "ManifestFile(path='a.md', sha256=%r, size=1)" % SHA
    assert entry != ("a.md", SHA, 1) and ("a.md", SHA, 1) != entry and (entry == ("a.md", SHA, 1)) is False
    planned = PlannedOutput("a.md", "source", "a.md", "copy")
    assert planned != ("a.md", "source", "a.md", "copy") and planned == PlannedOutput("a.md", "source", "a.md", "copy")
    twin = type("Twin", (columns.Row, columns.fields("Twin", "path", "sha256", "size")), {"__slots__": ()})("a.md", SHA, 1)
    assert entry != twin and twin != entry
    assert len({entry, ManifestFile("a.md", SHA, 1)}) == 1 and {entry: 1}[ManifestFile("a.md", SHA, 1)] == 1
    with pytest.raises(AttributeError):
        entry.path = "b.md"
    assert not hasattr(entry, "__dict__")
    output = outcome(parse_state_json, STATE, False).outputs[0]
    assert output.__class__ is Output and output == outcome(parse_state_json, STATE, True).outputs[0] and output != tuple(output)


def test_a_manifest_and_a_plan_from_columns_hold_their_own_kinds():
    parsed = outcome(parse_manifest_json, MANIFEST, False)
    assert {type(entry) for entry in parsed.files} == {ManifestFile}
    assert parsed == outcome(parse_manifest_json, MANIFEST, True)
    planned = plan_outputs(parsed, Pipeline("p", (Rule("**", "copy"),), False))
    assert planned == tuple(PlannedOutput(f.path, "source", f.path, "copy") for f in parsed.files)
