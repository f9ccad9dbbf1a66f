# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The release index as written and read back, and every index or link target that is not what
distributor writes refused as invalid_state naming the file and the field: what is read at a
destination is evidence, never a directory to read or delete."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import INDEX_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.formats import RELEASE_ID_PATTERN
from ansible_collections.distributor.core.plugins.module_utils._distributor.releases.index import (
    Release, ReleaseIndex, parse_index, serialize_index)
from ansible_collections.distributor.core.plugins.module_utils._distributor.releases.rules import (
    home_of, link_target, live_id, split_bundle_path)
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.schema_documents import SCHEMAS
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import OwnerKey

from builders import sha

WHERE = "local:/srv/www/.distributor-releases/site/.distributor-releases.json"
OLD, NEW = "20261205T053000Z-0123456789ab", "20261206T053000Z-ba9876543210"
OWNERS = (OwnerKey("docs", "web"), OwnerKey("blog", "web"))


def release(rid=NEW, status="active", built="2026-12-06T05:30:02Z", activated="2026-12-06T05:30:02Z", from_id=OLD):
    return Release(rid, status, "docs.2026-12-06", sha(rid.encode()), OWNERS, "2026-12-06T05:30:00Z", built, activated,
                   from_id)


INDEX = ReleaseIndex("sites/site", (
    release(),
    release(OLD, "superseded", from_id=None),
    release("20261207T000000Z-00000000000a", "staged", built=None, activated=None, from_id=NEW),
))


def planted(**changes) -> bytes:
    """The index as written, with the first release's fields changed as anyone who can write the
    release home could."""
    data = json.loads(serialize_index(INDEX))
    data["releases"][0].update(changes)
    return json.dumps(data).encode()


def refused(raw: bytes, *words: str) -> str:
    with pytest.raises(DistributorError) as caught:
        parse_index(raw, WHERE)
    assert caught.value.reason == "invalid_state"
    message = caught.value.message
    assert WHERE in message and "switched and removed nothing" in message
    for word in words:
        assert word in message
    return message


def test_a_written_index_reads_back_as_written_and_validates_against_its_schema():
    raw = serialize_index(INDEX)
    assert parse_index(raw, WHERE) == INDEX
    jsonschema.validate(json.loads(raw), SCHEMAS["release-index"])


def test_releases_are_held_by_id_oldest_first_and_written_in_one_form():
    shuffled = ReleaseIndex(INDEX.bundle_path, tuple(reversed(INDEX.releases)))
    assert [r.id for r in shuffled.releases] == sorted(r.id for r in INDEX.releases)
    assert serialize_index(shuffled) == serialize_index(INDEX)
    assert json.loads(serialize_index(INDEX))["releases"][1]["owners"] == [
        {"pipeline": "docs", "destination": "web"}, {"pipeline": "blog", "destination": "web"}]


def test_the_index_finds_a_release_by_id_and_the_active_one():
    assert INDEX.by_id(OLD).status == "superseded" and INDEX.by_id("nope") is None
    assert INDEX.active.id == NEW
    assert ReleaseIndex("site").active is None


@pytest.mark.parametrize("rid", ["../../etc", "20261206T053000Z-0123456789ab/..", "/etc",
                                 "20261206T053000Z-0123456789AB", "20261206T053000Z-0123456789ab\n", ""])
def test_an_id_that_is_not_a_release_id_is_refused(rid):
    refused(planted(id=rid), "releases[0].id")


def test_a_from_that_is_not_a_release_id_is_refused():
    refused(planted(**{"from": "../../etc"}), "releases[0].from")


def test_a_second_active_release_is_refused():
    data = json.loads(serialize_index(INDEX))
    data["releases"][2].update(status="active", built="2026-12-07T00:00:01Z")
    refused(json.dumps(data).encode(), "releases[2].status", "second active release")


def test_an_id_listed_twice_is_refused():
    data = json.loads(serialize_index(INDEX))
    data["releases"][2]["id"] = data["releases"][0]["id"]
    refused(json.dumps(data).encode(), "releases[2].id", "listed more than once")


