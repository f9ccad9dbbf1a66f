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
from numbers import Number
from typing import Iterator

from .formats import is_http_url, is_id as _id, is_sha256
from ..vocabulary import RECONCILIATION_MODES


def _text(value) -> bool:
    return isinstance(value, str)


def _size(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


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
    lazily (an empty tuple when every item passes, and then no item can fail)."""
    if not isinstance(data, dict):
        return data, []
    arrays = [(key, check) for key, check in ITEM_CHECKS.get(name, ()) if isinstance(data.get(key), list)]
    rest = dict(data, **{key: [] for key, _check in arrays}) if arrays else data
    return rest, [(key, _unchecked(data[key], check)) for key, check in arrays]


def _unchecked(items: list, check) -> Iterator[tuple[int, object]]:
    if all(map(check, items)):
        return ()
    return ((index, item) for index, item in enumerate(items) if not check(item))


def sure(schema: object, value: object) -> bool:
    """Whether jsonschema certainly accepts `value` under `schema` (Draft 2020-12, with the
    `integer` schemas.py gives it: no booleans, no 1.0), told in plain Python for the keywords
    distributor's schemas use; False (not sure) for any other keyword or for an `if` it cannot
    judge exactly, which leaves the verdict and its wording to jsonschema. For small documents
    (settings, a record less its large arrays): it looks at every value."""
    if schema is True:
        return True
    if not isinstance(schema, dict):
        return False
    for keyword, expected in schema.items():
        check = _KEYWORDS.get(keyword)
        if check is None:
            if keyword not in _PASSED_OVER:
                return False
        elif not check(expected, value, schema):
            return False
    return True


_JSON_TYPES = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "number": lambda value: isinstance(value, Number) and not isinstance(value, bool),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
}
_NUMBER = _JSON_TYPES["number"]


def _of_type(value, expected) -> bool:
    return any(_JSON_TYPES[name](value) for name in ([expected] if isinstance(expected, str) else expected))


def _equal(expected, value) -> bool:
    """Certainly equal as jsonschema compares: values of one scalar type (it also finds 1 and
    1.0 equal, which is left to it)."""
    return type(expected) is type(value) and isinstance(value, (str, int, float, type(None))) and expected == value


def _holds(schema: object, value) -> bool | None:
    """The exact verdict of an `if` made of `properties` whose schemas are string `const`s (the
    storage types' rows of the destination schema), None for any other `if`."""
    if not isinstance(schema, dict) or schema.keys() != {"properties"}:
        return None
    if not all(isinstance(sub, dict) and sub.keys() == {"const"} and isinstance(sub["const"], str)
               for sub in schema["properties"].values()):
        return None
    return not isinstance(value, dict) or all(value[key] == sub["const"] for key, sub in schema["properties"].items()
                                              if key in value)


def _if(expected, value, schema: dict) -> bool:
    holds = _holds(expected, value)
    return holds is not None and sure(schema.get("then" if holds else "else", True), value)


def _one_of(expected, value, _schema) -> bool:
    """Exactly one alternative: one certainly accepts, every other has a `type` the value is not of."""
    accepted = [sub for sub in expected if sure(sub, value)]
    return len(accepted) == 1 and all(isinstance(sub, dict) and "type" in sub and not _of_type(value, sub["type"])
                                      for sub in expected if sub is not accepted[0])


def _additional(expected, value, schema: dict) -> bool:
    if not isinstance(value, dict):
        return True
    others = [key for key in value if key not in schema.get("properties", {})]
    return not others if expected is False else all(sure(expected, value[key]) for key in others)


# Each keyword's check: (its value in the schema, the value checked, the schema holding it).
_KEYWORDS = {
    "type": lambda expected, value, _schema: _of_type(value, expected),
    "enum": lambda expected, value, _schema: any(_equal(e, value) for e in expected),
    "const": lambda expected, value, _schema: _equal(expected, value),
    "properties": lambda expected, value, _schema: not isinstance(value, dict) or all(
        sure(sub, value[key]) for key, sub in expected.items() if key in value),
    "required": lambda expected, value, _schema: not isinstance(value, dict) or all(key in value for key in expected),
    "additionalProperties": _additional,
    "items": lambda expected, value, _schema: not isinstance(value, list) or all(sure(expected, item) for item in value),
    "minItems": lambda expected, value, _schema: not isinstance(value, list) or len(value) >= expected,
    "minLength": lambda expected, value, _schema: not isinstance(value, str) or len(value) >= expected,
    "maxLength": lambda expected, value, _schema: not isinstance(value, str) or len(value) <= expected,
    "pattern": lambda expected, value, _schema: not isinstance(value, str) or re.search(expected, value) is not None,
    "minimum": lambda expected, value, _schema: not _NUMBER(value) or value >= expected,
    "maximum": lambda expected, value, _schema: not _NUMBER(value) or value <= expected,
    "exclusiveMinimum": lambda expected, value, _schema: not _NUMBER(value) or value > expected,
    "allOf": lambda expected, value, _schema: all(sure(sub, value) for sub in expected),
    "oneOf": _one_of,
    "if": _if,
}
# Annotations, and the branches of an `if`, judged with it.
_PASSED_OVER = frozenset(("$schema", "$id", "title", "description", "then", "else"))
