# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fast item checks change nothing but speed: schemas.validate (fast path) and jsonschema over
the whole document, up to its first broken item, accept the same documents and word the same
error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor.records import schemas
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.fastcheck import ITEM_CHECKS, split_items, sure
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.schema_documents import SCHEMAS
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import state_to_dict

from builders import manifest, shared_state, single_state

SHA = "sha256:" + "a" * 64
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=16),
                         st.sampled_from(["", "x", "a.md", SHA, SHA + "\n", "SHA256:" + "A" * 64, "sha256:" + "a" * 63,
                                          "source", "generated", "markdown_to_html", "https://e.org/a", "http://x\n",
                                          "ftp://e.org", "2026-06-04T12:00:00Z"]))
MODES = st.sampled_from(["replace", "merge", "Replace"])
# Objects like an owner's members (reconciliation, source, links) as well as odd ones.
MEMBERS = st.dictionaries(st.sampled_from(["a", "path", "mode", "primary_url"]), st.one_of(JSON_SCALARS, MODES), max_size=2)
JSON_VALUES = st.one_of(JSON_SCALARS, st.lists(JSON_SCALARS, max_size=2), MEMBERS,
                        st.dictionaries(st.just("manifest"), st.one_of(JSON_SCALARS, st.just({})), max_size=1))
FIELDS = ["path", "sha256", "size", "kind", "source_path", "transform", "url", "created_at", "updated_at",
          "pipeline_id", "destination_id", "source_id", "source_digest", "source_created", "attributes", "render_key",
          "reconciliation", "source", "links", "extra"]
TOP_FIELDS = st.sampled_from(["id", "created", "pipeline_id", "updated_at", "state", "owners", "extra"])
# Every large array of every schema with fast checks: (schema, key).
ARRAYS = [(name, key) for name in sorted(ITEM_CHECKS) for key, _check in ITEM_CHECKS[name]]


def _documents():
    m = manifest(files={"a.md": b"a", "b/c.png": b"c"})
    single = state_to_dict(single_state(m, paths=("a.md", "b/c.png")))
    single["outputs"][0].update(kind="generated", transform="markdown_to_html", url="https://e.org/a.html", render_key=SHA,
                                attributes={"file_mode": "0640"})
    v1 = {k: v for k, v in single.items() if k in ("pipeline_id", "destination_id", "published_at", "source", "links")}
    v1.update(schema_version=1, outputs=[{k: v for k, v in o.items() if k not in ("created_at", "updated_at", "render_key")}
                                         for o in single["outputs"]])
    shared = state_to_dict(shared_state(("reports", "archive", m, ["a.md"]), ("events", "archive", m, ["e.md"])))
    shared["outputs"][0].update(kind="generated", transform="markdown_to_html", render_key=SHA)
    return {"manifest": m.to_dict(), "state-v1": v1, "state-v2": single, "state-v3": shared}


DOCUMENTS = _documents()


def _outcome(validate, name, data):
    try:
        validate(name, data, "here", "invalid_state")
    except DistributorError as error:
        return error.message
    return None


