# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The JSON Schemas of everything distributor reads: manifest, state records, journal, release
index, pipeline, destination.

They live here as Python data because Ansible ships only Python to the host that runs a module;
`make schemas` exports them to `schemas/*.schema.json` for people and other tools, and a test keeps
the two in step. schemas.py validates with them.
"""

from __future__ import annotations

from .. import vocabulary
from . import formats

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SHA256 = {
    "type": "string",
    "pattern": "^%s$" % formats.SHA256,
    # JSON Schema's `$` also matches before a trailing newline; the length closes that gap.
    "maxLength": formats.SHA256_LENGTH,
    "description": "sha256: followed by 64 lowercase hex digits",
}
TIMESTAMP = {"type": "string", "minLength": 1}
ID = {"type": "string", "minLength": 1}
HTTP_URL = {"type": "string", "pattern": "^%s$" % formats.HTTP_URL}
# The URL output paths are joined to (links.base_url, placeholders and all): formats.BASE_URL.
BASE_URL = {"type": "string", "pattern": "^%s$" % formats.BASE_URL,
            "description": "an absolute http:// or https:// URL without spaces, a query ('?') or a fragment ('#')"}

MANIFEST = {
    "$schema": DRAFT,
    "$id": "manifest.schema.json",
    "title": "distributor source bundle manifest (manifest.json)",
    "type": "object",
    "required": ["schema_version", "id", "digest", "created", "files"],
    "properties": {
        "schema_version": {"type": "integer", "const": 1},
        "id": ID,
        "digest": SHA256,
        "created": TIMESTAMP,
        "files": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["path", "sha256", "size"],
                "properties": {
                    "path": {"type": "string", "minLength": 1},
                    "sha256": SHA256,
                    "size": {"type": "integer", "minimum": 0},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}

_OUTPUT_COMMON = {
    "path": {"type": "string"},
    "kind": {"enum": list(vocabulary.OUTPUT_KINDS)},
    "source_path": {"type": "string"},
    "transform": {"type": "string", "minLength": 1},
    "url": HTTP_URL,
    "sha256": SHA256,
    "size": {"type": "integer", "minimum": 0},
    "attributes": {"type": "object", "additionalProperties": {"type": "string"}},
}
_GENERATED_NEEDS_TRANSFORM = {
    "if": {"properties": {"kind": {"const": "generated"}}},
    "then": {"required": ["transform"]},
}


def _output(extra_props: dict, extra_required: list) -> dict:
    return {
        "type": "object",
        "required": ["path", "kind", "source_path", "sha256", "size"] + extra_required,
        "properties": dict(_OUTPUT_COMMON, **extra_props),
        **_GENERATED_NEEDS_TRANSFORM,
    }


_LINKS = {"type": "object", "properties": {"primary_url": HTTP_URL}}
_RECONCILIATION = {
    "type": "object",
    "required": ["mode"],
    "properties": {"mode": {"enum": list(vocabulary.RECONCILIATION_MODES)}},
}
_SOURCE = {"type": "object", "required": ["manifest"], "properties": {"manifest": {"type": "object"}}}
_TIMESTAMPS = {"created_at": TIMESTAMP, "updated_at": TIMESTAMP}
# Optional on generated outputs of schemas 2 and 3 (destination-state.md, decision 43).
_RENDER_KEY = {"render_key": SHA256}


def _state(version: int, title: str, required: list, properties: dict) -> dict:
    """A state record schema: what every schema version shares around its own fields."""
    return {
        "$schema": DRAFT,
        "$id": "state-v%d.schema.json" % version,
        "title": "distributor destination state, schema %d (%s)" % (version, title),
        "type": "object",
        "required": ["schema_version"] + required,
        "properties": {"schema_version": {"const": version}, "distributor_version": {"type": "string"}, **properties},
    }


STATE_V1 = _state(1, "read only", ["pipeline_id", "destination_id", "published_at", "source", "outputs"], {
    "pipeline_id": ID,
    "destination_id": ID,
    "published_at": TIMESTAMP,
    "source": _SOURCE,
    "links": _LINKS,
    "outputs": {"type": "array", "items": _output({}, [])},
})

STATE_V2 = _state(2, "single owner", [
    "pipeline_id", "destination_id", "published_at", "created_at", "updated_at", "state", "reconciliation", "source", "outputs",
], {
    "pipeline_id": ID,
    "destination_id": ID,
    "published_at": TIMESTAMP,
    **_TIMESTAMPS,
    "state": {"type": "object", "required": ["mode"], "properties": {"mode": {"const": vocabulary.SINGLE_OWNER}}},
    "reconciliation": _RECONCILIATION,
    "source": _SOURCE,
    "links": _LINKS,
    "outputs": {"type": "array", "items": _output(dict(_TIMESTAMPS, **_RENDER_KEY), ["created_at", "updated_at"])},
})

_OWNER_FIELDS = {
    "pipeline_id": ID,
    "destination_id": ID,
    "source_id": ID,
    "source_digest": SHA256,
    "source_created": TIMESTAMP,
}

STATE_V3 = _state(3, "shared root", ["created_at", "updated_at", "state", "owners", "outputs"], {
    **_TIMESTAMPS,
    "state": {"type": "object", "required": ["mode"], "properties": {"mode": {"const": vocabulary.SHARED_ROOT}}},
    "owners": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["pipeline_id", "destination_id", "reconciliation", "source"],
            "properties": {
                "pipeline_id": ID,
                "destination_id": ID,
                "reconciliation": _RECONCILIATION,
                "source": _SOURCE,
                "links": _LINKS,
            },
        },
    },
    "outputs": {
        "type": "array",
        "items": _output(dict(_TIMESTAMPS, **_OWNER_FIELDS, **_RENDER_KEY), ["created_at", "updated_at"] + sorted(_OWNER_FIELDS)),
    },
})

# journal.parse_journal reads the journal by hand, stopping at its first fault (a planted journal
# costs no more than a valid one), and also applies the manifest's path rules, which this cannot
# state; tests/unit/test_journal.py holds the two to the same verdicts on journals of clean paths.
JOURNAL = {
    "$schema": DRAFT,
    "$id": "journal.schema.json",
    "title": "distributor journal of a publish in progress (.distributor.journal.json)",
    "type": "object",
    "required": ["token", "writes"],
    "properties": {
        # `$` also matches before a trailing newline (Python's re, which jsonschema uses): `not` closes that gap.
        "token": {"type": "string", "pattern": "^%s$" % formats.JOURNAL_TOKEN, "not": {"pattern": "\\n"}},
        "writes": {
            "type": "array",
            "items": {
                "anyOf": [
                    {
                        "type": "object",
                        "required": ["path", "sha256", "size"],
                        "properties": {"path": {"type": "string", "minLength": 1}, "sha256": SHA256,
                                       "size": {"type": "integer", "minimum": 0}},
                    },
                    {
                        "type": "string",
                        "minLength": 1,
                        "description": "a path without the digest of what was written there (the first format): "
                                       "recovery never deletes it",
                    },
                ],
            },
        },
    },
}

# A release id (formats.RELEASE_ID). `$` also matches before a trailing newline; the length closes that gap.
RELEASE_ID = {"type": "string", "pattern": "^%s$" % formats.RELEASE_ID, "maxLength": formats.RELEASE_ID_LENGTH,
              "description": "a release id (YYYYMMDDTHHMMSSZ- and 12 lowercase hex digits)"}
_OPT_TIMESTAMP = {"type": ["string", "null"], "minLength": 1}

# releases.index.parse_index also checks what this cannot state: the timestamps are RFC3339, no id
# is listed twice, at most one release is active.
RELEASE_INDEX = {
    "$schema": DRAFT,
    "$id": "release-index.schema.json",
    "title": "distributor release index (.distributor-releases/<name>/.distributor-releases.json)",
    "type": "object",
    "required": ["schema", "bundle_path", "releases"],
    "properties": {
        "schema": {"const": 1},
        "bundle_path": {"type": "string", "minLength": 1},
        "releases": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "status", "manifest_id", "manifest_digest", "owners", "created", "built",
                             "activated", "from"],
                "properties": {
                    "id": RELEASE_ID,
                    "status": {"enum": list(vocabulary.RELEASE_STATUSES)},
                    "manifest_id": ID,
                    "manifest_digest": SHA256,
                    "owners": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["pipeline", "destination"],
                            "properties": {"pipeline": ID, "destination": ID},
                        },
                    },
                    "created": TIMESTAMP,
                    "built": _OPT_TIMESTAMP,
                    "activated": _OPT_TIMESTAMP,
                    "from": dict(RELEASE_ID, type=["string", "null"]),
                },
            },
        },
    },
}

PIPELINE = {
    "$schema": DRAFT,
    "$id": "pipeline.schema.json",
    "title": "distributor pipeline: what to produce from a source bundle",
    "type": "object",
    "required": ["id"],
    "properties": {
        "id": ID,
        "outputs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["match"],
                "properties": {
                    "match": {"type": "string", "minLength": 1},
                    "transform": {"enum": list(vocabulary.TRANSFORMS)},
                },
                "additionalProperties": False,
            },
        },
        "exclude": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "markdown": {
            "type": "object",
            "properties": {
                "allow_raw_html": {"type": "boolean"},
                "stylesheet": {"type": "string", "minLength": 1,
                               "description": "URL of the operator's stylesheet, linked instead of the built-in one"},
                "template": {"type": "string", "minLength": 1,
                             "description": "absolute path of an HTML page template with {title}, {content} "
                                            "and optionally {stylesheet} and {lang} placeholders"},
                "lang": {"type": "string", "pattern": "^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$",
                         "description": "the pages' language, a BCP 47 tag such as en, de or pt-BR (<html lang>)"},
            },
            "additionalProperties": False,
        },
        "destinations": {"type": "array", "items": ID},
    },
    "additionalProperties": False,
}

_STORAGE_COMMON = {"type": {"enum": list(vocabulary.STORAGE_TYPES)}}
_STR = {"type": "string"}
_OPT_STR = {"type": ["string", "null"]}
_MODE = {"type": "string", "pattern": "^0?[0-7]{3,4}$", "description": "an octal mode string such as \"0640\""}
_ID_OR_NAME = {"type": ["string", "integer"]}
# Beyond an hour a host that does not answer is down, not slow.
CONNECT_TIMEOUT_MAXIMUM = 3600
# The settings of the backends that write files (local, sftp).
_FILE_SETTINGS = {"root": _STR, "file_mode": _MODE, "directory_mode": _MODE, "owner": _ID_OR_NAME, "group": _ID_OR_NAME,
                  "require_private_directories": {"type": "boolean"},
                  "trusted_owners": {"type": "array", "items": _ID_OR_NAME, "uniqueItems": True,
                                     "description": "other accounts that publish here: their records and files count as distributor's own"}}
# How to reach one SSH server: the SFTP server itself and each of its jump hosts.
_SSH_CONNECTION = {
    "host": {"type": "string", "minLength": 1},
    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "username": _OPT_STR,
    "password": _OPT_STR,
    "private_key_file": _OPT_STR,
    "known_hosts_file": _OPT_STR,
    "known_hosts": {"type": ["string", "null"], "description": "known_hosts lines (what ssh-keyscan prints)"},
    "host_key_policy": {"enum": list(vocabulary.HOST_KEY_POLICIES)},
    "connect_timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": CONNECT_TIMEOUT_MAXIMUM,
                        "description": "seconds each step of connecting to this server may wait"},
}
_JUMP_HOST = {"type": "object", "required": ["host"], "properties": _SSH_CONNECTION, "additionalProperties": False}
# A lock renewed every third of its expiry over a slow link needs a second at least; a lock that
# outlives a dead holder by more than a day helps nobody.
LOCK_EXPIRY_MINIMUM = 1
LOCK_EXPIRY_MAXIMUM = 86400

DESTINATION = {
    "$schema": DRAFT,
    "$id": "destination.schema.json",
    "title": "distributor destination: where and under which policy to publish",
    "type": "object",
    "required": ["id", "storage"],
    "properties": {
        "id": ID,
        "storage": {
            "type": "object",
            "required": ["type"],
            "properties": _STORAGE_COMMON,
            "allOf": [
                {
                    "if": {"properties": {"type": {"const": "local"}}},
                    "then": {
                        "required": ["root"],
                        "properties": {"type": True, **_FILE_SETTINGS},
                        "additionalProperties": False,
                    },
                },
                {
                    "if": {"properties": {"type": {"const": "sftp"}}},
                    "then": {
                        "required": ["host", "root"],
                        "properties": {
                            "type": True,
                            **_SSH_CONNECTION,
                            "jump_hosts": {"type": "array", "items": _JUMP_HOST,
                                           "description": "SSH servers crossed in this order to reach host"},
                            **_FILE_SETTINGS,
                        },
                        "additionalProperties": False,
                    },
                },
                {
                    "if": {"properties": {"type": {"const": "s3"}}},
                    "then": {
                        "required": ["bucket"],
                        "properties": {
                            "type": True,
                            "bucket": {"type": "string", "minLength": 1},
                            "prefix": _OPT_STR,
                            "region": _OPT_STR,
                            "endpoint_url": _OPT_STR,
                            "profile": _OPT_STR,
                            "access_key": _OPT_STR,
                            "secret_key": _OPT_STR,
                            "session_token": _OPT_STR,
                            "acl": {"enum": list(vocabulary.S3_ACLS)},
                            "cache_control": {"oneOf": [_STR, {"type": "array", "items": {
                                "type": "object",
                                "required": ["match", "value"],
                                "properties": {"match": {"type": "string", "minLength": 1}, "value": _STR},
                                "additionalProperties": False,
                            }}]},
                            "storage_class": {"enum": list(vocabulary.S3_STORAGE_CLASSES)},
                            "server_side_encryption": {"enum": list(vocabulary.SERVER_SIDE_ENCRYPTION)},
                            "sse_kms_key_id": _STR,
                            "metadata": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
                            "content_types": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1}},
                            "validate_certs": {"type": "boolean"},
                            "ca_bundle": _STR,
                        },
                        "additionalProperties": False,
                    },
                },
            ],
        },
        "path": {"type": "string"},
        "state": {
            "type": "object",
            "properties": {"mode": {"enum": list(vocabulary.STATE_MODES)}},
            "additionalProperties": False,
        },
        "reconciliation": {
            "type": "object",
            "properties": {"mode": {"enum": list(vocabulary.RECONCILIATION_MODES)}},
            "additionalProperties": False,
        },
        "transfer": {
            "type": "object",
            "properties": {
                "on_destination_newer": {"enum": list(vocabulary.ON_DESTINATION_NEWER)},
                "on_conflict": {"enum": list(vocabulary.ON_CONFLICT)},
                "max_deletes": {"type": "integer", "minimum": -1},
                "allow_empty": {"type": "boolean"},
            },
            "additionalProperties": False,
        },
        "takeover": {
            "type": "object",
            "properties": {"mode": {"enum": list(vocabulary.TAKEOVER_MODES)}},
            "additionalProperties": False,
        },
        "links": {
            "type": "object",
            "properties": {
                "base_url": BASE_URL,
                "primary": {"type": "array", "items": _STR},
                "invalidation_limit": {"type": "integer", "minimum": 1},
            },
            "additionalProperties": False,
        },
        "retention": {
            "type": "object",
            "properties": {
                "max_age": {"type": ["string", "null"], "pattern": "^[0-9]+[smhdw]$"},
                "max_outputs": {"type": ["integer", "null"], "minimum": 0},
            },
            "additionalProperties": False,
        },
        "lock": {
            "type": "object",
            "properties": {
                "expiry": {"type": "number", "minimum": LOCK_EXPIRY_MINIMUM, "maximum": LOCK_EXPIRY_MAXIMUM},
            },
            "additionalProperties": False,
        },
        "releases": {
            "type": "object",
            "properties": {
                "keep": {"type": "integer", "minimum": 1},
                "activate": {"type": "boolean"},
                "convert": {"type": "boolean"},
                "preview_url": {"type": "string", "minLength": 1, "maxLength": 2048},
                "shared": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 4096}},
                "id": {"type": "string", "pattern": "^%s$" % formats.RELEASE_ID, "maxLength": formats.RELEASE_ID_LENGTH,
                       "description": "a release id: YYYYMMDDTHHMMSSZ-, then 12 lowercase hex digits"},
                "build": {"enum": ["changed", "always"]},
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}

SCHEMAS = {
    "manifest": MANIFEST,
    "state-v1": STATE_V1,
    "state-v2": STATE_V2,
    "state-v3": STATE_V3,
    "journal": JOURNAL,
    "release-index": RELEASE_INDEX,
    "pipeline": PIPELINE,
    "destination": DESTINATION,
}
