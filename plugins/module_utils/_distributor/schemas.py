# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place that runs jsonschema, and the messages a reader gets when data breaks a schema.

The schemas themselves are in schema_documents.py. Everything read from a producer, a
destination or a playbook passes through here: nesting is bounded before any recursive reader
sees the data, and a failure names the field the way a reader finds it (files[2].size).
"""

from __future__ import annotations

import json
import traceback
from functools import lru_cache

from .errors import DistributorError, MissingLibrary
from .fastcheck import without_checked_items
from .schema_documents import SCHEMAS

try:
    import jsonschema
except ImportError:
    HAS_JSONSCHEMA = False
    JSONSCHEMA_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_JSONSCHEMA = True
    JSONSCHEMA_IMPORT_ERROR = None


_JSON_TYPES = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (list, "an array"),
    (dict, "an object"),
    (type(None), "null"),
)
_ARTICLES = {"integer": "an integer", "string": "a string", "array": "an array", "object": "an object",
             "boolean": "a boolean", "number": "a number"}
SECRET_FIELDS = ("password", "secret_key", "session_token")


def show(value: object, limit: int = 80) -> str:
    """A value quoted as JSON (control characters visible), cut short for long garbage."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json_path(parts) -> str:
    text = ""
    for part in parts:
        text += "[%d]" % part if isinstance(part, int) else (".%s" % part if text else str(part))
    return text


def _json_type(value: object) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)


def _describe(error, name: str) -> str:
    """jsonschema's error as a sentence naming the field the way a reader finds it: files[2].size."""
    location = _json_path(error.absolute_path) or "the " + name.split("-")[0]
    value, kind, expected = error.instance, error.validator, error.validator_value
    secret = bool(error.absolute_path) and error.absolute_path[-1] in SECRET_FIELDS
    if kind == "type":
        if isinstance(expected, list):
            expected = " or ".join(_ARTICLES.get(e, e) for e in expected)
        return "%s must be %s, not %s" % (location, _ARTICLES.get(expected, expected), _json_type(value))
    if kind == "required":
        missing = [key for key in expected if key not in value]
        return '%s is missing "%s"' % (location, missing[0])
    if kind == "additionalProperties":
        unknown = sorted(set(value) - set(error.schema.get("properties", {})))
        return "%s has unknown key %s (allowed: %s)" % (
            location, ", ".join(show(k) for k in unknown), ", ".join(error.schema.get("properties", {})))
    if secret:
        return "%s is not valid (value hidden)" % location
    if kind in ("const", "enum"):
        allowed = show(expected) if kind == "const" else " or ".join(show(e) for e in expected)
        return "%s must be %s, not %s" % (location, allowed, show(value))
    if kind == "minimum":
        return "%s must be %s or more, not %s" % (location, expected, show(value))
    if kind == "maximum":
        return "%s must be %s or less, not %s" % (location, expected, show(value))
    if kind == "minLength":
        return "%s must not be empty" % location
    if "description" in error.schema:
        return "%s %s is not %s" % (location, show(value), error.schema["description"])
    return "%s: %s" % (location, error.message)


@lru_cache(maxsize=None)
def _validator(name: str):
    """A Draft 2020-12 validator whose `integer` refuses booleans and floats like 1.0: a size or
    port written as either is a bug worth reporting."""
    if not HAS_JSONSCHEMA:
        raise MissingLibrary("jsonschema", "validating %s" % name, JSONSCHEMA_IMPORT_ERROR)
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    return jsonschema.validators.extend(base, type_checker=checker)(SCHEMAS[name])


MAX_NESTING = 32
_SCALARS = frozenset((str, int, float, bool, type(None)))


def only_scalars(values) -> bool:
    """Whether decoded JSON `values` hold no object or array, told by the set of their types:
    most records of a large state are such, and need no look member by member."""
    return _SCALARS.issuperset(map(type, values))


def check_nesting(data: object, where: str, reason: str) -> None:
    """Refuse data nested deeper than any record or setting distributor reads (the deepest, a
    manifest inside a state record, is 7 levels), before a recursive reader sees it: json.dumps
    and jsonschema recurse and would fail with RecursionError. Iterative, so it cannot, and level
    by level over containers only: a 100,000-output state holds millions of scalars, and a
    container of plain scalars (most records) is passed over by the set of its value types."""
    level = [data] if isinstance(data, (dict, list, tuple)) else []
    depth = 1
    while level:
        if depth > MAX_NESTING:
            raise DistributorError(reason, "%s nests arrays or objects deeper than %d levels; no distributor "
                                           "record or setting does" % (where, MAX_NESTING))
        below = []
        for value in level:
            members = value.values() if isinstance(value, dict) else value
            if not only_scalars(members):
                below += [v for v in members if isinstance(v, (dict, list, tuple))]
        level = below
        depth += 1


def load_json(raw: bytes, where: str, reason: str) -> object:
    """Decoded UTF-8 JSON read back from storage, or DistributorError(reason) naming `where`:
    Python's parser itself raises RecursionError on deep enough input."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise DistributorError(reason, "%s is not valid JSON: %s" % (where, exc)) from None
    except RecursionError:
        raise DistributorError(reason, "%s nests arrays or objects deeper than %d levels; no distributor "
                                       "record or setting does" % (where, MAX_NESTING)) from None
    check_nesting(data, where, reason)
    return data


def validate(name: str, data: object, where: str, reason: str, *, nesting_checked: bool = False) -> None:
    """Raise DistributorError(reason) naming `where` and the field when `data` breaks schema `name`.
    `nesting_checked`: the caller already bounded the nesting of `data` (load_json did), which
    for a 100,000-output state is a walk of every record not worth making twice."""
    if not nesting_checked:
        check_nesting(data, where, reason)
    validator = _validator(name)
    error = jsonschema.exceptions.best_match(validator.iter_errors(without_checked_items(name, data)))
    if error is not None:
        raise DistributorError(reason, "%s: %s" % (where, _describe(error, name)))
