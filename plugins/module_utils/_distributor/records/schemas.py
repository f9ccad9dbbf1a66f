# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place that runs jsonschema, and the messages a reader gets when data breaks a schema.

The schemas themselves are in schema_documents.py. Everything read from a producer, a
destination or a playbook passes through here: nesting is bounded before any recursive reader
sees the data, and a failure names the field the way a reader finds it (files[2].size).
"""

from __future__ import annotations

import heapq
import json
import traceback
from functools import lru_cache
from importlib.util import find_spec
from itertools import chain, compress, islice, repeat

from ..errors import DistributorError, MissingLibrary
from .fastcheck import split_items, sure
from ..limits import BYTES_PER_CONTAINER
from .schema_documents import SCHEMAS

# jsonschema is imported when a document first needs it: one the plain checks cannot vouch for
# (fastcheck.sure, the item and column checks), which jsonschema then judges and words. Most runs
# never need it, and importing it is a third of a module's imports (0.1 s of CPU). Whether it is
# installed is known at once (a lookup, no import), so a run without it fails as it always did.
HAS_JSONSCHEMA = find_spec("jsonschema") is not None
JSONSCHEMA_IMPORT_ERROR = None if HAS_JSONSCHEMA else "ModuleNotFoundError: No module named 'jsonschema'"


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
    """A value quoted as JSON (control characters visible), cut short for long garbage. Only what
    is shown is encoded: a planted value may be an array of millions of items."""
    text = ""
    for chunk in _SHOWN.iterencode(value[:limit] if isinstance(value, str) else value):
        text += chunk
        if len(text) > limit:
            break
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_SHOWN = json.JSONEncoder()
# Unknown keys named in a message, and characters of a message of jsonschema's own (which quotes
# the value at fault whole).
_NAMED_KEYS = 5
_MESSAGE_LIMIT = 240


def _json_path(parts) -> str:
    text = ""
    for part in parts:
        text += "[%d]" % part if isinstance(part, int) else (".%s" % part if text else str(part))
    return text


def _json_type(value: object) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)


def _describe(error, name: str) -> str:
    """jsonschema's error as a sentence naming the field the way a reader finds it: files[2].size."""
    location = _json_path(error.absolute_path) or "the " + name.split("-v")[0].replace("-", " ")
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
        allowed = error.schema.get("properties", {})
        unknown = [key for key in value if key not in allowed]
        more = " and %d more" % (len(unknown) - _NAMED_KEYS) if len(unknown) > _NAMED_KEYS else ""
        return "%s has unknown key %s%s (allowed: %s)" % (
            location, ", ".join(show(k) for k in heapq.nsmallest(_NAMED_KEYS, unknown)), more, ", ".join(allowed))
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
    return "%s: %s" % (location, _cut(error.message, _MESSAGE_LIMIT))


def _jsonschema(purpose: str):
    """The jsonschema module, imported at its first need (see HAS_JSONSCHEMA), or MissingLibrary."""
    if not HAS_JSONSCHEMA:
        raise MissingLibrary("jsonschema", purpose, JSONSCHEMA_IMPORT_ERROR)
    try:
        import jsonschema  # third-party, deferred: see HAS_JSONSCHEMA
    except ImportError:
        raise MissingLibrary("jsonschema", purpose, traceback.format_exc()) from None
    return jsonschema


@lru_cache(maxsize=None)
def _validator(name: str):
    """A Draft 2020-12 validator whose `integer` refuses booleans and floats like 1.0: a size or
    port written as either is a bug worth reporting."""
    jsonschema = _jsonschema("validating %s" % name)
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    return jsonschema.validators.extend(base, type_checker=checker)(SCHEMAS[name])


MAX_NESTING = 32
_SCALARS = frozenset((str, int, float, bool, type(None)))
_CONTAINERS = (dict, list, tuple)


def only_scalars(values) -> bool:
    """Whether decoded JSON `values` hold no object or array, told by the set of their types:
    most records of a large state are such, and need no look member by member."""
    return _SCALARS.issuperset(map(type, values))


def check_nesting(data: object, where: str, reason: str) -> None:
    """Refuse data nested deeper than any record or setting distributor reads (the deepest, a
    manifest inside a state record, is 7 levels), before a recursive reader sees it: json.dumps
    and jsonschema recurse and would fail with RecursionError. Iterative, so it cannot, and level
    by level over containers only: a 100,000-output state holds millions of scalars, and a
    container of plain scalars (most records) is passed over by the set of its value types, an
    empty one (a planted record may hold millions) without a look. The members of a level's
    objects are looked at together, as are those of its arrays: the 100,000 file entries of a
    shared root's manifests are one look, not one each."""
    level = [data] if isinstance(data, _CONTAINERS) else []
    depth = 1
    while level:
        if depth > MAX_NESTING:
            raise DistributorError(reason, "%s nests arrays or objects deeper than %d levels; no distributor "
                                           "record or setting does" % (where, MAX_NESTING))
        objects = list(map(dict.values, filter(None, compress(level, map(isinstance, level, repeat(dict))))))
        members = list(chain(chain.from_iterable(objects), chain.from_iterable(filter(None, compress(
            level, map(isinstance, level, repeat((list, tuple))))))))
        level = [] if only_scalars(members) else list(compress(members, map(isinstance, members, repeat(_CONTAINERS))))
        depth += 1


