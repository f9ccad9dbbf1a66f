# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plain-Python checks of the large arrays (manifest `files[]`, state `outputs[]` and `owners[]`), so
jsonschema runs on the rest of a document instead of on 100,000 entries.

Each check is sufficient, never necessary: it accepts an item only when the item's schema in
schemas.py certainly accepts it too (it may be stricter, as a full-match pattern is). So
validating the document with that array emptied, then with jsonschema each item that does not
pass until one fails, finds every error of the document up to its first broken item, without
jsonschema looking at the items that pass: acceptances, rejections and error wording stay
jsonschema's, and a planted array of millions of broken items costs one look at its first.
tests/unit/test_fastcheck.py holds the two paths to that.
"""

from __future__ import annotations

import re
from typing import Iterator

from .vocabulary import RECONCILIATION_MODES

_SHA256 = re.compile(r"sha256:[0-9a-f]{64}")
_HTTP_URL = re.compile(r"[Hh][Tt][Tt][Pp][Ss]?://[^\s]+")


def _text(value) -> bool:
    return isinstance(value, str)


def _id(value) -> bool:
    return isinstance(value, str) and value != ""


def is_sha256(value) -> bool:
    """`sha256:` and 64 lowercase hex digits, as the schemas' SHA256 accepts."""
    return isinstance(value, str) and _SHA256.fullmatch(value) is not None


def _size(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def is_http_url(value) -> bool:
    """An http(s) URL without white space, as the schemas' HTTP_URL accepts (no trailing newline)."""
    return isinstance(value, str) and _HTTP_URL.fullmatch(value) is not None


def _attributes(value) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _manifest_file(item) -> bool:
    return (isinstance(item, dict) and len(item) == 3 and _id(item.get("path"))
            and is_sha256(item.get("sha256")) and _size(item.get("size")))


# One check per property of the output schemas (tests/unit/test_fastcheck.py holds them equal): a
# property left out here would pass unchecked, since jsonschema does not see the items that pass.
_OUTPUT = {"path": _text, "source_path": _text, "transform": _id, "url": is_http_url, "sha256": is_sha256, "size": _size,
           "attributes": _attributes}
_OUTPUT_V2 = dict(_OUTPUT, created_at=_id, updated_at=_id, render_key=is_sha256)
_OUTPUT_V3 = dict(_OUTPUT_V2, pipeline_id=_id, destination_id=_id, source_id=_id, source_digest=is_sha256, source_created=_id)


def _output_check(checks: dict, required: tuple):
    required = frozenset(required)
    known = checks.get

    def check(item) -> bool:
        if not isinstance(item, dict) or not item.keys() >= required:
            return False
        kind = item["kind"]
        if not isinstance(kind, str) or not (kind == "source" or (kind == "generated" and "transform" in item)):
            return False
        for key, value in item.items():
            valid = known(key)
            if valid is not None and not valid(value):
                return False
        return True
    return check


_OUTPUT_REQUIRED = ("path", "kind", "source_path", "sha256", "size")
_OUTPUT_REQUIRED_V2 = _OUTPUT_REQUIRED + ("created_at", "updated_at")
_OUTPUT_REQUIRED_V3 = _OUTPUT_REQUIRED_V2 + ("destination_id", "pipeline_id", "source_created", "source_digest", "source_id")


def _owner(item) -> bool:
    """A shared-root owner record; its manifest is checked by manifest.parse_manifest."""
    if not isinstance(item, dict):
        return False
    reconciliation, source, links = item.get("reconciliation"), item.get("source"), item.get("links", {})
    return (_id(item.get("pipeline_id")) and _id(item.get("destination_id"))
            and isinstance(reconciliation, dict) and _mode(reconciliation.get("mode"))
            and isinstance(source, dict) and isinstance(source.get("manifest"), dict)
            and isinstance(links, dict) and ("primary_url" not in links or is_http_url(links["primary_url"])))


def _mode(value) -> bool:
    return isinstance(value, str) and value in RECONCILIATION_MODES


# Per schema, its large arrays in the order the schema lists them (each is after every other
# property: schemas.py relies on it to name the error jsonschema would name).
ITEM_CHECKS = {
    "manifest": (("files", _manifest_file),),
    "state-v1": (("outputs", _output_check(_OUTPUT, _OUTPUT_REQUIRED)),),
    "state-v2": (("outputs", _output_check(_OUTPUT_V2, _OUTPUT_REQUIRED_V2)),),
    "state-v3": (("owners", _owner), ("outputs", _output_check(_OUTPUT_V3, _OUTPUT_REQUIRED_V3))),
}


def split_items(name: str, data: object) -> tuple[object, list[tuple[str, Iterator[tuple[int, object]]]]]:
    """What jsonschema must look at in `data`: the document with its large arrays emptied, and per
    array its key and the (index, item) of each item that does not pass its check, in order and
    lazily (none when every item passes, and then no item can fail)."""
    if not isinstance(data, dict):
        return data, []
    arrays = [(key, check) for key, check in ITEM_CHECKS.get(name, ()) if isinstance(data.get(key), list)]
    rest = dict(data, **{key: [] for key, _check in arrays}) if arrays else data
    return rest, [(key, _unchecked(data[key], check)) for key, check in arrays]


def _unchecked(items: list, check) -> Iterator[tuple[int, object]]:
    if all(map(check, items)):
        return iter(())
    return ((index, item) for index, item in enumerate(items) if not check(item))
