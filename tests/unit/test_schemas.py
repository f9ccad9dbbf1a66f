# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shipped schemas/*.schema.json are the schemas distributor validates with, and what is read
is bounded in nesting before any schema sees it."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.schema_documents import SCHEMAS
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.schemas import MAX_NESTING, check_nesting, show, validate
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import state_to_dict

from builders import manifest, shared_state, single_state

SCHEMA_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "schemas")


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_exported_schema_file_matches_the_schema_in_use(name):
    with open(os.path.join(SCHEMA_DIR, "%s.schema.json" % name)) as handle:
        assert json.load(handle) == SCHEMAS[name], "run `make schemas` after changing schemas.py"


def test_written_state_validates_against_the_shipped_schemas():
    jsonschema = pytest.importorskip("jsonschema")
    m = manifest()
    jsonschema.validate(state_to_dict(single_state(m)), SCHEMAS["state-v2"])
    jsonschema.validate(state_to_dict(shared_state(("reports", "archive", m, ["a.md"]))), SCHEMAS["state-v3"])
    jsonschema.validate(m.to_dict(), SCHEMAS["manifest"])


def _nested(depth: int, leaf_siblings: bool):
    """`depth` levels of containers, alternating objects and arrays, each beside scalars when
    `leaf_siblings` (so no level is an object or array of scalars only)."""
    value: object = "leaf"
    for level in range(depth):
        if leaf_siblings:
            value = {"a": 1, "b": "x", "c": None, "deeper": value} if level % 2 else [1, "x", value, True]
        else:
            value = {"deeper": value} if level % 2 else [value]
    return value


@pytest.mark.parametrize("leaf_siblings", [False, True])
def test_nesting_is_bounded_at_32_levels_whatever_sits_beside_it(leaf_siblings):
    check_nesting(_nested(MAX_NESTING, leaf_siblings), "here", "invalid_state")
    with pytest.raises(DistributorError) as caught:
        check_nesting([{"path": "a", "size": 1}, _nested(MAX_NESTING, leaf_siblings)], "here", "invalid_state")
    assert caught.value.reason == "invalid_state"
    assert "deeper than 32 levels" in caught.value.message


def _refusal(name, data) -> str:
    with pytest.raises(DistributorError) as caught:
        validate(name, data, "here", "invalid_state")
    return caught.value.message


def test_the_first_of_equally_broken_items_is_named():
    """jsonschema's best_match names the last of equals: files[2]. A reader fixing the file reads
    it top down, and a planted array of millions names its first without a look at the rest."""
    data = manifest().to_dict()
    data["files"] = [0, 0, 0]
    assert _refusal("manifest", data) == "here: files[0] must be an object, not an integer"


def test_an_error_higher_up_is_named_before_a_deeper_one_found_first():
    """Of the errors of the first broken item and of the rest of the record, the one highest up
    says most: jsonschema finds the unknown key after the broken entry."""
    data = dict(manifest().to_dict(), extra=1)
    data["files"] = [{"path": "a", "sha256": "x", "size": 1}, 0]
    assert _refusal("manifest", data).startswith('here: the manifest has unknown key "extra"')
    del data["extra"]
    assert _refusal("manifest", data) == 'here: files[0].sha256 "x" is not sha256: followed by 64 lowercase hex digits'


def test_unknown_keys_are_named_five_and_counted():
    data = dict(manifest().to_dict(), **{"k%07d" % i: 0 for i in range(100_000)})
    assert _refusal("manifest", data) == (
        'here: the manifest has unknown key "k0000000", "k0000001", "k0000002", "k0000003", "k0000004" and 99995 more '
        "(allowed: schema_version, id, digest, created, files)")


class Counted(list):
    """A list that counts the items an encoder takes from it."""

    taken = 0

    def __iter__(self):
        for item in super().__iter__():
            self.taken += 1
            yield item


def test_a_long_value_is_shown_cut_after_encoding_only_what_is_shown():
    value = Counted(range(1_000_000))
    assert show(value) == json.dumps(value[:100])[:79] + "…"
    assert value.taken < 100, "%d items encoded to show 80 characters" % value.taken
    assert show("x" * 10_000_000) == '"' + "x" * 78 + "…"
    assert show({"a": [1, "é\n"]}) == json.dumps({"a": [1, "é\n"]})


def test_a_message_of_jsonschema_quoting_a_long_value_is_cut():
    data = state_to_dict(single_state(manifest()))
    data["outputs"][0]["url"] = "ftp://" + "x" * 100_000
    message = _refusal("state-v2", data)
    assert message.startswith("here: outputs[0].url: 'ftp://xxx") and message.endswith("…")
    assert len(message) < 300
