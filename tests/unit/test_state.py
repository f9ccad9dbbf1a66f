# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Schemas 1, 2 and 3 read into one model; 2 and 3 written back; every problem is invalid_state."""

from __future__ import annotations

import json

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import (
    Output, OwnerKey, readable_json, serialize_state, state_to_dict, to_shared)
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_parse import parse_state

from builders import manifest, shared_state, single_state

M = manifest()


def v1(**extra):
    record = {"schema_version": 1, "pipeline_id": "reports", "destination_id": "archive",
              "published_at": "2026-06-04T12:00:00Z", "source": {"manifest": M.to_dict()},
              "outputs": [{"path": "report.md", "kind": "source", "source_path": "report.md",
                           "sha256": M.files[0].sha256, "size": M.files[0].size}]}
    record.update(extra)
    return json.dumps(record).encode()


def invalid(raw, *words):
    with pytest.raises(DistributorError) as caught:
        parse_state(raw, ".distributor.json")
    assert caught.value.reason == "invalid_state"
    for word in words:
        assert word in caught.value.message
    return caught.value.message


def test_schema_1_is_read_as_single_owner_replace_state():
    state = parse_state(v1(), ".distributor.json")
    assert (state.mode, state.schema_version, state.owners[0].reconciliation) == ("single_owner", 1, "replace")


def test_schema_1_timestamps_are_inferred_from_published_at():
    state = parse_state(v1(), ".distributor.json")
    assert state.created_at == state.updated_at == "2026-06-04T12:00:00Z"
    assert (state.outputs[0].created_at, state.outputs[0].updated_at) == ("2026-06-04T12:00:00Z", "2026-06-04T12:00:00Z")


def test_single_owner_state_is_written_as_schema_2_and_reads_back_equal():
    state = single_state(M)
    written = state_to_dict(state)
    assert written["schema_version"] == 2 and written["state"] == {"mode": "single_owner"}
    assert "pipeline_id" not in written["outputs"][0]
    assert parse_state(serialize_state(state), "x") == state


def test_shared_root_state_is_written_as_schema_3_with_owner_fields_on_outputs():
    state = shared_state(("reports", "archive", M, ["a.md"]), ("events", "archive", manifest(id="events"), ["b.md"]))
    written = state_to_dict(state)
    assert written["schema_version"] == 3
    assert {"pipeline_id", "destination_id", "source_id", "source_digest", "source_created"} <= set(written["outputs"][0])
    assert parse_state(serialize_state(state), "x") == state


def test_every_field_of_a_read_output_is_read_from_its_record_not_left_at_a_default():
    """Records read from a recognised state are made from its columns without Output's __new__
    (columns.rows): a field added to Output and forgotten there would leave the records short."""
    state = shared_state(("reports", "archive", M, ["a.md"]), ("events", "archive", manifest(id="events"), ["b.md"]))
    for read in (parse_state(serialize_state(state), "x"), parse_state(serialize_state(single_state(M)), "x")):
        assert read.outputs and all(output.__class__ is Output and len(output) == len(Output._fields) for output in read.outputs)


def test_migration_keeps_owner_outputs_and_timestamps():
    state = to_shared(single_state(M))
    assert state.mode == "shared_root" and state.outputs_of(OwnerKey("reports", "archive")) == single_state(M).outputs


def test_invalid_json_is_invalid_state():
    invalid(b"{not json", "not valid JSON")


def test_unknown_schema_version_is_invalid_state():
    invalid(b'{"schema_version": 9}', "schema_version 9")


def test_missing_required_field_names_the_field():
    record = json.loads(v1())
    del record["published_at"]
    invalid(json.dumps(record).encode(), "published_at")


def test_bad_timestamp_names_the_field():
    invalid(v1(published_at="yesterday"), "published_at", "RFC3339")


def test_embedded_manifest_with_a_wrong_digest_is_invalid_state():
    broken = dict(M.to_dict(), digest="sha256:" + "0" * 64)
    invalid(v1(source={"manifest": broken}), "source.manifest", "digest")


def test_a_path_recorded_twice_is_invalid_state():
    record = json.loads(v1())
    record["outputs"].append(dict(record["outputs"][0]))
    invalid(json.dumps(record).encode(), "recorded twice")


@pytest.mark.parametrize("path", ["../x", ".distributor.json", "a/.distributor.lock"])
def test_unclean_or_reserved_output_paths_are_invalid_state(path):
    record = json.loads(v1())
    record["outputs"][0]["path"] = path
    invalid(json.dumps(record).encode(), "outputs[0].path")


def with_url(url: str, path: str = "report.md") -> bytes:
    record = json.loads(v1())
    record["outputs"][0].update(path=path, source_path=path, url=url)
    return json.dumps(record).encode()


