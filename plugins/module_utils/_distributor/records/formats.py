# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The formats of the values distributor's records hold (digests, ids, attempt tokens, URLs),
each written once: the JSON Schemas state them (schema_documents.py), and the checks that run
before or instead of jsonschema (fastcheck.py, columns.py, state_lines.py, journal.py, the plan
digest, the release index) match the same text, so a format changed here changes everywhere.

Each is regular-expression text without anchors; the schemas anchor it with `^...$` (and close
the gap `$` leaves before a trailing newline with a length or a `not`), the checks here with a
full match. The compiled patterns are made once, at import: they run on every record of a
100,000-file state.
"""

from __future__ import annotations

import re

# `sha256:` and 64 lowercase hex digits: a file's, a manifest's, a source's or a plan's digest.
SHA256 = r"sha256:[0-9a-f]{64}"
SHA256_PREFIX = b"sha256:"
SHA256_LENGTH = 71
# An absolute http(s) URL without white space: an output's `url`, a `primary_url`.
HTTP_URL = r"[Hh][Tt][Tt][Pp][Ss]?://[^\s]+"
# The URL output paths are joined to: no query or fragment, which would end up inside every URL.
BASE_URL = r"[Hh][Tt][Tt][Pp][Ss]?://[^\s?#]+"
# The token of one attempt (storage.select.new_token): its staged files, its lock, its release.
ATTEMPT_TOKEN = r"[0-9a-f]{12}"
# A release id: the UTC second of the publish, then its attempt's token (releases.rules.release_id).
RELEASE_ID = r"[0-9]{8}T[0-9]{6}Z-" + ATTEMPT_TOKEN
RELEASE_ID_LENGTH = 29
# The token a journal names its attempt by, as read back: any a journal may hold.
JOURNAL_TOKEN = r"[A-Za-z0-9_-]{1,64}"

_SHA256 = re.compile(SHA256)
_HTTP_URL = re.compile(HTTP_URL)
# Every line an http(s) URL: a column of URLs joined by newlines, each followed by one.
HTTP_URL_LINES = re.compile(r"(?:%s\n)*" % HTTP_URL)
ATTEMPT_TOKEN_PATTERN = re.compile(ATTEMPT_TOKEN)
JOURNAL_TOKEN_PATTERN = re.compile(JOURNAL_TOKEN)
# `match` tells a whole release id: `\Z`, where `$` would also match before a trailing newline.
RELEASE_ID_PATTERN = re.compile(RELEASE_ID + r"\Z")


def is_sha256(value) -> bool:
    """`sha256:` and 64 lowercase hex digits, as the schemas' SHA256 accepts."""
    return isinstance(value, str) and _SHA256.fullmatch(value) is not None


def is_http_url(value) -> bool:
    """An http(s) URL without white space, as the schemas' HTTP_URL accepts (no trailing newline)."""
    return isinstance(value, str) and _HTTP_URL.fullmatch(value) is not None


def is_id(value) -> bool:
    """A non-empty string, as the schemas' ID (and TIMESTAMP, before its parse) accepts."""
    return isinstance(value, str) and value != ""
