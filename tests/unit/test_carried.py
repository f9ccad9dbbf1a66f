# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Other owners' records of a shared root carried as checked lines (carried.py,
columns.shared_output_lines, state_parse._carried), and their embedded manifests' file lines
(carried.CarriedFiles, columns.file_line_columns, manifest.carried): the fast path accepts only
what the full path accepts, models what it accepts the same way, writes carried lines back byte
for byte, and every operation that reads other owners answers as it does on the modelled state."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from unittest import mock
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor.records import manifest as manifest_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.records import state_parse as state_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.carried import Carried, CarriedFiles
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest import Manifest, ManifestFile, compute_digest
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.reconcile import reconcile_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import Output, Owner, OwnerKey, State, serialize_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_parse import parse_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info

from builders import LATER, MEMORY_STORAGE, NOW, sha, write_bundle
from memory_storage import MemoryStorage

WHERE = "root/.distributor.json"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMES = ("2026-06-04T12:00:00Z", "2026-06-05T08:30:00+02:00", "2026-06-04T12:00:00.5Z")
PATHS = ("a.html", "b/c.txt", "b/d.css", "b/e/f.png", "g h.txt", "k/é.html", "index.html", "z.txt")
KEYS = (OwnerKey("reports", "site"), OwnerKey("events", "site"), OwnerKey("docs", "web"))


def _decoded(raw: bytes, where: str = WHERE) -> State:
    """The full path alone: what parse_state did before records were carried."""
    return state_module._decoded(raw, where)


def _verdict(parse, raw: bytes):
    try:
        return parse(raw, WHERE)
    except DistributorError as error:
        return (error.reason, error.message)


def _manifest(key: OwnerKey, paths) -> Manifest:
    files = tuple(ManifestFile(p, sha(p.encode()), len(p)) for p in sorted(paths))
    return Manifest(1, "%s.src" % key.pipeline_id, compute_digest(files), TIMES[0], files)


@st.composite
def shared_states(draw) -> State:
    """A shared-root state as distributor writes one: owners with manifests, each path one
    record, records of every shape (pages with transform and render key, URLs, attributes)."""
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True))
    paths = sorted(draw(st.lists(st.sampled_from(PATHS), min_size=1, max_size=len(PATHS), unique=True)))
    owned = {key: [] for key in keys}
    outputs = []
    for path in paths:
        key = draw(st.sampled_from(keys))
        owned[key].append(path)
        generated = draw(st.booleans())
        base = draw(st.sampled_from((None, "https://cdn.example/site", "http://h.example/x/{y}")))
        outputs.append(Output(
            path=path, kind="generated" if generated else "source",
            source_path=path[:-5] + ".md" if generated and path.endswith(".html") else path,
            transform="markdown_to_html" if generated else draw(st.sampled_from((None, "copy"))),
            url=None if base is None else base + "/" + quote(path),
            sha256=sha(path.encode() + b"!"), size=draw(st.integers(0, 10 ** 12)),
            created_at=draw(st.sampled_from(TIMES)), updated_at=draw(st.sampled_from(TIMES)), owner=key,
            source_id="%s.src" % key.pipeline_id, source_digest=sha(key.pipeline_id.encode()), source_created=TIMES[0],
            attributes=draw(st.sampled_from(((), (("file_mode", "0640"),), (("file_mode", "0600"), ("owner", "www"))))),
            render_key=sha(b"key " + path.encode()) if generated and draw(st.booleans()) else None))
    owners = tuple(Owner(key, draw(st.sampled_from(("replace", "merge"))), _manifest(key, owned[key] if draw(st.booleans()) else ()),
                         draw(st.sampled_from((None, "https://cdn.example/site/a.html")))) for key in keys)
    return State("shared_root", 3, TIMES[0], TIMES[1], None, "0.1.0", owners, tuple(outputs))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(shared_states())