@pytest.mark.parametrize("url, path", [
    ("https://reports.example.com/archive/report.md", "report.md"),
    ("http://h/report.md", "report.md"),  # another owner's, or an earlier base_url's: any sound base
    ("https://h/docs/a(1)%20b.html", "a(1) b.html"),  # escaped as another writer escapes
    ("https://h/caf%C3%A9.html", "café.html"),
    ("https://h/café.html", "café.html"),
])
def test_a_recorded_url_that_is_its_path_under_some_base_url_is_read(url, path):
    assert parse_state(with_url(url, path), ".distributor.json").outputs[0].url == url


@pytest.mark.parametrize("url, problem", [
    ("https://h/*", "does not end with the output's path"),
    ("https://h/docs/site/../../admin/report.md", "'.' or '..' segment"),
    ("https://h/docs/%2E%2E/report.md", "'.' or '..' segment"),
    ("https://h/docs/./report.md", "'.' or '..' segment"),
    ("https://h/docs\\..\\report.md", "backslash"),
    ("https://h/report.md?/*", "query"),
    ("https://h/x#/report.md", "fragment"),
    ("https:///report.md", "with a host"),
    ("https://[::1/report.md", "is not a URL"),
])
def test_a_recorded_url_distributor_never_makes_is_invalid_state_naming_the_path_and_both_urls(url, problem):
    invalid(with_url(url), "outputs[0].url %r" % url, problem, "'report.md'", "links.base_url + '/report.md'")


def test_a_recorded_primary_url_with_a_dot_segment_is_invalid_state():
    invalid(v1(links={"primary_url": "https://h/a/../../admin/"}), "links.primary_url", "'.' or '..' segment")


def test_shared_root_output_of_an_unknown_owner_is_invalid_state():
    state = state_to_dict(shared_state(("reports", "archive", M, ["a.md"])))
    state["outputs"][0]["pipeline_id"] = "ghost"
    invalid(json.dumps(state).encode(), "ghost/archive", "owners[]")


@pytest.mark.parametrize("attributes", [5, ["mode"], {"mode": 416}, {"mode": None}])
def test_output_storage_settings_that_are_not_strings_are_invalid_state(attributes):
    """Not a traceback when the record is modelled: the schema refuses them first."""
    record = json.loads(v1())
    record["outputs"][0]["attributes"] = attributes
    invalid(json.dumps(record).encode(), "outputs[0].attributes")


def test_generated_output_without_transform_is_invalid_state():
    record = json.loads(v1())
    record["outputs"][0]["kind"] = "generated"
    invalid(json.dumps(record).encode(), "transform")


@pytest.mark.parametrize("state", [
    single_state(manifest(files={"a.md": b"a", "b/c.md": b"c"}), paths=("a.md", "b/c.md")),
    shared_state(("one", "d", manifest(files={"a.md": b"a"}), ("a.md",)), ("two", "d", manifest(files={"b/c.md": b"c"}), ("b/c.md",))),
], ids=["single owner", "shared root"])
def test_state_is_written_one_record_a_line_and_reads_back_the_same(state):
    """Readable for an operator grepping for a path, and written by the C encoder: every output
    record and manifest file entry is one line, the structure around them is indented."""
    raw = serialize_state(state)
    assert json.loads(raw) == state_to_dict(state)
    assert parse_state(raw, ".distributor.json") == state
    lines = raw.decode().splitlines()
    for output in state_to_dict(state)["outputs"]:
        assert sum('"path": "%s"' % output["path"] in line and '"sha256"' in line for line in lines) == 2, \
            "the output record and its manifest file entry are not one line each"
    assert lines[0] == "{" and lines[1].startswith('  "schema_version": ')


def test_records_are_one_a_line_whatever_their_strings_hold():
    """Objects of scalars are written by one encoder call and split at record boundaries:
    strings holding braces, commas, newlines or NULs must not be taken for one."""
    tricky = ["}, {", "}\n{", "a}\n", "\n{b", "}\x00{", "\\", '"}', "{}"]
    records = [{"path": text, "n": i, "empty": None, "yes": True} for i, text in enumerate(tricky)] + [{}, {"x": 1.5}]
    text = readable_json({"outputs": records, "nested": [{"a": {"b": 1}}, {"c": 2}]})
    assert json.loads(text) == {"outputs": records, "nested": [{"a": {"b": 1}}, {"c": 2}]}
    lines = text.splitlines()
    assert [json.loads(line.strip().rstrip(",")) for line in lines[2:2 + len(records)]] == records
    assert lines[2 + len(records)] == "  ],"


def test_the_first_bad_timestamp_of_an_output_is_the_one_named():
    state = state_to_dict(shared_state(("reports", "archive", M, ["a.md"])))
    state["outputs"][0].update(created_at="soon", updated_at="later", source_created="once")
    invalid(json.dumps(state).encode(), "outputs[0].created_at")
    state["outputs"][0]["created_at"] = "2026-06-04T12:00:00Z"
    invalid(json.dumps(state).encode(), "outputs[0].updated_at")
    state["outputs"][0]["updated_at"] = "2026-06-04T12:00:00Z"
    invalid(json.dumps(state).encode(), "outputs[0].source_created")
