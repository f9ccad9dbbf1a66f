# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A state's output records and its manifests' file entries are written from their columns
(state_lines.output_lines, state_lines.file_lines) and must be the bytes writing each record's
dict makes (state.output_to_dict through the same C encoder), for any mix of kinds, optional
members, owners and strings: the column-wise lines are the only way
a state's records are written, and this holds them to the form the record documents."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import (
    Output, Owner, OwnerKey, State, output_to_dict, readable_json, serialize_state, state_to_dict)
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_lines import LINE, output_lines

from builders import manifest

ESCAPED = st.sampled_from(['"', "\\", "%", "\n", "\0", "é", "/", "\udcff"])
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)) | ESCAPED, min_size=1, max_size=12)
OPTIONAL = st.none() | st.just("") | TEXT
SHA = st.sampled_from(["sha256:" + "a" * 64, "sha256:" + "0" * 64])
OWNER = st.builds(OwnerKey, st.sampled_from(["p", "q%s"]), st.sampled_from(["d", "e\u00e9"]))
ATTRIBUTES = st.sampled_from([(), (("cache_control", "max-age=60"),), (("content_type", "text/html"), ("mode", "0644"))])
OUTPUT = st.builds(
    Output, path=TEXT, kind=st.sampled_from(["source", "generated"]), source_path=TEXT, transform=OPTIONAL, url=OPTIONAL,
    sha256=SHA, size=st.integers(0, 2 ** 62), created_at=st.sampled_from(["2026-12-06T10:00:00Z", "2026-12-06T10:00:01Z"]),
    updated_at=st.just("2026-12-06T10:00:02Z"), owner=OWNER, source_id=TEXT, source_digest=SHA, source_created=TEXT,
    attributes=ATTRIBUTES, render_key=st.none() | SHA)


@settings(max_examples=300, deadline=None)
@given(st.lists(OUTPUT, max_size=8), st.booleans())
def test_output_lines_are_the_bytes_of_each_records_dict(outputs, shared):
    assert output_lines(outputs, shared) == [LINE.encode(output_to_dict(o, shared)) for o in outputs]


def test_a_copy_whose_source_path_equals_its_path_and_one_that_differs_are_both_written_as_their_dicts():
    same = Output("a", "source", "a", None, None, "sha256:" + "a" * 64, 1, "t", "t", OwnerKey("p", "d"), "i", "s", "c")
    other = same._replace(path="b")
    assert output_lines([same, other], False) == [LINE.encode(output_to_dict(o)) for o in (same, other)]


FILES = st.dictionaries(st.text(alphabet=st.characters(blacklist_categories=("Cs",)) | st.sampled_from(['"', "\\", "%"]),
                                min_size=1, max_size=8), st.binary(max_size=3), max_size=4)


@settings(max_examples=60, deadline=None)
@given(st.lists(OUTPUT, max_size=6, unique_by=lambda o: o.path), st.booleans(), FILES)
def test_a_state_is_written_as_readable_json_writes_its_dict(outputs, shared, files):
    owners = tuple(sorted({o.owner for o in outputs})) or (OwnerKey("p", "d"),)
    recorded = tuple(Owner(key, "replace", manifest(files=files), None) for key in (owners if shared else owners[:1]))
    state = State("shared_root" if shared else "single_owner", 3 if shared else 2, "c", "u", None if shared else "u", "1.0.0",
                  recorded, tuple(outputs))
    assert serialize_state(state) == (readable_json(state_to_dict(state)) + "\n").encode("utf-8")