def test_carried_records_read_as_the_full_path_reads_them_and_are_written_back_unchanged(state):
    raw = serialize_state(state)
    with mock.patch.dict(manifest_module._VALID, clear=True):  # none of the manifests met before
        carried = parse_state(raw, WHERE)
    modelled = _decoded(raw)
    assert carried == modelled == state
    if b"\\" not in raw:  # escaped text (a path not in ASCII) takes the full path
        assert isinstance(carried.outputs, Carried)
        assert all(isinstance(o.manifest.files, CarriedFiles) for o in carried.owners if o.manifest.files)
    for mine, theirs in zip(carried.owners, modelled.owners):
        assert mine.manifest == theirs.manifest and mine.manifest.paths == theirs.manifest.paths
        assert tuple(mine.manifest.files) == theirs.manifest.files and len(mine.manifest.files) == len(theirs.manifest.files)
    for key in KEYS:
        assert carried.outputs_of(key) == modelled.outputs_of(key)
    assert dict(carried.by_path()) == dict(modelled.by_path())
    assert dict(carried.owners_by_path()) == {o.path: o.owner for o in modelled.outputs}
    assert serialize_state(carried) == serialize_state(modelled) == raw


def _lines(raw: bytes) -> list:
    return raw.split(b"\n")


# Values a writer of the destination might plant in one member of one output line.
PLANTED = {
    "path": ['""', '"../x"', '"/abs"', '".distributor.json"', '"a//b"', '"b/c.txt/x"', '"a\\u002fb"', '"\\u00e9.txt"', "1",
             '"zz/last.txt"', '"0first.txt"'],
    "kind": ['"page"', '"generated"', "null"],
    "url": ['"https://evil.example/other.html"', '"javascript:alert(1)"', '"https://h/a b"', '""', '"https://h/*"'],
    "sha256": ['"sha256:AB"', '"md5:00"', '"sha256:' + "0" * 63 + 'G"'],
    "size": ["-1", "1.5", "true", '"3"', "1" + "0" * 5000, "01", "1e3"],
    "pipeline_id": ['"stranger"', '""', "null"],
    "destination_id": ['"elsewhere"'],
    "source_digest": ['"sha256:x"'],
    "source_created": ['"yesterday"', '""'],
    "created_at": ['"2026-13-01T00:00:00Z"', '"now"', "0"],
    "updated_at": ['"2026-06-04 12:00:00"', '""'],
    "transform": ['""', "null", "7"],
    "attributes": ['{}', '{"owner": "www", "file_mode": "0640"}', '{"file_mode": "0640", "file_mode": "0600"}',
                   '{"file_mode": 420}', '{"a": {"b": "c"}}'],
    "render_key": ['"sha256:short"', "null"],
}


def _plant(line: bytes, member: str, value: str) -> bytes:
    record = line.rstrip(b",")
    comma = line[len(record):]
    text = record.decode("utf-8")
    start = text.find('"%s": ' % member)
    if start < 0:
        return (text[:-1] + ', "%s": %s}' % (member, value)).encode("utf-8") + comma
    end = start + len('"%s": ' % member)
    depth, index = 0, end
    for index in range(end, len(text)):
        char = text[index]
        depth += char in "{["
        depth -= char in "}]"
        if depth < 0 or (depth == 0 and text.startswith(", \"", index) and not text[end:index].count('"') % 2):
            break
    return (text[:end] + value + text[index:]).encode("utf-8") + comma


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(shared_states(), st.data())
def test_a_planted_or_malformed_record_gets_the_full_paths_verdict(state, data):
    """Whatever one line of the outputs block is changed to, parse_state answers what the full
    path answers: the same model, or invalid_state with the same message naming the field."""
    raw = serialize_state(state)
    lines = _lines(raw)
    first = lines.index(b'  "outputs": [') + 1
    index = data.draw(st.integers(first, len(lines) - 4))
    how = data.draw(st.sampled_from(("member", "bytes", "swap", "duplicate")))
    if how == "member":
        member = data.draw(st.sampled_from(sorted(PLANTED)))
        lines[index] = _plant(lines[index], member, data.draw(st.sampled_from(PLANTED[member])))
    elif how == "bytes":
        at = data.draw(st.integers(0, len(lines[index])))
        cut = data.draw(st.integers(0, 3))
        lines[index] = lines[index][:at] + data.draw(st.binary(max_size=3)) + lines[index][at + cut:]
    elif how == "swap" and index + 1 <= len(lines) - 4:
        first_record, second_record = lines[index].rstrip(b","), lines[index + 1].rstrip(b",")
        lines[index], lines[index + 1] = (second_record + lines[index][len(first_record):],
                                          first_record + lines[index + 1][len(second_record):])
    else:
        lines.insert(index, lines[index].rstrip(b",") + b",")
    planted = b"\n".join(lines)
    verdict = _verdict(parse_state, planted)
    assert verdict == _verdict(_decoded, planted)
    if isinstance(verdict, State):  # and it is written back as the full path's model of it would be
        assert serialize_state(verdict) == serialize_state(_decoded(planted))


