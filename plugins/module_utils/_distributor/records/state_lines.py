# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lines a state record's output records and manifest file entries are written as
(state.serialize_state), made from their columns: one format per record over columns whose
strings json's own C escaping writes, where a dict a record for the C encoder cost 5 µs a
record. Each line is the bytes LINE.encode of the record's dict (state.output_to_dict,
manifest.file_to_dict) makes: tests/unit/test_state_lines.py holds them to it on generated
records."""

from __future__ import annotations

import json
from itertools import repeat
from operator import attrgetter

# The encoder of a record's line and of everything readable_json writes compactly: one made once
# (json.dumps with separators makes one per call).
LINE = json.JSONEncoder(separators=(", ", ": "))
STRING = json.encoder.encode_basestring_ascii
_path, _source_path, _kind, _transform, _url, _sha256, _size, _created, _updated, _attributes, _render_key = map(
    attrgetter, ("path", "source_path", "kind", "transform", "url", "sha256", "size", "created_at", "updated_at",
                 "attributes", "render_key"))


def output_lines(outputs, shared: bool) -> list:
    """Each output record as the line `LINE.encode(output_to_dict(output, shared))` writes, in
    the order given, made column-wise: one format per record over columns whose strings are
    escaped by json's own C escaping, the members a record may lack (transform, url, attributes,
    render_key; absent when empty, as output_to_dict leaves them out) written as a column of
    pieces, and the fields most records share (owner and source, attributes) written once each.
    tests/unit/test_state_lines.py holds it to output_to_dict's bytes."""
    outputs = list(outputs)
    paths = list(map(_path, outputs))
    sources = list(map(_source_path, outputs))
    paths_shown = list(map(STRING, paths))
    return list(map(_RECORD_FORMAT.__mod__, zip(
        paths_shown, map(STRING, map(_kind, outputs)), paths_shown if sources == paths else map(STRING, sources),
        _pieces(outputs, _transform, ', "transform": %s', STRING), _pieces(outputs, _url, ', "url": %s', STRING),
        map(STRING, map(_sha256, outputs)), map(_size, outputs),
        _pieces(outputs, _source_of, _SHARED_MEMBERS, _shared_members) if shared else repeat(""),
        map(STRING, map(_created, outputs)), map(STRING, map(_updated, outputs)),
        _pieces(outputs, _attributes, ', "attributes": %s', _attributes_text),
        _pieces(outputs, _render_key, ', "render_key": %s', STRING))))


_RECORD_FORMAT = ('{"path": %s, "kind": %s, "source_path": %s%s%s, "sha256": %s, "size": %d%s, '
                  '"created_at": %s, "updated_at": %s%s%s}')
_SHARED_MEMBERS = ', "pipeline_id": %s, "destination_id": %s, "source_id": %s, "source_digest": %s, "source_created": %s'
_source_of = attrgetter("owner", "source_id", "source_digest", "source_created")


def _pieces(outputs: list, field, form: str, text):
    """The piece of each record's line for a member written only when its value is not empty:
    each distinct value written once (most are None, or one value all records share)."""
    values = list(map(field, outputs))
    shown = {value: form % text(value) if value else "" for value in set(values)}
    return map(shown.__getitem__, values) if len(shown) > 1 else repeat(shown.popitem()[1] if shown else "")


def _shared_members(source: tuple) -> tuple:
    (pipeline_id, destination_id), source_id, source_digest, source_created = source
    return tuple(map(STRING, (pipeline_id, destination_id, source_id, source_digest, source_created)))


def _attributes_text(attributes: tuple) -> str:
    return LINE.encode(dict(attributes))


def file_lines(files) -> list:
    """Each manifest file entry as the line `LINE.encode(file_to_dict(entry))` writes."""
    files = list(files)
    return list(map('{"path": %s, "sha256": %s, "size": %d}'.__mod__, zip(
        map(STRING, map(_path, files)), map(STRING, map(_sha256, files)), map(_size, files))))