def check_density(raw: bytes, where: str, reason: str) -> None:
    """Refuse JSON text holding more arrays and objects than limits.BYTES_PER_CONTAINER allows,
    before it is decoded. Brackets are counted in the raw text, which is a pass at memory speed;
    only when they are too many are those inside strings (a path may hold any number) left out,
    by dropping escaped backslashes and quotes and then every other piece between quotes."""
    allowed = len(raw) // BYTES_PER_CONTAINER + 1000  # and a thousand besides: a small record may be dense
    if raw.count(b"{") + raw.count(b"[") <= allowed:
        return
    unquoted = b"".join(raw.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])
    found = unquoted.count(b"{") + unquoted.count(b"[")
    if found > allowed:
        raise DistributorError(reason, "%s holds %d arrays and objects in %d bytes, more than one per %d bytes; "
                                       "no distributor record or manifest is that dense" % (
                                           where, found, len(raw), BYTES_PER_CONTAINER))


def load_json(raw: bytes, where: str, reason: str) -> object:
    """Decoded UTF-8 JSON read back from storage, its nesting bounded (check_nesting), or
    DistributorError(reason) naming `where`."""
    data = decode_json(raw, where, reason)
    check_nesting(data, where, reason)
    return data


def decode_json(raw: bytes, where: str, reason: str) -> object:
    """load_json without the bound on nesting, for a caller that first tries a check which
    recognises the whole shape of the data (columns.py) and bounds the nesting of the rest:
    Python's parser itself raises RecursionError on deep enough input."""
    check_density(raw, where, reason)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise DistributorError(reason, "%s is not valid JSON: %s" % (where, exc)) from None
    except RecursionError:
        raise DistributorError(reason, "%s nests arrays or objects deeper than %d levels; no distributor "
                                       "record or setting does" % (where, MAX_NESTING)) from None


def validate(name: str, data: object, where: str, reason: str, *, nesting_checked: bool = False) -> None:
    """Raise DistributorError(reason) naming `where` and the field when `data` breaks schema `name`.
    `nesting_checked`: the caller already bounded the nesting of `data` (load_json did), which
    for a 100,000-output state is a walk of every record not worth making twice."""
    if not HAS_JSONSCHEMA:  # required even for what the plain checks vouch for: a run without it fails as it did
        raise MissingLibrary("jsonschema", "validating %s" % name, JSONSCHEMA_IMPORT_ERROR)
    if not nesting_checked:
        check_nesting(data, where, reason)
    rest, arrays = split_items(name, data)
    if sure(SCHEMAS[name], rest) and all(suspects == () for _key, suspects in arrays):
        return
    error = first_error(_errors(name, rest, arrays))
    if error is not None:
        raise DistributorError(reason, "%s: %s" % (where, _describe(error, name)))


# Errors weighed to name one: a planted record of millions of broken items holds millions of
# errors, and weighing them all (jsonschema's best_match does) took minutes for 64 MiB.
WEIGHED_ERRORS = 64


def first_error(errors):
    """The error to name among the first WEIGHED_ERRORS of `errors`: jsonschema's own preference
    (the error highest up in the document, over a oneOf that only sums up its alternatives, and
    inside a oneOf the deepest), the first of equals kept: the first broken item of an array,
    where jsonschema would name its last."""
    return _jsonschema("weighing validation errors").exceptions.best_match(islice(errors, WEIGHED_ERRORS), key=_relevance)


def _relevance(error) -> tuple:
    return -len(error.path), error.validator not in _jsonschema("weighing validation errors").exceptions.WEAK_MATCHES


def _errors(name: str, rest: object, arrays: list):
    """jsonschema's errors of a document split by fastcheck.split_items (`rest`, `arrays`),
    lazily, in the order it finds them; of each large array only the errors of its first item
    jsonschema refuses, found without looking at the items that pass, and after the rest of the
    document's, as jsonschema finds them: those arrays are the last properties of their schemas."""
    yield from _validator(name).iter_errors(rest)
    for key, suspects in arrays:
        for index, item in suspects:
            errors = list(islice(_item_validator(name, key).iter_errors(item), WEIGHED_ERRORS))
            if errors:
                for error in errors:
                    error.path.extendleft((index, key))
                yield from errors
                break


@lru_cache(maxsize=None)
def _item_validator(name: str, key: str):
    return _validator(name).evolve(schema=SCHEMAS[name]["properties"][key]["items"])