# Values a writer of the destination might plant in one member of one manifest file entry.
PLANTED_FILES = {
    "path": ['""', '"../x"', '"/abs"', '".distributor.json"', '"a//b"', '"b/c.txt/x"', '"b"', '"a\\u002fb"', '"\\u00e9.txt"', "1",
             '"zz/last.txt"', '"0first.txt"', '"a.html"', '"x/.distributor-tmp"'],
    "sha256": ['"sha256:AB"', '"md5:00"', '"sha256:' + "0" * 63 + 'G"', '"SHA256:' + "0" * 64 + '"', "null"],
    "size": ["-1", "1.5", "true", '"3"', "1" + "0" * 5000, "01", "1e3", "1" + "0" * 18, "0"],
    "extra": ['"x"', "{}"],
}
# And in a member of the manifest the entries belong to.
PLANTED_MANIFEST = {
    "digest": ['"sha256:' + "0" * 64 + '"', '"sha256:x"'],
    "created": ['"yesterday"', '"2026-06-05T08:30:00+02:00"'],
    "id": ['""', '"other.src"'],
    "schema_version": ["2", "1.0", "true"],
}


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(shared_states(), st.data())
def test_a_planted_or_malformed_manifest_entry_gets_the_full_paths_verdict(state, data):
    """Whatever one line of an owner's embedded manifest is changed to (an entry or a member of
    the manifest), parse_state answers what the full path answers: the same model, or
    invalid_state with the same message naming the owner and the field."""
    raw = serialize_state(state)
    lines = _lines(raw)
    entries = [i for i, line in enumerate(lines) if line.startswith(b'            {"path": ')]
    members = [i for i, line in enumerate(lines) if line.startswith(b'          "') and not line.startswith(b'          "files"')]
    if not entries:
        return
    how = data.draw(st.sampled_from(("member", "manifest", "bytes", "swap", "duplicate", "drop")))
    index = data.draw(st.sampled_from(members if how == "manifest" else entries))
    if how == "member":
        member = data.draw(st.sampled_from(sorted(PLANTED_FILES)))
        lines[index] = _plant(lines[index], member, data.draw(st.sampled_from(PLANTED_FILES[member])))
    elif how == "manifest":
        name = lines[index].split(b'"')[1].decode()
        if name in PLANTED_MANIFEST:
            lines[index] = _plant(lines[index], name, data.draw(st.sampled_from(PLANTED_MANIFEST[name])))
    elif how == "bytes":
        at = data.draw(st.integers(0, len(lines[index])))
        cut = data.draw(st.integers(0, 3))
        lines[index] = lines[index][:at] + data.draw(st.binary(max_size=3)) + lines[index][at + cut:]
    elif how == "swap" and index + 1 in entries:
        first_entry, second_entry = lines[index].rstrip(b","), lines[index + 1].rstrip(b",")
        lines[index], lines[index + 1] = (second_entry + lines[index][len(first_entry):],
                                          first_entry + lines[index + 1][len(second_entry):])
    elif how == "duplicate":
        lines.insert(index, lines[index].rstrip(b",") + b",")
    elif index + 1 in entries:
        del lines[index]
    planted = b"\n".join(lines)
    verdict = _verdict(parse_state, planted)
    assert verdict == _verdict(_decoded, planted)
    if isinstance(verdict, State):
        assert serialize_state(verdict) == serialize_state(_decoded(planted))


