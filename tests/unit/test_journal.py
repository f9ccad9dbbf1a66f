# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The journal as written and read back: each write with the digest and size of what it puts in
place, the first format (paths only) still read, every fault named by its field, and the hand
parser giving the JSON Schema's verdict on journals of clean paths."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.journal import (
    Entry, Journal, parse_journal, serialize_journal)
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.schema_documents import SCHEMAS

from builders import sha

WHERE = "memory:/site/.distributor.journal.json"


def test_a_written_journal_reads_back_as_written_and_validates_against_its_schema():
    journal = Journal("3f9c0a1b2c4d", (Entry("chart.png", sha(b"png"), 3), Entry("docs/report.html", sha(b""), 0)))
    raw = serialize_journal(journal)
    assert parse_journal(raw, WHERE) == journal
    jsonschema.validate(json.loads(raw), SCHEMAS["journal"])


def test_a_journal_of_the_first_format_is_read_without_digests():
    journal = parse_journal(b'{"token": "old", "writes": ["a.html", "b/c.png"]}', WHERE)
    assert journal.writes == (Entry("a.html"), Entry("b/c.png")) and journal.paths == ("a.html", "b/c.png")


@pytest.mark.parametrize("write,field", [
    ({"path": "a.html", "sha256": "sha256:" + "A" * 64, "size": 1}, "writes[0].sha256"),
    ({"path": "a.html", "sha256": "md5:00", "size": 1}, "writes[0].sha256"),
    ({"path": "a.html", "size": 1}, "writes[0].sha256"),
    ({"path": "a.html", "sha256": sha(b"x"), "size": -1}, "writes[0].size"),
    ({"path": "a.html", "sha256": sha(b"x"), "size": True}, "writes[0].size"),
    ({"path": "a.html", "sha256": sha(b"x"), "size": 1.0}, "writes[0].size"),
    ({"path": "a.html", "sha256": sha(b"x")}, "writes[0].size"),
    ({"path": "../a.html", "sha256": sha(b"x"), "size": 1}, "writes[0].path"),
    ({"sha256": sha(b"x"), "size": 1}, "writes[0].path"),
    (7, "writes[0] 7 is not a string"),
])
def test_a_faulty_write_is_invalid_state_naming_its_field(write, field):
    with pytest.raises(DistributorError) as caught:
        parse_journal(json.dumps({"token": "t", "writes": [write]}).encode(), WHERE)
    assert caught.value.reason == "invalid_state"
    assert caught.value.message.startswith(WHERE + ": " + field), caught.value.message
    assert "nothing was deleted" in caught.value.message


CLEAN_PATHS = st.sampled_from(["a.html", "docs/b.png", "c"])
DIGESTS = st.sampled_from([sha(b"x"), "sha256:" + "0" * 64, "sha256:" + "0" * 63, "sha256:" + "0" * 64 + "\n", "x", 5])
SIZES = st.sampled_from([0, 7, -1, True, 1.5, "7", None])
WRITES = st.one_of(
    CLEAN_PATHS,
    st.fixed_dictionaries({"path": CLEAN_PATHS, "sha256": DIGESTS, "size": SIZES}),
    st.fixed_dictionaries({"path": CLEAN_PATHS}, optional={"sha256": DIGESTS, "size": SIZES, "extra": st.integers()}),
    st.integers(),
)
TOKENS = st.sampled_from(["3f9c0a1b2c4d", "a-b_C", "", "x" * 64, "x" * 65, "ab\n", "a b", 7])


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.fixed_dictionaries({"token": TOKENS, "writes": st.lists(WRITES, max_size=3)}))
def test_the_parser_and_the_schema_agree_on_journals_of_clean_paths(journal):
    raw = json.dumps(journal).encode()
    try:
        parse_journal(raw, WHERE)
        parsed = True
    except DistributorError:
        parsed = False
    assert parsed == jsonschema.Draft202012Validator(SCHEMAS["journal"]).is_valid(journal), journal
