# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shipped schemas/*.schema.json are the schemas distributor validates with."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.schema_documents import SCHEMAS
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