def test_another_owners_manifest_entry_planted_is_invalid_state_naming_the_owner_and_the_entry():
    key, other = KEYS[0], KEYS[1]
    state = State("shared_root", 3, TIMES[0], TIMES[0], None, "0.1.0",
                  (Owner(key, "replace", _manifest(key, ("a.html",)), None),
                   Owner(other, "replace", _manifest(other, ("b/c.txt", "b/d.css", "z.txt")), None)), ())
    raw = serialize_state(state)
    for planted, words in ((raw.replace(b'"b/d.css"', b'"b/../d.css"'), "owners[1].source.manifest: files[1].path \"b/../d.css\""),
                           (raw.replace(b'"b/d.css"', b'"b/c.txt/d.css"'), "owners[1].source.manifest: files[1].path \"b/c.txt/d.css\" is inside"),
                           (raw.replace(b'"b/d.css", "sha256": "sha256:' + sha(b"b/d.css")[7:].encode(),
                                        b'"b/d.css", "sha256": "sha256:' + b"0" * 64), "owners[1].source.manifest: digest ")):
        with pytest.raises(DistributorError) as caught:
            parse_state(planted, WHERE)
        assert caught.value.reason == "invalid_state" and words in caught.value.message
        assert _verdict(parse_state, planted) == _verdict(_decoded, planted)


def test_another_owners_record_planted_with_a_foreign_url_is_invalid_state_naming_the_field():
    key, other = KEYS[0], KEYS[1]
    outputs = tuple(Output("p%d.html" % i, "source", "p%d.html" % i, None, "https://h.example/p%d.html" % i, sha(b"%d" % i), 1,
                           TIMES[0], TIMES[0], other if i % 2 else key, "s", sha(b"s"), TIMES[0], ()) for i in range(4))
    state = State("shared_root", 3, TIMES[0], TIMES[0], None, "0.1.0",
                  (Owner(key, "replace", _manifest(key, ()), None), Owner(other, "replace", _manifest(other, ()), None)), outputs)
    raw = serialize_state(state).replace(b"https://h.example/p3.html", b"https://h.example/admin.html")
    with pytest.raises(DistributorError) as caught:
        parse_state(raw, WHERE)
    assert caught.value.reason == "invalid_state"
    assert "outputs[3].url 'https://h.example/admin.html'" in caught.value.message


# ---------------------------------------------------------------------------------------------
# Every operation on a carried state answers as on the modelled one


OWNERS = {"reports": ("r/a.md", "r/b.txt", "common.md", "index.md"), "events": ("e/a.txt", "common.md", "e/b.md"),
          "docs": ("d/x.txt", "r/b.txt", "d/y.md")}
STEP = st.tuples(st.sampled_from(sorted(OWNERS)), st.integers(0, 3), st.sampled_from(("replace", "merge")), st.booleans(),
                 st.booleans())
_counter = itertools.count()


def _opener(store):
    return lambda cfg, base, token: MemoryStorage(store, base, token)


def _destination(reconciliation: str, takeover: bool, mode: str) -> dict:
    return {"id": "site", "storage": dict(MEMORY_STORAGE, file_mode=mode), "state": {"mode": "shared_root"},
            "reconciliation": {"mode": reconciliation}, "takeover": {"mode": "managed" if takeover else "none"},
            "links": {"base_url": "https://cdn.example/site/"}, "retention": {"max_outputs": 2}}


