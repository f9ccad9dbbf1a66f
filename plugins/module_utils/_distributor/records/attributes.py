# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The storage settings an output is written with: file modes and ownership (local, SFTP) and S3
object settings (ACL, headers, storage class, encryption, metadata, content type).

Pure functions of the destination's `storage` settings and an output path. The backends apply
them when they write; the plan records the ones the operator configured with each output
(`attributes`), so a change of settings alone is a change of that output (docs/destination-state.md).
"""

from __future__ import annotations

import mimetypes
import os
import re
from functools import partial
from typing import Callable

from ..errors import DistributorError
from ..globs import glob_match
from .schemas import show

FILE_SETTINGS = ("file_mode", "owner", "group")
S3_SETTINGS = ("acl", "cache_control", "storage_class", "server_side_encryption", "sse_kms_key_id", "metadata")
_OCTAL = re.compile(r"0?[0-7]{3,4}")
# Text types a browser must not guess the charset of: distributor writes UTF-8.
_UTF8_TYPES = ("text/", "application/javascript", "image/svg+xml")
# S3 sends these settings as HTTP headers, which carry printable US-ASCII: AWS refuses anything
# else in user metadata, and a CR or LF would end the header where the value should go on.
_HEADER_VALUE = re.compile(r"[\x20-\x7e]*")
_KMS_KEY = re.compile(r"[\x21-\x7e]+")
# A metadata key is the end of a header name, x-amz-meta-<key>: an HTTP token (RFC 9110).
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Bytes of user metadata, keys and values together, S3 accepts on one object.
METADATA_BYTES = 2048
_S3_ARGS = {
    "acl": "ACL",
    "cache_control": "CacheControl",
    "storage_class": "StorageClass",
    "server_side_encryption": "ServerSideEncryption",
    "sse_kms_key_id": "SSEKMSKeyId",
    "metadata": "Metadata",
}


def parse_mode(text: str | None, field: str) -> int | None:
    """`"0640"`, `"640"` or `"2775"` as an int; None when unset. Strings only: YAML reads an
    unquoted 0640 as the decimal 416, which would be a silent surprise."""
    if text is None:
        return None
    if not isinstance(text, str) or not _OCTAL.fullmatch(text):
        raise DistributorError("invalid_config", "storage.%s %r must be an octal string such as \"0640\"" % (field, text))
    return int(text, 8)


def check_storage(storage: dict) -> None:
    """What the JSON Schema cannot say about the settings below (called by parse_destination)."""
    parse_mode(storage.get("file_mode"), "file_mode")
    parse_mode(storage.get("directory_mode"), "directory_mode")
    if storage.get("sse_kms_key_id") and storage.get("server_side_encryption") != "aws:kms":
        raise DistributorError("invalid_config", "storage.sse_kms_key_id needs storage.server_side_encryption: aws:kms")
    if storage.get("type") == "sftp":
        for field in ("owner", "group"):
            value = storage.get(field)
            if value is not None and not str(value).isdigit():
                raise DistributorError(
                    "invalid_config", "storage.%s %r: SFTP sets ownership by numeric id only (for example \"1001\")" % (field, value))
    bundle = storage.get("ca_bundle")
    if bundle and not os.path.isabs(os.path.expanduser(bundle)):
        raise DistributorError("invalid_config", "storage.ca_bundle %r must be an absolute path" % bundle)
    if storage.get("type") == "s3":
        check_s3_headers(storage)


def check_s3_headers(storage: dict) -> None:
    """The S3 settings sent as headers, checked as S3 would check them, so check mode refuses what
    every upload would fail on (storage_class is a schema enum). Values are shown JSON-quoted:
    the character at fault is visible."""
    for field, value in _header_values(storage):
        if not _HEADER_VALUE.fullmatch(value):
            raise _bad_header(field, value, "S3 sends it as an HTTP header, which holds printable ASCII only: no "
                                            "control characters (CR, LF, tab, ESC), no letters outside ASCII")
    kms_key = storage.get("sse_kms_key_id")
    if kms_key is not None and not _KMS_KEY.fullmatch(kms_key):
        raise _bad_header("sse_kms_key_id", kms_key, "a KMS key id, ARN or alias is printable ASCII without spaces")
    metadata = storage.get("metadata") or {}
    for key in metadata:
        if not _HEADER_NAME.fullmatch(key):
            raise _bad_header("metadata key", key, "it ends the header name x-amz-meta-<key>, which holds letters, "
                                                   "digits and !#$%&'*+-.^_`|~ only")
    size = sum(len(key) + len(str(value)) for key, value in metadata.items())
    if size > METADATA_BYTES:
        raise DistributorError("invalid_config", "storage.metadata is %d bytes (keys and values), over the %d bytes "
                                                 "S3 accepts on an object" % (size, METADATA_BYTES))


def _header_values(storage: dict):
    """(setting, text) of every header value the settings hold."""
    setting = storage.get("cache_control")
    if isinstance(setting, str):
        yield "cache_control", setting
    for index, rule in enumerate(setting if isinstance(setting, list) else ()):
        yield "cache_control[%d].value" % index, rule["value"]
    for key, value in (storage.get("metadata") or {}).items():
        yield "metadata[%s]" % show(key), str(value)
    for key, value in (storage.get("content_types") or {}).items():
        yield "content_types[%s]" % show(key), value


def _bad_header(field: str, value: str, why: str) -> DistributorError:
    return DistributorError("invalid_config", "storage.%s %s: %s" % (field, show(value), why))


def cache_control(storage: dict, path: str) -> str | None:
    """A string applies to every object; a list of {match, value} rules: the first match wins."""
    setting = storage.get("cache_control")
    if setting is None or isinstance(setting, str):
        return setting
    return next((rule["value"] for rule in setting if glob_match(rule["match"], path)), None)


def content_type(path: str, overrides: dict | None = None) -> str:
    """The Content-Type of an output: the operator's `content_types` (extension → type) first,
    then Python's mimetypes; text types say UTF-8, the encoding distributor writes."""
    name = path.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    for key, value in (overrides or {}).items():
        if key.lstrip(".").lower() == ext:
            return value
    guessed = mimetypes.guess_type("x." + ext, strict=False)[0] if ext else None
    if guessed is None:
        return "application/octet-stream"
    return guessed + "; charset=utf-8" if guessed.startswith(_UTF8_TYPES) else guessed


