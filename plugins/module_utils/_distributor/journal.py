# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The journal of a publish attempt, read back from storage: what recovery may delete."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import DistributorError
from .manifest import publishable_path_problem
from .schemas import load_json, show


@dataclass(frozen=True)
class Journal:
    """An attempt's intent, written before its first write: `token` names its staged files and
    `writes` every output it may have put in place, the only paths recovery may delete."""

    token: str
    writes: tuple[str, ...]


def parse_journal(raw: bytes, where: str) -> Journal:
    """The journal names what recovery deletes, and anyone who can write to the destination can
    write it: its token and every path pass the manifest's path rules, or nothing is deleted."""
    data = load_json(raw, where, "invalid_state")
    if not isinstance(data, dict) or not isinstance(data.get("writes"), list):
        raise _bad_journal(where, "writes", "must be an array of the paths the attempt planned to write")
    token = data.get("token")
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise _bad_journal(where, "token %s" % show(token), "must be an attempt token (letters, digits, - and _)")
    for index, path in enumerate(data["writes"]):
        problem = publishable_path_problem(path) if isinstance(path, str) else "is not a string"
        if problem:
            raise _bad_journal(where, "writes[%d] %s" % (index, show(path)), problem)
    return Journal(token, tuple(data["writes"]))


_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _bad_journal(where: str, field: str, problem: str) -> DistributorError:
    return DistributorError(
        "invalid_state",
        "%s: %s %s; it records an interrupted publish and names what recovery would delete, so nothing "
        "was deleted. Check the bundle path by hand, then remove the journal." % (where, field, problem),
    )
