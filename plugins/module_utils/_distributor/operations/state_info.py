# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_state_info: what one bundle path holds, read without changing anything.

It takes no lock and writes nothing (a look must never make a publisher wait or leave a trace),
so it may read while a publisher writes: it reports the records as they were at the moment it
read them. A record that cannot be read is the answer, not a failure: people run this module
exactly when something looks wrong. Only what stops it from reading at all fails (a wrong setting,
storage that refuses).
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Iterator

from ..budget import Mapped
from ..records.config import Destination, parse_destination, render_bundle_path
from ..planning.drift import find_drift
from ..errors import DistributorError
from ..records.journal import Journal
from ..limits import LOCK_LIMIT, SHOWN_LIMIT
from ..paths import LOCK_NAME
from .managed_root import Selector, parse_created
from ..releases.home import opened_release
from ..releases.index import release_to_dict
from ..releases.rules import earlier_good
from ..execution.root import opened, read_journal, read_state
from ..records.state import OwnerKey, State, output_to_dict
from ..storage.lease import UNREADABLE_RECORD, lock_is_expired
from ..storage.select import open_storage
from ..timestamps import format_rfc3339


def state_info(destination: dict, *, pipeline_id: str | None = None, selector: Selector = Selector(),
               opener=open_storage, now: float | None = None, verify: str = "none") -> dict:
    """Read one bundle path's state record, journal and lock record, and describe them.
    `selector` fills the bundle path's placeholders. `verify` (size, sha256) also measures the
    selected owner's (or every owner's) outputs and reports those that are `missing` or `drifted`,
    for a nightly check; none of them is repaired (that is publish's `verify`)."""
    destination_cfg = parse_destination(destination)
    bundle_path = render_bundle_path(destination_cfg, pipeline_id, selector.source_id, parse_created(selector.created))
    with _looked_at(destination_cfg, bundle_path, opener) as (storage, home, releases):
        try:
            state, state_error = read_state(storage)
        except DistributorError as error:
            state, state_error = None, _invalid(error)
        exists = state is not None or state_error is not None
        try:
            journal, journal_error = read_journal(storage), None
        except DistributorError as error:
            journal, journal_error = None, _invalid(error)
        lock = home.read_bytes(LOCK_NAME, LOCK_LIMIT)
        key = OwnerKey(pipeline_id, destination_cfg.id) if pipeline_id is not None else None
        missing, drifted = None, None
        if verify != "none":
            records = [o for o in state.outputs if key is None or o.owner == key] if state else []
            listed = frozenset(storage.list_files()) if records else frozenset()
            missing, drifted = find_drift(records, listed, storage.measure, verify)
    errors = [shown(e.message) for e in (state_error, journal_error) if e is not None]
    return dict(describe(state, key, journal, lock, time.time() if now is None else now), **releases,
                changed=False, exists=exists, valid=not errors, error="; ".join(errors) or None, bundle_path=bundle_path,
                missing=missing, drifted=drifted)


def _invalid(error: DistributorError) -> DistributorError:
    """An invalid_state failure, which state_info reports rather than failing on (a corrupt
    record, or one written by an account distributor does not trust: storage.base.untrusted_record),
    since it is how an operator looks at one; anything else is raised."""
    if error.reason != "invalid_state":
        raise error
    return error


@contextmanager
def _looked_at(destination: Destination, bundle_path: str, opener) -> Iterator[tuple]:
    """(the tree, where its lock is, the release values): the bundle path itself, or in release
    mode the live generation read through the link, the release home and its releases."""
    in_place = destination.releases is None
    with (opened if in_place else opened_release)(destination, bundle_path, 0, True, opener) as found:
        yield (found, found, {}) if in_place else (found.storage, found.home, _releases(found))


def _releases(root) -> dict:
    """The release values of state_info: the live release, where a rollback returns, every release."""
    back = earlier_good(root.index)
    return {"release": root.live, "previous": back.id if back else None,
            "releases": [release_to_dict(entry) for entry in root.index.releases]}


def describe(state: State | None, key: OwnerKey | None, journal: Journal | None, lock: bytes | None, now: float) -> dict:
    """The module's return values for what was read; `key` limits owners and outputs to one owner.

    Outputs are returned in the shared-root record form, with their owner and source, whatever
    the state's mode, so a playbook reads every root the same way. Ids and the lock holder are
    free text anyone who can write the destination may have made megabytes long: they are
    `shown` cut short. Paths, digests and times are returned whole (the state's rules bound
    what they may hold)."""
    owners = [o for o in state.owners if key is None or o.key == key] if state else []
    outputs = [o for o in state.outputs if key is None or o.owner == key] if state else []
    counts = Counter(o.owner for o in outputs)
    return {
        "schema_version": state.schema_version if state else None,
        "mode": state.mode if state else None,
        "created_at": state.created_at if state else None,
        "updated_at": state.updated_at if state else None,
        "owners": [{
            "pipeline_id": shown(o.key.pipeline_id),
            "destination_id": shown(o.key.destination_id),
            "source": {"id": shown(o.manifest.id), "digest": o.manifest.digest, "created": o.manifest.created},
            "reconciliation": o.reconciliation,
            "primary_url": o.primary_url,
            "outputs": counts[o.key],
        } for o in owners],
        "outputs": Mapped(sorted(outputs, key=lambda o: o.path), _output),
        "interrupted": _interrupted(journal, state),
        "lock": _lock(lock, now),
    }


def _output(output) -> dict:
    record = output_to_dict(output, True)
    record.update((field, shown(record[field])) for field in ("pipeline_id", "destination_id", "source_id"))
    return record


def shown(text: str | None) -> str | None:
    """A string read from storage as it is returned: at most SHOWN_LIMIT characters, the last
    of a longer one `…`."""
    if text is None or len(text) <= SHOWN_LIMIT:
        return text
    return text[:SHOWN_LIMIT - 1] + "…"


def _interrupted(journal: Journal | None, state: State | None) -> dict | None:
    """A dead attempt's journal; `unrecorded` are the paths it wrote that no valid state records,
    which the next publish removes where the file there is the one the journal describes."""
    if journal is None:
        return None
    managed = state.by_path() if state else {}
    return {"attempt": journal.token, "writes": list(journal.paths),
            "unrecorded": [p for p in journal.paths if p not in managed]}


def _lock(raw: bytes | None, now: float) -> dict | None:
    """The lock record, as anyone may have written it: fields that cannot be read are None, and
    a record whose own `expires_at` is past on this machine's clock, or unreadable, is `expired`:
    a hint for people, since publishers judge a lock on the storage's clock (storage/lease.py).
    A record over LOCK_LIMIT is unreadable: it was read no further than that."""
    if raw is None:
        return None
    record = None
    if len(raw) <= LOCK_LIMIT:
        try:
            record = json.loads(raw)
        except UNREADABLE_RECORD:
            pass
    record = record if isinstance(record, dict) else {}
    holder = record.get("holder")
    return {
        "holder": shown(holder) if isinstance(holder, str) else None,
        "acquired_at": _time(record.get("acquired_at")),
        "expires_at": _time(record.get("expires_at")),
        "expired": lock_is_expired(raw, now),
    }


def _time(value: object) -> str | None:
    """A lock record's epoch seconds as RFC3339, or None for anything that is not a time."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    try:
        return format_rfc3339(datetime.fromtimestamp(value, timezone.utc))
    except (OverflowError, OSError, ValueError):
        return None
