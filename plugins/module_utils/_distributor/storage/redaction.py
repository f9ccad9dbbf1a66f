# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secrets kept out of the messages and tracebacks of the backends that take them (S3 keys and
session tokens, SSH passwords and passphrases)."""

from __future__ import annotations

import json
from urllib.parse import quote, quote_plus


REDACTED = "********"
MIN_DERIVED_SECRET = 4


def secret_forms(secret: str) -> list[str]:
    """The ways a secret shows up in an error message, longest first: as given, without its
    surrounding whitespace (a token read from a file keeps its newline; an HTTP client refuses
    it and quotes it back), and escaped as Python's repr, JSON or URL encoding write it.
    Ansible's no_log masks only the value as given."""
    forms = {
        secret.strip(),
        repr(secret)[1:-1],
        repr(secret.encode("utf-8"))[2:-1],
        json.dumps(secret)[1:-1],
        quote(secret, safe=""),
        quote_plus(secret),
    }
    derived = [form for form in forms if len(form) >= MIN_DERIVED_SECRET]
    return sorted(set(derived) | {secret}, key=len, reverse=True)


def redact(text: str, secrets) -> str:
    """No SDK is known to echo a secret in an error, but a message of ours must never be the first."""
    for secret in secrets:
        if secret:
            for form in secret_forms(secret):
                text = text.replace(form, REDACTED)
    return text


def mentions_secret(exc: BaseException, secrets) -> bool:
    """Whether an exception or any exception it was raised from quotes a secret: then it must not
    travel on as the cause of our error, where a traceback would print it."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = "%s %r" % (exc, exc.args)
        if redact(text, secrets) != text:
            return True
        exc = exc.__cause__ or exc.__context__
    return False
