# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lines a state record's output records and manifest file entries are written as
(state.serialize_state), where a shared root's output lines sit in the record's bytes, and the
form those lines are read back in (columns.shared_output_lines): one home for the line format,
so writing, cutting and reading it change together.

Lines are made from their columns: one format per record over columns whose strings json's own
C escaping writes, where a dict a record for the C encoder cost 5 µs a record. Each line is the
bytes LINE.encode of the record's dict (state.output_to_dict, manifest.file_to_dict) makes:
tests/unit/test_state_lines.py holds them to it on generated records."""

from __future__ import annotations

import json
import re
from itertools import repeat
from operator import attrgetter

from .formats import SHA256

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


# Where the outputs block of a state distributor wrote begins and ends (state.serialize_state):
# the last member of the record, one record a line. A JSON string holds no raw newline, so
# these bytes are the record's own structure wherever they occur.
OPENING = b'\n  "outputs": [\n'
CLOSING = b"\n  ]\n}\n"
_EMPTY = b'\n  "outputs": []\n}\n'
_SEPARATOR = b",\n    "


def split_outputs(raw: bytes) -> tuple[int, int] | None:
    """Where the block of output lines starts and ends in `raw` (the lines, the last without its
    newline) for a record laid out as distributor writes one; None for any other, which takes
    the full path. The block is not copied: a shared root's state is tens of MiB."""
    start, end = raw.rfind(OPENING) + len(OPENING), len(raw) - len(CLOSING)
    if start < len(OPENING) or not raw.endswith(CLOSING) or start > end:
        return None
    return start, end


def emptied(raw: bytes, start: int, files: list = (), marker: str = "") -> bytes:
    """The record with an empty outputs list in place of the block starting at `start`: the
    same JSON up to the array's items, so it decodes as the record does less them. Each of
    `files` (split_files: blocks of manifest file lines before it) is put as the string
    `marker` and its index in that list, which the reader looks for where each owner's
    manifest lists its files: a marker made for this read, which no record can hold already."""
    pieces, at = [], 0
    for index, (begin, end) in enumerate(files):
        pieces += [raw[at:begin - len(b"[\n")], b'"%s%d"' % (marker.encode("ascii"), index)]
        at = end + len(_FILES_END)
    return b"".join(pieces) + raw[at:start - len(OPENING)] + _EMPTY


# Where a shared-root record's owners list the files of their embedded manifests
# (state.serialize_state lays every owner out at this depth, the files last in its manifest),
# one entry a line: cut from the bytes the same way, so other owners' manifests are checked in
# place (columns.file_line_columns) and written back as read (carried.CarriedFiles).
FILES_OPENING = b'\n          "files": [\n'
_FILES_END = b"\n          ]"
_FILES_CLOSING = _FILES_END + b"\n        }"
_FILE_SEPARATOR = ",\n" + " " * 12


def split_files(raw: bytes, end: int) -> list | None:
    """Where each block of manifest file lines starts and ends in `raw[:end]` (the record
    before its outputs block), in order; None for a record not laid out as distributor writes
    one, which takes the full path."""
    blocks, at = [], raw.find(FILES_OPENING, 0, end)
    while at >= 0:
        start = at + len(FILES_OPENING)
        stop = raw.find(_FILES_CLOSING, start, end)
        if stop < 0:
            return None
        blocks.append((start, stop))
        at = raw.find(FILES_OPENING, stop, end)
    return blocks


def file_block_lines(block: bytes) -> list:
    """The file entry lines of a block split_files found (checked: ASCII, FILE_LINE each), without
    their indentation: what state.readable_json lays out again at the same depth."""
    return block.decode("ascii")[len(_FILE_SEPARATOR) - 2:].split(_FILE_SEPARATOR)


def with_outputs(head: str, lines: list) -> bytes:
    """`head` (a record's JSON with an empty outputs list, as state.readable_json lays it out)
    with `lines` (each record's bytes, in order) put back as its outputs block."""
    if not head.endswith('"outputs": []\n}'):
        raise ValueError("the outputs list is not the record's last member")
    return head[:-len("[]\n}")].encode("utf-8") + b"[\n    " + _SEPARATOR.join(lines) + CLOSING


# A shared-root output record (schema 3) exactly as distributor writes it (output_lines,
# one line of state.serialize_state): its members in that order, every string of printable ASCII
# without an escape (the encoder escapes everything else), a generated output with its transform,
# a size of at most 18 digits (longer integers json.loads refuses past its digit limit), attributes
# only when there are some; then a comma, or the end of the last line.
# Groups: the record, its path, url, owner (pipeline and destination), timestamps, attributes.
_TEXT = rb'[ !#-\[\]-~]'
_LINE_ID = rb'"' + _TEXT + rb'+"'
_LINE_SHA256 = b'"' + SHA256.encode() + b'"'
_LINE_ATTRIBUTE = rb'"' + _TEXT + rb'+": "' + _TEXT + rb'*"'
SHARED_LINE = re.compile(
    rb'^    (\{"path": "(' + _TEXT + rb'*)", "kind": (?:"source", "source_path": "' + _TEXT + rb'*"(?:, "transform": ' + _LINE_ID
    + rb')?|"generated", "source_path": "' + _TEXT + rb'*", "transform": ' + _LINE_ID + rb')(?:, "url": "(' + _TEXT + rb'+)")?, '
    rb'"sha256": ' + _LINE_SHA256 + rb', "size": (?:0|[1-9][0-9]{0,17}), '
    rb'"pipeline_id": (' + _LINE_ID + rb', "destination_id": ' + _LINE_ID + rb'), "source_id": ' + _LINE_ID + rb', '
    rb'"source_digest": ' + _LINE_SHA256 + rb', "source_created": (' + _LINE_ID + rb', "created_at": ' + _LINE_ID
    + rb', "updated_at": ' + _LINE_ID + rb')(?:, "attributes": (\{' + _LINE_ATTRIBUTE + rb'(?:, ' + _LINE_ATTRIBUTE + rb')*\}))?'
    rb'(?:, "render_key": ' + _LINE_SHA256 + rb')?\})(?:,$|\Z)', re.M)
LINE_COLUMNS = ("line", "path", "url", "owner", "times", "attributes")
# A manifest file entry as file_lines writes it at an owner's depth (split_files), the same way:
# its members in order, a path of printable ASCII without escapes, then a comma or the end of
# the block. Groups: path, sha256, size.
FILE_LINE = re.compile(rb'^            \{"path": "(' + _TEXT + rb'+)", "sha256": "(' + SHA256.encode() + rb')", '
                       rb'"size": (0|[1-9][0-9]{0,17})\}(?:,$|\Z)', re.M)


def line_values(members: bytes) -> list:
    """The values of `"a", "name": "b", ...` (the text of a group of SHARED_LINE, which holds no
    quote but those around its strings): every fourth piece between quotes."""
    return members.split(b'"')[1::4]


def canonical_attributes(text: bytes) -> bool:
    """An output's attributes as state.output_to_dict writes them (absent: empty): an object of
    strings, names in order and each once, so the line is the one writing its record makes."""
    if not text:
        return True
    attributes = json.loads(text)
    return list(attributes) == sorted(attributes) and LINE.encode(attributes).encode() == text
