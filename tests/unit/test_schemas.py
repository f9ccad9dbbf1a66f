# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shipped schemas/*.schema.json are the schemas distributor validates with, and what is read
is bounded in nesting before any schema sees it."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.schema_documents import SCHEMAS
from ansible_collections.distributor.core.plugins.module_utils._distributor.schemas import MAX_NESTING, check_nesting
from ansible_collections.distributor.core.plugins.module_utils._distributor.state import state_to_dict

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