def _configured_content_type(storage: dict, path: str) -> str | None:
    overrides = storage.get("content_types") or {}
    return content_type(path, overrides) if overrides and content_type(path, overrides) != content_type(path) else None


def output_attributes(storage: dict, path: str) -> tuple[tuple[str, str], ...]:
    """The settings the operator configured for the output at `path`, as sorted (name, text)
    pairs: () with the defaults, so records written before these settings existed still match."""
    return attributes_for(storage)(path)


def attributes_for(storage: dict) -> Callable[[str], tuple[tuple[str, str], ...]]:
    """output_attributes of one storage as a function of the path, for the many outputs of a
    plan or a record: file settings (local, SFTP) do not depend on the path, so they are worked
    out once instead of once per output; S3's cache_control rules and content types do."""
    if storage.get("type") in ("local", "sftp"):
        same = _file_attributes(storage)
        return lambda path: same
    if storage.get("type") == "s3":
        return partial(_s3_attributes, storage)
    return lambda path: ()


def _file_attributes(storage: dict) -> tuple[tuple[str, str], ...]:
    found = {name: str(storage[name]) for name in FILE_SETTINGS if storage.get(name) is not None}
    if "file_mode" in found:
        found["file_mode"] = "%04o" % parse_mode(found["file_mode"], "file_mode")
    return tuple(sorted(found.items()))


def _s3_attributes(storage: dict, path: str) -> tuple[tuple[str, str], ...]:
    found = {}
    for name in S3_SETTINGS:
        value = cache_control(storage, path) if name == "cache_control" else storage.get(name)
        if name == "metadata":
            found.update(("metadata." + k, str(v)) for k, v in (value or {}).items())
        elif value:
            found[name] = str(value)
    kind = _configured_content_type(storage, path)
    if kind:
        found["content_type"] = kind
    return tuple(sorted(found.items()))


def s3_object_args(storage: dict, path: str) -> dict:
    """put_object / create_multipart_upload arguments for the object at `path`."""
    args = {"ContentType": content_type(path, storage.get("content_types"))}
    for name, arg in _S3_ARGS.items():
        value = cache_control(storage, path) if name == "cache_control" else storage.get(name)
        if value:
            args[arg] = {str(k): str(v) for k, v in value.items()} if name == "metadata" else value
    return args


def s3_record_args(storage: dict) -> dict:
    """put_object arguments for distributor's own records (state, journal): the bucket's default
    ACL, never the outputs' `acl` (a public-read state would publish every path, owner and source
    of the root), no caching or metadata meant for readers, and no storage class (a record in
    GLACIER could not be read back by the next run); encrypted as the outputs are."""
    args = {"ContentType": "application/json"}
    for name in ("server_side_encryption", "sse_kms_key_id"):
        if storage.get(name):
            args[_S3_ARGS[name]] = storage[name]
    return args


def resettable(recorded: tuple, configured: tuple) -> bool:
    """Whether an output written with the `recorded` settings can be given the `configured` ones
    without writing its bytes again. A file setting no longer configured cannot: a file keeps the
    owner it has, and only a new file gets the defaults. S3's can: a copy onto itself replaces
    them all."""
    dropped = {name for name, _value in recorded} - {name for name, _value in configured}
    return not dropped.intersection(FILE_SETTINGS)


def describe(attributes: tuple[tuple[str, str], ...]) -> str:
    """`file_mode=0640 owner=www` for the diff listing."""
    return " ".join("%s=%s" % pair for pair in attributes)


def _numeric_id(value, lookup, field: str, kind: str | None = None) -> int:
    if value is None:
        return -1
    if str(value).isdigit():
        return int(value)
    try:
        return lookup(str(value))
    except KeyError:
        raise DistributorError("invalid_config", "storage.%s %r: no such %s on this host" % (field, value, kind or field)) from None


def ownership(storage: dict) -> tuple[int, int]:
    """(uid, gid) for chown, -1 for what stays as created; names are looked up on this host."""
    import grp
    import pwd

    return (
        _numeric_id(storage.get("owner"), lambda name: pwd.getpwnam(name).pw_uid, "owner"),
        _numeric_id(storage.get("group"), lambda name: grp.getgrnam(name).gr_gid, "group"),
    )


def trusted_owners(storage: dict) -> tuple[str, ...]:
    """storage.trusted_owners as written (names or numeric ids, as text): the other accounts
    that publish to this destination, whose records and files distributor may act on."""
    return tuple(str(value) for value in storage.get("trusted_owners") or ())


def trusted_uids(storage: dict) -> frozenset:
    """storage.trusted_owners as uids, names looked up on this host (local storage)."""
    import pwd

    return frozenset(_numeric_id(value, lambda name: pwd.getpwnam(name).pw_uid, "trusted_owners", "user")
                     for value in trusted_owners(storage))
