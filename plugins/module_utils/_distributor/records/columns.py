# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Column-wise checks of the large documents distributor reads, a manifest and a single-owner
state record: each field of a large array is checked for every entry at once, by passes that run
in C (map, set, join, one regular expression over a column joined by newlines) instead of a
Python call per entry and field. They are the fast path of manifest.parse_manifest and
state_parse.parse_state.

Like fastcheck.py's item checks, each is sufficient, never necessary: it accepts only what the
full path (the schema, the path rules, the digest, the timestamps, the URLs) certainly accepts,
and returns the columns the model is built from. Anything else (another shape, an unsorted list,
a type or a value it does not recognise) is None, and the caller takes the full path unchanged,
which words the error. Nothing is taken from what a document says of itself: a manifest's digest
is recomputed from its columns. tests/unit/test_columns.py holds both paths to the same verdicts
and the same models.
"""

from __future__ import annotations

import hashlib
import re
from collections import namedtuple
from functools import partial
from itertools import chain, compress, filterfalse, islice, repeat
from operator import itemgetter

from .state_lines import FILE_LINE, LINE_COLUMNS, SHARED_LINE, canonical_attributes, line_values
from .formats import HTTP_URL_LINES, SHA256_LENGTH, SHA256_PREFIX, is_http_url, is_id as _id, is_sha256
from ..paths import RESERVED_PREFIX, all_clean, parents_of
from ..timestamps import parse_rfc3339
from ..urls import all_made, recorded_url_problem, url_problem
from ..vocabulary import OUTPUT_KINDS, RECONCILIATION_MODES, SINGLE_OWNER

MANIFEST_KEYS = frozenset(("schema_version", "id", "digest", "created", "files"))
FILE_KEYS = ("path", "sha256", "size")
_NONE = type(None)


class Row(tuple):
    """The base of a model record made by the hundred thousand (a manifest's files, a plan's
    outputs, a state's output records): a named tuple, made from its columns by `rows` at C level, where a frozen
    dataclass runs a Python __init__ per record (1 µs: 0.1 s for 100,000). It reads like the
    dataclass it replaces (named fields, immutable, hashable, the same repr), and equals only a
    record of its own kind with equal fields: never a plain tuple, nor a record of another kind
    with the same values. A subclass lists its fields by deriving from `fields(name, ...)`."""

    __slots__ = ()

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and tuple.__eq__(self, other)

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    __hash__ = tuple.__hash__


def fields(name: str, *names: str, defaults: tuple = ()) -> type:
    """The named fields of a Row subclass: `class ManifestFile(Row, fields("ManifestFile", "path", ...))`;
    `defaults` are those of the last fields."""
    return namedtuple(name, names, defaults=defaults)


def rows(kind: type, *columns) -> tuple:
    """A Row of `kind` for each position of the columns (one value from each, in field order)."""
    return tuple(map(tuple.__new__, repeat(kind), zip(*columns)))


def _strings(column) -> bool:
    return {str}.issuperset(map(type, column))


def _lines(pattern: re.Pattern, column: list) -> bool:
    """Every value of `column` a line `pattern` matches; a value holding a newline, which would
    pass as two lines, is told by the count of lines."""
    joined = "\n".join(column)
    return not column or (joined.count("\n") == len(column) - 1 and pattern.fullmatch(joined + "\n") is not None)


def is_integer(value) -> bool:
    """A JSON integer as json.loads makes one: not a bool (which Python counts as an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _rfc3339(value) -> bool:
    try:
        parse_rfc3339(value)
    except ValueError:
        return False
    return True


def _timestamps(*columns) -> bool:
    """Every value an RFC3339 timestamp: a large record holds a handful of distinct ones."""
    return all(map(_strings, columns)) and all(map(_rfc3339, set(chain.from_iterable(columns))))


def _sizes(column) -> bool:
    return {int}.issuperset(map(type, column)) and min(column, default=0) >= 0


def sha256_column(column) -> bool:
    """Every value `sha256:` and 64 lowercase hex digits (formats.is_sha256), told over the
    values joined: each value 71 ASCII characters, so the n-th character of every value is every
    71st of the whole; the first seven of each `sha256:`; the rest, once those n prefixes are
    gone (and nothing else: 64 characters a value are left), lowercase hex digits. No prefix can
    start across two values: no suffix of `sha256:` starts with `s`."""
    if not column:
        return True
    if not (_strings(column) and {SHA256_LENGTH}.issuperset(map(len, column))):
        return False
    try:
        joined = "".join(column).encode("ascii")
    except UnicodeEncodeError:
        return False
    count = len(column)
    if any(joined[i::SHA256_LENGTH] != SHA256_PREFIX[i:i + 1] * count for i in range(len(SHA256_PREFIX))):
        return False
    digits = joined.replace(SHA256_PREFIX, b"")
    return len(digits) == 64 * count and not digits.translate(None, b"0123456789abcdef")


def ascending(column: list) -> bool:
    """Strings in strictly ascending order: unique, and in the order manifest digests and
    state records list them (code points, which for UTF-8 text is the order of its bytes)."""
    return _strings(column) and all(map(str.__lt__, column, islice(column, 1, None)))


def publishable(paths: list) -> bool:
    """Whether manifest.publishable_path_problem finds nothing wrong with any of `paths`: clean
    (paths.all_clean), UTF-8, and none holding the reserved prefix anywhere, which is stricter
    than paths.is_reserved (a segment's start): such a path takes the full path."""
    if not all_clean(paths):
        return False
    joined = "\n".join(paths)
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return RESERVED_PREFIX not in joined


def _inside_a_file(paths: list) -> bool:
    """Whether a path lies in a directory that is another path: the distinct parents, and theirs,
    against the paths."""
    return not parents_of(paths).isdisjoint(paths)


def file_columns(files: object) -> list | None:
    """[paths, sha256s, sizes] of `files` when it is a list of objects with exactly the members
    path, sha256 and size, every size an integer (not a boolean, which equals 0 or 1); None
    otherwise. Nothing else is checked: enough to compare entries with those of a manifest
    already checked (manifest._same)."""
    if not isinstance(files, list) or not {dict}.issuperset(map(type, files)) or not {3}.issuperset(map(len, files)):
        return None
    try:
        columns = [list(map(itemgetter(key), files)) for key in FILE_KEYS]
    except KeyError:
        return None
    return columns if {int}.issuperset(map(type, columns[2])) else None


def records_digest(paths, sha256s, sizes) -> str:
    """`sha256:` over a `path NUL sha256 NUL size` line per file, in the order given: a
    manifest's digest, once its files are sorted (manifest.compute_digest)."""
    lines = "".join(map("%s\0%s\0%d\n".__mod__, zip(paths, sha256s, sizes)))
    return "sha256:" + hashlib.sha256(lines.encode("utf-8")).hexdigest()


def entries_digest(entries: list) -> str:
    """records_digest of (path, sha256, size) entries as file lines hold them (FILE_LINE's
    groups): bytes of ASCII, a size in the decimal digits `%d` writes, so the digest is made
    without a str or an int an entry."""
    return "sha256:" + hashlib.sha256(b"".join(map(b"%s\0%s\0%s\n".__mod__, entries))).hexdigest()


def manifest_columns(data: object) -> list | None:
    """[paths, sha256s, sizes] of a manifest that parse_manifest's full path certainly accepts
    (the schema, `created`, the path rules, the digest recomputed), its files listed in the
    order of their paths, as distributor_manifest writes them; None for any other."""
    if not _manifest_members(data):
        return None
    columns = file_columns(data["files"])
    if columns is None:
        return None
    paths, sha256s, sizes = columns
    if not (_listable(paths) and sha256_column(sha256s) and _sizes(sizes)):
        return None
    return columns if records_digest(paths, sha256s, sizes) == data["digest"] else None


def _manifest_members(data: object) -> bool:
    """A manifest's members but its files as the schema certainly accepts them, `created` a
    timestamp."""
    if not isinstance(data, dict) or data.keys() != MANIFEST_KEYS:
        return False
    version = data["schema_version"]
    return (is_integer(version) and version == 1 and _id(data["id"]) and is_sha256(data["digest"]) and _id(data["created"])
            and _rfc3339(data["created"]))


def _listable(paths: list) -> bool:
    """Paths a manifest may list, in the order its digest takes them: the path rules, ascending
    (so each once), none inside another."""
    return publishable(paths) and ascending(paths) and not _inside_a_file(paths)


def file_line_columns(data: object, raw: bytes, start: int, end: int) -> list | None:
    """The paths of an owner's manifest embedded in a shared root's record, its file lines
    `raw[start:end]` (state_lines.split_files) and its other members `data`, when
    manifest_columns's full path would accept it: every line an entry as distributor writes it
    (state_lines.FILE_LINE, the schema's forms), then the same checks of the paths and the
    digest, recomputed from the lines (entries_digest); None for any other manifest. The rest
    of each entry is read from its line again only when it is modelled (carried.CarriedFiles)."""
    if not _manifest_members(data):
        return None
    found = FILE_LINE.findall(raw, start, end)
    if not found or len(found) != raw.count(b"\n", start, end) + 1 or raw.endswith(b",", start, end):
        return None
    paths = list(map(bytes.decode, map(itemgetter(0), found)))
    return paths if _listable(paths) and entries_digest(found) == data["digest"] else None


STATE_KEYS = frozenset(("schema_version", "distributor_version", "pipeline_id", "destination_id", "published_at",
                        "created_at", "updated_at", "state", "reconciliation", "source", "links", "outputs"))
STATE_REQUIRED = STATE_KEYS - {"distributor_version", "links"}
OUTPUT_REQUIRED = ("path", "kind", "source_path", "sha256", "size", "created_at", "updated_at")
OUTPUT_OPTIONAL = ("transform", "url", "attributes", "render_key")
_REQUIRED = frozenset(OUTPUT_REQUIRED)
_OUTPUT_KEYS = frozenset(OUTPUT_REQUIRED + OUTPUT_OPTIONAL)
# Distinct member lists of output records looked at; a record holding more takes the full path.
_SHAPES = 64


def single_owner_columns(data: object, listed: list) -> dict | None:
    """The output columns of a schema-2 record (single owner) that the full path certainly
    accepts, given its embedded manifest's paths (`listed`, that manifest already checked:
    state_parse.py's), with None for a member an output does not have; None for any other record.
    The top level is checked here too; its values are read from `data`."""
    if not isinstance(data, dict) or not STATE_REQUIRED <= data.keys() <= STATE_KEYS:
        return None
    reconciliation, source, links = data["reconciliation"], data["source"], data.get("links", {})
    if not (is_integer(data["schema_version"]) and data["schema_version"] == 2
            and isinstance(data.get("distributor_version", ""), str) and _id(data["pipeline_id"]) and _id(data["destination_id"])
            and _timestamps([data["published_at"], data["created_at"], data["updated_at"]])
            and isinstance(data["state"], dict) and data["state"] == {"mode": SINGLE_OWNER}
            and isinstance(reconciliation, dict) and reconciliation.keys() == {"mode"} and _mode(reconciliation["mode"])
            and isinstance(source, dict) and source.keys() == {"manifest"}
            and isinstance(links, dict) and links.keys() <= {"primary_url"} and _primary_url(links)):
        return None
    columns = output_columns(data["outputs"])
    if columns is None:
        return None
    paths, urls = columns["path"], columns["url"]
    if not ascending(paths) or not (paths == listed or publishable(list(filterfalse(set(listed).__contains__, paths)))):
        return None
    if urls is not None and not all_made(list(filter(None, urls)), list(compress(paths, urls))):
        return None
    return columns


def _mode(value) -> bool:
    return isinstance(value, str) and value in RECONCILIATION_MODES


def _primary_url(links: dict) -> bool:
    return "primary_url" not in links or (is_http_url(links["primary_url"]) and url_problem(links["primary_url"]) is None)


def output_columns(outputs: object) -> dict | None:
    """Each member's column of output records (schema 2) that the state schema certainly
    accepts, None in an optional member's column where a record lacks it, and None for a member
    no record has; None when a record is not recognised. Paths are only known to be strings
    here (single_owner_columns checks them against the manifest)."""
    if not isinstance(outputs, list) or not {dict}.issuperset(map(type, outputs)):
        return None
    shapes = set(map(tuple, outputs))
    if len(shapes) > _SHAPES or not all(map(_OUTPUT_KEYS.issuperset, shapes)) or not all(map(_REQUIRED.issubset, shapes)):
        return None
    given = frozenset().union(*shapes)
    columns = {key: list(map(itemgetter(key), outputs)) for key in OUTPUT_REQUIRED}
    for key in OUTPUT_OPTIONAL:
        columns[key] = _optional(outputs, key) if key in given else None
        if key in given and columns[key] is None:
            return None
    kinds, transforms = columns["kind"], columns["transform"]
    if not (_strings(columns["path"]) and _strings(kinds) and set(kinds) <= set(OUTPUT_KINDS) and _strings(columns["source_path"])
            and sha256_column(columns["sha256"]) and _sizes(columns["size"])
            and _timestamps(columns["created_at"], columns["updated_at"])):
        return None
    if "generated" in kinds and (transforms is None or None in compress(transforms, map("generated".__eq__, kinds))):
        return None
    return columns if all(_present(columns[key], *checks) for key, *checks in _OPTIONAL_CHECKS) else None


def _optional(outputs: list, key: str) -> list | None:
    """The column of optional member `key`, None where a record lacks it; None when a record
    holds it as null (the schema refuses that, and the column could not tell it from absent)."""
    column = list(map(dict.get, outputs, repeat(key)))
    holding = sum(map(dict.__contains__, outputs, repeat(key)))
    return column if column.count(None) == len(outputs) - holding else None


def _present(column: list | None, kind: type, check) -> bool:
    """The values of an optional member's column are of `kind` where present, and those that
    are not empty pass `check`; an empty string never does (each string member has a pattern
    or a minimum length), an empty object always does."""
    if column is None:
        return True
    return {kind, _NONE}.issuperset(map(type, column)) and "" not in column and check(list(filter(None, column)))


def _attributes(column: list) -> bool:
    return _strings(chain.from_iterable(map(dict.values, column)))


def _any(values: list) -> bool:
    return True


# Each optional member: the type of its values, and the check of those not empty.
_OPTIONAL_CHECKS = (
    ("transform", str, _any),
    ("url", str, partial(_lines, HTTP_URL_LINES)),
    ("attributes", dict, _attributes),
    ("render_key", str, sha256_column),
)


def shared_output_lines(raw: bytes, start: int, end: int) -> dict | None:
    """The columns of the `outputs` lines of a schema-3 record (`raw[start:end]`: its lines, the
    last without its newline or a comma) when every line is a record as distributor writes it (state_lines.SHARED_LINE) that
    the state schema and state_parse.py's checks of a record alone certainly accept (timestamps, URL
    against its path, attributes); None for any other. `line` holds each record's bytes, `path`
    its path (str, in ascending order: one record a path) and `owner` its owner's text, which
    `owners` maps to the owner's (pipeline_id, destination_id). What a record says of others
    (that its owner is recorded, that its path is one that owner's manifest lists or a
    publishable one) is the caller's to check."""
    if SHARED_LINE.match(raw, start, end) is None:  # a single-owner record, or a line of another form at once
        return None
    found = SHARED_LINE.findall(raw, start, end)
    if not found or len(found) != raw.count(b"\n", start, end) + 1 or raw.endswith(b",", start, end):
        return None
    columns = {name: list(map(itemgetter(index), found)) for index, name in enumerate(LINE_COLUMNS)}
    paths = columns["path"] = list(map(bytes.decode, columns["path"]))
    columns["owners"] = {text: tuple(map(bytes.decode, line_values(text))) for text in set(columns["owner"])}
    stamps = set(chain.from_iterable(map(line_values, set(columns.pop("times")))))
    if not (ascending(paths) and all(map(_rfc3339, map(bytes.decode, stamps)))
            and all(map(canonical_attributes, set(columns.pop("attributes"))))):
        return None
    urls = columns.pop("url")
    if any(urls):
        made, named = list(map(bytes.decode, filter(None, urls))), list(compress(paths, urls))
        if not (_lines(HTTP_URL_LINES, made) and (all_made(made, named) or not any(map(recorded_url_problem, made, named)))):
            return None
    return columns