def _bundle(tmp_path_factory, owner: str, version: int) -> str:
    paths = [p for i, p in enumerate(OWNERS[owner]) if (version + i) % 3 != 0] or list(OWNERS[owner][:1])
    files = {p: b"# %s v%d %s\n" % (owner.encode(), version // 2, p.encode()) for p in paths}
    return write_bundle(tmp_path_factory.mktemp("b%d" % next(_counter)), files, id="%s.src" % owner,
                        created="2026-06-0%dT00:00:00Z" % (version + 1))


def _outcome(operation, args: tuple, kwargs: dict, modelled: bool):
    """The result of the operation, reading states the full way when `modelled`."""
    with mock.patch.object(state_module, "_carried", lambda raw, where: None) if modelled else contextlib.nullcontext():
        try:
            return operation(*args, **kwargs)
        except DistributorError as error:
            return {"failed": error.reason, "message": error.message}


def _both(stores: tuple, operation, *args, **kwargs) -> None:
    """`operation` on the carried root and on the modelled one: the same result, the same bytes."""
    carried, modelled = (_outcome(operation, args, dict(kwargs, opener=_opener(store)), store is stores[1]) for store in stores)
    assert carried == modelled
    assert stores[0] == stores[1]


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(STEP, min_size=2, max_size=6))
def test_every_operation_answers_on_carried_records_as_on_modelled_ones(tmp_path_factory, steps):
    """decide, plan, the plan digest, changes, invalidation, takeover, reconciliation, prune,
    reconcile-state and state_info, on the same roots read both ways, in check mode and for real:
    the same results and the same bytes written."""
    stores = ({}, {})
    for owner, version, reconciliation, takeover, check_mode in steps:
        source = _bundle(tmp_path_factory, owner, version)
        rules = {"id": owner, "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.txt"}]}
        dest = _destination(reconciliation, takeover, "0640" if version % 2 else "0644")
        for check in (True, False) if not check_mode else (True,):
            _both(stores, publish, source, rules, dest, check_mode=check, now=NOW, diff_contents=True)
    dest = _destination("replace", False, "0640")
    for owner in sorted(OWNERS):
        _both(stores, state_info, dest, pipeline_id=owner)
        for check in (True, False):
            _both(stores, prune, owner, dest, check_mode=check, now=LATER)
    for path in sorted(p for p in stores[0] if not p.endswith(".json"))[:2]:
        del stores[0][path], stores[1][path]
    _both(stores, reconcile_state, "reports", dest, all_owners=True, now=LATER)


def test_a_publish_models_only_its_own_records_and_writes_the_others_back_byte_for_byte(tmp_path_factory):
    store = {}
    for owner, version in (("events", 2), ("docs", 2), ("reports", 1)):
        rules = {"id": owner, "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.txt"}]}
        publish(_bundle(tmp_path_factory, owner, version), rules, _destination("replace", False, "0640"), now=NOW,
                opener=_opener(store))
    (name,) = [p for p in store if p.endswith(".distributor.json")]
    before = store[name]
    others = [line for line in _lines(before) if b'"pipeline_id": "reports"' not in line and line.startswith(b"    {")]
    modelled = []
    real = state_module._carried_output
    rules = {"id": "reports", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.txt"}]}
    with mock.patch.object(state_module, "_carried_output", lambda line: modelled.append(line) or real(line)):
        result = publish(_bundle(tmp_path_factory, "reports", 4), rules, _destination("replace", False, "0640"), now=LATER,
                         opener=_opener(store), full_result=False)
    assert result["action"] == "replace" and result["written"]
    assert modelled and [line for line in modelled if b"\"pipeline_id\": \"reports\"" not in line] == []
    after = store[name]
    assert after != before
    assert {line.rstrip(b",") for line in others} <= {line.rstrip(b",") for line in _lines(after)}
    _validates_against_shipped_schema(after)


def test_a_publish_models_no_other_owners_manifest_and_writes_their_entries_back_byte_for_byte(tmp_path_factory):
    store = {}
    rules = {owner: {"id": owner, "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.txt"}]}
             for owner in OWNERS}
    for owner, version in (("events", 2), ("docs", 2), ("reports", 1)):
        publish(_bundle(tmp_path_factory, owner, version), rules[owner], _destination("replace", False, "0640"), now=NOW,
                opener=_opener(store))
    (name,) = [p for p in store if p.endswith(".distributor.json")]
    before = store[name]
    entries = [line.rstrip(b",") for line in _lines(before) if line.startswith(b'            {"path": ')]
    modelled = []
    real = CarriedFiles._entries
    with mock.patch.object(CarriedFiles, "_entries", lambda self: modelled.append(self) or real(self)):
        result = publish(_bundle(tmp_path_factory, "reports", 4), rules["reports"], _destination("replace", False, "0640"),
                         now=LATER, opener=_opener(store), full_result=False)
    assert result["action"] == "replace"
    assert {f.path for files in list(modelled) for f in real(files)} <= set(OWNERS["reports"])
    after = store[name]
    others = [line for line in entries if not any(p.encode() in line for p in OWNERS["reports"])]
    assert others and set(others) <= {line.rstrip(b",") for line in _lines(after)}
    assert _verdict(parse_state, after) == _verdict(_decoded, after)