@pytest.mark.parametrize("changes, field", [
    ({"status": "live"}, "releases[0].status"),
    ({"manifest_digest": "md5:00"}, "releases[0].manifest_digest"),
    ({"owners": []}, "releases[0].owners"),
    ({"owners": [{"pipeline": "docs"}]}, "releases[0].owners[0]"),
    ({"created": "yesterday"}, "releases[0].created"),
    ({"built": "2026-12-06 05:30"}, "releases[0].built"),
    ({"activated": 5}, "releases[0].activated"),
])
def test_every_field_is_checked_and_named(changes, field):
    refused(planted(**changes), field)


def test_the_first_fault_is_named_among_many():
    data = json.loads(serialize_index(INDEX))
    for entry in data["releases"]:
        entry["id"] = "../x"
    refused(json.dumps(data).encode(), "releases[0].id")


@pytest.mark.parametrize("raw", [b"[]", b"{}", b'{"schema": 2, "bundle_path": "site", "releases": []}', b"{", b"\xff"])
def test_an_index_that_is_no_index_is_refused(raw):
    refused(raw)


def test_an_index_over_its_bound_is_refused_unparsed():
    raw = serialize_index(INDEX)
    refused(raw + b" " * (INDEX_LIMIT + 1 - len(raw)), "larger than %d bytes" % INDEX_LIMIT)


def test_a_dense_index_is_refused_before_it_is_decoded():
    refused(b'{"schema": 1, "bundle_path": "site", "releases": [' + b"[]," * 100000 + b"[]]}", "arrays and objects")


def test_a_link_holds_its_release_by_a_relative_target_in_the_release_home():
    assert split_bundle_path("sites/site") == ("sites", "site") and split_bundle_path("site") == ("", "site")
    assert home_of("sites/site") == "sites/.distributor-releases/site" and home_of("site") == ".distributor-releases/site"
    assert link_target("site", NEW) == ".distributor-releases/site/" + NEW
    assert live_id(link_target("site", NEW), "site", "local:/srv/www/site") == NEW


def test_an_empty_bundle_path_has_no_directory_for_its_link():
    with pytest.raises(DistributorError) as caught:
        split_bundle_path("")
    assert caught.value.reason == "invalid_config" and "bundle path" in caught.value.message


@pytest.mark.parametrize("target", [
    ".distributor-releases/site/../../etc",
    ".distributor-releases/site/%s/.." % NEW,
    "../../etc",
    "/srv/www/.distributor-releases/site/" + NEW,
    ".distributor-releases/other/" + NEW,
    ".distributor-releases/site/" + NEW + "/",
    ".distributor-releases/site/" + NEW + "\n",
    "./.distributor-releases/site/" + NEW,
    ".distributor-releases/site/not-an-id",
    "",
])
def test_a_link_target_that_is_not_exactly_a_release_is_refused(target):
    with pytest.raises(DistributorError) as caught:
        live_id(target, "site", "local:/srv/www/site")
    assert caught.value.reason == "invalid_state"
    assert caught.value.message.startswith("local:/srv/www/site is a symbolic link to '")


def test_a_refused_link_target_is_shown_escaped_and_bounded():
    with pytest.raises(DistributorError) as caught:
        live_id("\x1b[2K\udcff" + "a" * 5000, "site", "local:/srv/www/site")
    message = caught.value.message
    assert "\\x1b[2K\\xff" in message and "\x1b" not in message and len(message) < 1000


VALUES = st.none() | st.booleans() | st.integers() | st.text(max_size=12) | st.sampled_from(
    [OLD, "../../etc", "active", "2026-12-06T05:30:00Z", sha(b""), [], {}, [{"pipeline": "p", "destination": "d"}]])


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.dictionaries(st.sampled_from(list(json.loads(serialize_index(INDEX))["releases"][0])), VALUES),
                max_size=3))
def test_a_planted_index_is_refused_as_invalid_state_or_read_with_release_ids_only(changes):
    data = json.loads(serialize_index(INDEX))
    for item, change in zip(data["releases"], changes):
        item.update(change)
    try:
        index = parse_index(json.dumps(data).encode(), WHERE)
    except DistributorError as error:
        assert error.reason == "invalid_state"
        return
    assert all(RELEASE_ID_PATTERN.match(r.id) and (r.from_id is None or RELEASE_ID_PATTERN.match(r.from_id)) for r in index.releases)
    assert len([r for r in index.releases if r.status == "active"]) <= 1