def _up_to_first_broken_item(name, data):
    """`data` with each large array cut after the first item jsonschema refuses: what a reader
    who stops at the first broken item has read."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for key, _check in ITEM_CHECKS[name]:
        if isinstance(data.get(key), list):
            item = schemas._validator(name).evolve(schema=SCHEMAS[name]["properties"][key]["items"])
            broken = [index for index, value in enumerate(data[key]) if not item.is_valid(value)]
            data[key] = data[key][: broken[0] + 1] if broken else data[key]
    return data


def _full(name, data, where, reason):
    """jsonschema itself, every item looked at, no fast check."""
    errors = schemas._validator(name).iter_errors(_up_to_first_broken_item(name, data))
    error = schemas.first_error(errors)
    if error is not None:
        raise DistributorError(reason, "%s: %s" % (where, schemas._describe(error, name)))


# One mutation of one item: a field set to any JSON value, a field removed, or the item replaced.
MUTATIONS = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(FIELDS), JSON_VALUES),
    st.tuples(st.just("drop"), st.sampled_from(FIELDS), st.none()),
    st.tuples(st.just("replace"), st.none(), JSON_VALUES),
)


def _mutated(name, key, mutations, top):
    data = dict(DOCUMENTS[name])
    items = [dict(item) for item in data[key]]
    for index, (how, field, value) in mutations:
        index %= len(items)
        if how != "replace" and not isinstance(items[index], dict):
            continue
        if how == "set":
            items[index][field] = value
        elif how == "drop":
            items[index].pop(field, None)
        else:
            items[index] = value
    data[key] = items
    if top is not None:
        data[top[0]] = top[1]
    return data


@pytest.mark.parametrize("name", sorted(ITEM_CHECKS))
def test_valid_documents_pass_the_fast_checks(name):
    for key, check in ITEM_CHECKS[name]:
        assert all(check(item) for item in DOCUMENTS[name][key]), "the fast path would never be taken"
    assert _outcome(schemas.validate, name, DOCUMENTS[name]) is None


@pytest.mark.parametrize("name, key", ARRAYS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(st.tuples(st.integers(0, 3), MUTATIONS), max_size=3),
       top=st.one_of(st.none(), st.tuples(TOP_FIELDS, JSON_VALUES)))
def test_fast_path_and_full_jsonschema_agree(name, key, mutations, top):
    data = _mutated(name, key, mutations, top)
    assert _outcome(schemas.validate, name, data) == _outcome(_full, name, data)


@settings(max_examples=300, deadline=None)
@given(owners=st.lists(st.tuples(st.integers(0, 3), MUTATIONS), max_size=2),
       outputs=st.lists(st.tuples(st.integers(0, 3), MUTATIONS), max_size=2))
def test_a_broken_owner_and_a_broken_output_are_weighed_as_jsonschema_weighs_them(owners, outputs):
    data = _mutated("state-v3", "owners", owners, None)
    data = dict(data, outputs=_mutated("state-v3", "outputs", outputs, None)["outputs"])
    assert _outcome(schemas.validate, "state-v3", data) == _outcome(_full, "state-v3", data)


def test_a_broken_entry_among_many_is_named_as_jsonschema_names_it():
    data = dict(DOCUMENTS["manifest"])
    data["files"] = [dict(path="f%d" % i, sha256=SHA, size=1) for i in range(1000)]
    data["files"][617]["size"] = True
    assert _outcome(schemas.validate, "manifest", data) == "here: files[617].size must be an integer, not a boolean"


TRICKY = [None, True, 0, 1.0, -1, "", "x", SHA, SHA + "\n", "sha256:" + "a" * 63, "SHA256:" + "A" * 64, "source",
          "generated", "https://e.org/a", "http://x\n", "http:// x", "ftp://e.org", [], {}, {"mode": "0640"}, {"mode": 416},
          {"mode": None}, {"mode": "replace"}, {"mode": "merge", "x": 1}, {"manifest": {}}, {"manifest": []},
          {"primary_url": "https://e.org/"}, {"primary_url": "ftp://e.org"}, {"a": "x", "b": ["x"]}]


@pytest.mark.parametrize("name, key", ARRAYS)
def test_every_field_set_to_every_tricky_value_gets_the_same_verdict(name, key):
    for field in FIELDS:
        for value in TRICKY:
            data = _mutated(name, key, [(0, ("set", field, value))], None)
            assert _outcome(schemas.validate, name, data) == _outcome(_full, name, data), (field, value)


@pytest.mark.parametrize("name", ["state-v1", "state-v2", "state-v3"])
def test_every_property_of_an_output_record_has_a_fast_check(name):
    """A property the schema constrains but the fast check does not look at would be accepted
    unchecked (jsonschema never sees the items that pass): each one, set to a value no JSON
    Schema type matches, must send the document to jsonschema."""
    check = dict(ITEM_CHECKS[name])["outputs"]
    valid = DOCUMENTS[name]["outputs"][0]
    assert check(valid)
    for key in SCHEMAS[name]["properties"]["outputs"]["items"]["properties"]:
        assert not check(dict(valid, **{key: object()})), "%s: outputs[].%s is not checked" % (name, key)


def test_every_property_of_an_owner_record_has_a_fast_check():
    """The same for owners[], and the properties of the objects an owner holds."""
    check = dict(ITEM_CHECKS["state-v3"])["owners"]
    valid = dict(DOCUMENTS["state-v3"]["owners"][0], links={"primary_url": "https://e.org/a.html"})
    assert check(valid)
    schema = SCHEMAS["state-v3"]["properties"]["owners"]["items"]
    for key, inner in schema["properties"].items():
        assert not check(dict(valid, **{key: object()})), "owners[].%s is not checked" % key
        for member in inner.get("properties", {}):
            changed = dict(valid, **{key: dict(valid[key], **{member: object()})})
            assert not check(changed), "owners[].%s.%s is not checked" % (key, member)


# Settings of every kind, valid, for fastcheck.sure: each backend, each object of a destination.
SETTINGS_DOCUMENTS = {
    "pipeline": [
        {"id": "reports"},
        {"id": "reports", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**"}],
         "exclude": ["drafts/**"], "markdown": {"allow_raw_html": False, "stylesheet": "/s.css", "template": "/t.html"},
         "destinations": ["archive"]},
    ],
    "destination": [
        {"id": "archive", "storage": {"type": "local", "root": "/srv"}},
        {"id": "archive", "path": "site/{pipeline_id}", "storage": {
            "type": "local", "root": "/srv", "file_mode": "0640", "directory_mode": "755", "owner": "www", "group": 33,
            "require_private_directories": True},
         "state": {"mode": "shared_root"}, "reconciliation": {"mode": "merge"},
         "transfer": {"on_destination_newer": "replace", "on_conflict": "fail", "max_deletes": -1, "allow_empty": False},
         "takeover": {"mode": "managed"}, "links": {"base_url": "https://e.org/x", "primary": ["index.html"], "invalidation_limit": 5},
         "retention": {"max_age": "3d", "max_outputs": None}, "lock": {"expiry": 60}},
        {"id": "archive", "storage": {"type": "sftp", "host": "h", "port": 22, "root": "/srv", "username": "u", "password": None,
                                      "known_hosts": "h ssh-ed25519 AAAA", "host_key_policy": "accept_new", "connect_timeout": 2.5,
                                      "jump_hosts": [{"host": "j", "port": 2222, "connect_timeout": 5}]}},
        {"id": "archive", "storage": {"type": "s3", "bucket": "b", "prefix": None, "region": "eu-west-1", "acl": "private",
                                      "cache_control": "max-age=60", "storage_class": "STANDARD_IA", "metadata": {"a": 1, "b": True},
                                      "server_side_encryption": "aws:kms", "sse_kms_key_id": "k",
                                      "content_types": {".x": "text/plain"}, "validate_certs": False}},
        {"id": "archive", "storage": {"type": "s3", "bucket": "b", "cache_control": [{"match": "**/*.html", "value": "no-cache"}]}},
    ],
}
SETTING_KEYS = ["id", "storage", "type", "root", "host", "port", "bucket", "path", "mode", "file_mode", "owner", "jump_hosts",
                "connect_timeout", "cache_control", "match", "value", "metadata", "content_types", "base_url", "primary",
                "max_deletes", "max_age", "max_outputs", "expiry", "outputs", "transform", "exclude", "markdown", "allow_raw_html",
                "template", "password", "links", "transfer", "retention", "lock", "extra"]
SETTING_VALUES = st.one_of(JSON_SCALARS, st.sampled_from(["local", "sftp", "s3", "0640", "999", "/srv", "h", "**", "3d", "3x",
                                                          "https://e.org/", "https://e.org/?q", -1, 0, 22, 70000, 3600.5]),
                           st.lists(st.one_of(JSON_SCALARS, MEMBERS), max_size=2), MEMBERS)


def _objects(value):
    """Every object in `value`, itself first."""
    if isinstance(value, dict):
        yield value
        for member in value.values():
            yield from _objects(member)
    elif isinstance(value, list):
        for item in value:
            yield from _objects(item)


def _set_somewhere(document, choices):
    """`document` with one member of one of its objects set or dropped, as `choices` draws."""
    document = json.loads(json.dumps(document))
    objects = list(_objects(document))
    target = objects[choices.draw(st.integers(0, len(objects) - 1))]
    key = choices.draw(st.sampled_from(SETTING_KEYS + list(target)))
    if choices.draw(st.booleans()):
        target.pop(key, None)
    else:
        target[key] = choices.draw(SETTING_VALUES)
    return document


@pytest.mark.parametrize("name", sorted(SETTINGS_DOCUMENTS))
def test_valid_settings_are_vouched_for_without_jsonschema(name):
    for document in SETTINGS_DOCUMENTS[name]:
        assert sure(SCHEMAS[name], document), document


@pytest.mark.parametrize("name", sorted(SETTINGS_DOCUMENTS))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_settings_vouched_for_are_settings_jsonschema_accepts(name, data):
    document = data.draw(st.sampled_from(SETTINGS_DOCUMENTS[name]))
    for _round in range(data.draw(st.integers(1, 3))):
        document = _set_somewhere(document, data)
    if sure(SCHEMAS[name], document):
        assert schemas._validator(name).is_valid(document), document


@pytest.mark.parametrize("name, key", ARRAYS)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(top=st.lists(st.tuples(TOP_FIELDS, JSON_VALUES), max_size=3))
def test_a_record_less_its_large_arrays_is_vouched_for_only_when_jsonschema_accepts_it(name, key, top):
    rest, _arrays = split_items(name, dict(DOCUMENTS[name], **dict(top)))
    if sure(SCHEMAS[name], rest):
        assert schemas._validator(name).is_valid(rest)


def test_a_publish_of_valid_settings_bundle_and_record_never_imports_jsonschema(tmp_path):
    """jsonschema is imported only to judge and word what the plain checks cannot vouch for."""
    script = textwrap.dedent("""
        import sys
        from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import create_manifest
        from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
        open(sys.argv[1] + "/index.md", "w").write("# Hello")
        create_manifest(sys.argv[1], "site", "2026-06-04T12:00:00Z")
        destination = {"id": "archive", "storage": {"type": "local", "root": sys.argv[2]}, "links": {"base_url": "https://e.org/"}}
        pipeline = {"id": "docs", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**"}]}
        actions = [publish(sys.argv[1], pipeline, destination)["action"] for _run in range(2)]
        print(actions, "jsonschema" in sys.modules)
    """)
    (tmp_path / "bundle").mkdir()
    found = subprocess.run([sys.executable, "-c", script, str(tmp_path / "bundle"), str(tmp_path / "root")], capture_output=True,
                           text=True, check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert found.stdout.split() == ["['publish',", "'skip']", "False"]