def _validates_against_shipped_schema(raw: bytes) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    with open(os.path.join(ROOT, "schemas", "state-v3.schema.json"), encoding="utf-8") as handle:
        jsonschema.validate(json.loads(raw), json.load(handle))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(shared_states(), st.sampled_from(KEYS), st.sets(st.sampled_from(PATHS)), st.data())
def test_what_a_publish_carries_over_is_the_modelled_records_less_its_own_and_its_planned_paths(state, key, planned, data):
    carried = parse_state(serialize_state(state), WHERE)
    if not isinstance(carried.outputs, Carried):
        return
    mine = tuple(Output(path, "source", path, None, None, sha(b"new"), 1, TIMES[0], TIMES[0], key, "s", sha(b"s"), TIMES[0])
                 for path in sorted(planned))
    kept = carried.outputs.without(key, frozenset(planned)).with_records(mine)
    expected = tuple(o for o in state.outputs if o.owner != key and o.path not in planned) + mine
    assert kept == expected and tuple(kept) == expected
    assert kept.owners_by_path() == {o.path: o.owner for o in expected}
    assert dict(kept.by_path()) == {o.path: o for o in expected}
    other = data.draw(st.sampled_from(KEYS))
    assert kept.owned(other) == tuple(o for o in expected if o.owner == other)


def test_a_manifests_file_lines_moved_out_of_it_get_the_full_paths_verdict():
    """Another owner's file lines planted in a member beside its manifest, laid out as distributor
    lays out a manifest's, and the manifest's own files a number: the full path refuses the
    manifest, and so must the carried one (the lines are read only where a manifest holds them)."""
    key, other = KEYS[0], KEYS[1]
    outputs = tuple(Output(path, "source", path, None, None, sha(path.encode()), len(path), TIMES[0], TIMES[0], owner, "s", sha(b"s"),
                           TIMES[0], ()) for path, owner in (("a.html", key), ("b/c.txt", other)))
    state = State("shared_root", 3, TIMES[0], TIMES[0], None, "0.1.0",
                  (Owner(key, "replace", _manifest(key, ("a.html",)), None),
                   Owner(other, "replace", _manifest(other, ("b/c.txt", "b/d.css", "z.txt")), None)), outputs)
    raw = serialize_state(state)
    opening, closing = b'\n          "files": [\n', b"\n          ]\n        }"
    start = raw.index(opening, raw.index(opening) + 1)
    end = raw.index(closing, start) + len(closing)
    for number in (b"0", b"1"):
        planted = (raw[:start] + b'\n          "files": ' + number + b'\n        },\n        "extra": {' + opening
                   + raw[start + len(opening):])
        assert json.loads(planted)["owners"][1]["source"]["extra"]["files"]
        assert _verdict(parse_state, planted) == _verdict(_decoded, planted)
        assert _verdict(parse_state, planted)[0] == "invalid_state"
