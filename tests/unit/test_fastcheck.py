# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fast item checks change nothing but speed: schemas.validate (fast path) and jsonschema over
the whole document accept the same documents and word the same first error."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor import schemas
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.fastcheck import ITEM_CHECKS
from ansible_collections.distributor.core.plugins.module_utils._distributor.schema_documents import SCHEMAS
from ansible_collections.distributor.core.plugins.module_utils._distributor.state import state_to_dict

from builders import manifest, shared_state, single_state

SHA = "sha256:" + "a" * 64
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=16),
                         st.sampled_from(["", "x", "a.md", SHA, SHA + "\n", "SHA256:" + "A" * 64, "sha256:" + "a" * 63,
                                          "source", "generated", "markdown_to_html", "https://e.org/a", "http://x\n",
                                          "ftp://e.org", "2026-06-04T12:00:00Z"]))
JSON_VALUES = st.one_of(JSON_SCALARS, st.lists(JSON_SCALARS, max_size=2), st.dictionaries(st.sampled_from(["a", "path", "mode"]), JSON_SCALARS, max_size=2))
FIELDS = ["path", "sha256", "size", "kind", "source_path", "transform", "url", "created_at", "updated_at",
          "pipeline_id", "destination_id", "source_id", "source_digest", "source_created", "attributes", "render_key", "extra"]


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


def _full(name, data, where, reason):
    error = schemas.jsonschema.exceptions.best_match(schemas._validator(name).iter_errors(data))
    if error is not None:
        raise DistributorError(reason, "%s: %s" % (where, schemas._describe(error, name)))


# One mutation of one item: a field set to any JSON value, a field removed, or the item replaced.
MUTATIONS = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(FIELDS), JSON_VALUES),
    st.tuples(st.just("drop"), st.sampled_from(FIELDS), st.none()),
    st.tuples(st.just("replace"), st.none(), JSON_VALUES),
)


def _mutated(name, mutations, top):
    data = dict(DOCUMENTS[name])
    key = ITEM_CHECKS[name][0]
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
    key, check = ITEM_CHECKS[name]
    assert all(check(item) for item in DOCUMENTS[name][key]), "the fast path would never be taken"
    assert _outcome(schemas.validate, name, DOCUMENTS[name]) is None


@pytest.mark.parametrize("name", sorted(ITEM_CHECKS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(st.tuples(st.integers(0, 3), MUTATIONS), max_size=3),
       top=st.one_of(st.none(), st.tuples(st.sampled_from(["id", "created", "pipeline_id", "updated_at", "extra"]), JSON_VALUES)))
def test_fast_path_and_full_jsonschema_agree(name, mutations, top):
    data = _mutated(name, mutations, top)
    assert _outcome(schemas.validate, name, data) == _outcome(_full, name, data)


def test_a_broken_entry_among_many_is_named_as_jsonschema_names_it():
    data = dict(DOCUMENTS["manifest"])
    data["files"] = [dict(path="f%d" % i, sha256=SHA, size=1) for i in range(1000)]
    data["files"][617]["size"] = True
    assert _outcome(schemas.validate, "manifest", data) == "here: files[617].size must be an integer, not a boolean"


TRICKY = [None, True, 0, 1.0, -1, "", "x", SHA, SHA + "\n", "sha256:" + "a" * 63, "SHA256:" + "A" * 64, "source",
          "generated", "https://e.org/a", "http://x\n", "http:// x", "ftp://e.org", [], {}, {"mode": "0640"}, {"mode": 416},
          {"mode": None}, {"a": "x", "b": ["x"]}]


@pytest.mark.parametrize("name", sorted(ITEM_CHECKS))
def test_every_field_set_to_every_tricky_value_gets_the_same_verdict(name):
    for field in FIELDS:
        for value in TRICKY:
            data = _mutated(name, [(0, ("set", field, value))], None)
            assert _outcome(schemas.validate, name, data) == _outcome(_full, name, data), (field, value)


@pytest.mark.parametrize("name", ["state-v1", "state-v2", "state-v3"])
def test_every_property_of_an_output_record_has_a_fast_check(name):
    """A property the schema constrains but the fast check does not look at would be accepted
    unchecked (jsonschema never sees the items that pass): each one, set to a value no JSON
    Schema type matches, must send the document to jsonschema."""
    check = ITEM_CHECKS[name][1]
    valid = DOCUMENTS[name]["outputs"][0]
    assert check(valid)
    for key in SCHEMAS[name]["properties"]["outputs"]["items"]["properties"]:
        assert not check(dict(valid, **{key: object()})), "%s: outputs[].%s is not checked" % (name, key)
