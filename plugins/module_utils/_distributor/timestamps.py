# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Times in and out, in the forms distributor writes: RFC3339 in records and results, and the
compact UTC second that starts a release id. The core never reads the clock: `now` is always a
parameter."""

from __future__ import annotations

import re
from datetime import datetime, timezone

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)


def parse_rfc3339(value: object) -> datetime:
    """An aware datetime, so timestamps written with different offsets compare as instants;
    ValueError for anything that is not an RFC3339 date-time string."""
    if not isinstance(value, str) or not _RFC3339.match(value):
        raise ValueError("%r is not an RFC3339 timestamp (like 2026-06-04T12:00:00Z)" % (value,))
    normalised = value.upper().replace("Z", "+00:00")
    return datetime.fromisoformat(normalised)


def format_rfc3339(moment: datetime) -> str:
    """UTC, second precision, `Z` suffix: the form distributor writes."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# The compact form: no separators, so that a release id (the compact second, `-`, a token) is one
# name on any storage and sorts as its second does.
_COMPACT = "%Y%m%dT%H%M%SZ"


def format_compact(moment: datetime) -> str:
    """UTC, second precision, without separators: `20260604T120000Z`."""
    return moment.astimezone(timezone.utc).strftime(_COMPACT)


def parse_compact(value: str) -> datetime:
    """The aware UTC second that format_compact wrote; ValueError for anything else."""
    return datetime.strptime(value, _COMPACT).replace(tzinfo=timezone.utc)


def utc_now() -> datetime:
    """The clock, read only by the imperative shell."""
    return datetime.now(timezone.utc)
