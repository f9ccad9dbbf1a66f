# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Opening one destination bundle path: the lock and the reading every operation starts with.

Publish, reconcile-state and prune all act on what they read under the lock, so what they
decide is still true when they write. Check mode takes no lock: it must leave no trace.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Iterator

from ..records.config import Destination
from ..planning.dryrun import with_dry_run_hint
from ..errors import DistributorError
from ..records.journal import Journal, parse_journal
from ..limits import JOURNAL_LIMIT, STATE_LIMIT
from ..paths import JOURNAL_NAME, STATE_NAME, is_reserved
from ..records.state import State
from ..records.state_parse import parse_state
from ..storage.base import Storage
from ..storage.confined import ConfinedStorage
from ..storage.select import new_token


@contextmanager
def opened(destination: Destination, bundle_path: str, lock_timeout: float, check_mode: bool, opener) -> Iterator[Storage]:
    """The destination's bundle path, locked (with its `lock.expiry`) unless in check mode.
    An invalid_state or conflict failure inside ends with the task that shows the records."""
    storage = ConfinedStorage(opener(destination.storage, bundle_path, new_token()))
    try:
        with nullcontext() if check_mode else storage.lock(lock_timeout, destination.lock_expiry):
            yield storage
    except DistributorError as error:
        raise with_dry_run_hint(error, destination, bundle_path) from None
    finally:
        storage.close()


@dataclass(frozen=True)
class RootRecords:
    """Everything a decision needs to know of a root. Invalid state is carried, not raised:
    single-owner force may replace it, and the other operations word their own refusal."""

    state: State | None
    state_error: DistributorError | None
    journal: Journal | None
    present: frozenset


def inspect(storage: Storage) -> RootRecords:
    """The records and the listing at once, for operations that always need both (reconcile-state,
    prune); publish reads the records first and lists only when they do not decide alone."""
    return RootRecords(*read_records(storage), list_present(storage))


def read_records(storage: Storage):
    """(state, state_error, journal): what inspect reads before listing; a publish that these
    alone decide (a skip) lists nothing. Both are read at once where latency dominates (S3: two
    GETs in flight together, one round trip): a dead attempt's journal is resolved whatever the
    state holds, so neither read waits for the other."""
    raw_state, raw_journal = storage.read_many([(STATE_NAME, STATE_LIMIT), (JOURNAL_NAME, JOURNAL_LIMIT)])
    return state_of(storage, raw_state) + (journal_of(storage, raw_journal),)


def read_state(storage: Storage, parse=parse_state):
    """(state, state_error): the record, or the invalid_state error that says why it is unusable.
    `parse` is parse_state, or what it stands for when only part of the record is needed
    (state_parse.recorded_files)."""
    return state_of(storage, storage.read_bytes(STATE_NAME, STATE_LIMIT), parse)


def state_of(storage: Storage, raw: bytes | None, parse=parse_state):
    """read_state of a state record read already (None: there is none)."""
    try:
        checked = bounded(storage, STATE_NAME, STATE_LIMIT, raw)
        return (parse(checked, storage.describe(STATE_NAME)) if checked is not None else None), None
    except DistributorError as error:
        if error.reason != "invalid_state":
            raise
        return None, error


def read_journal(storage: Storage):
    """The journal of a dead attempt, or None; an invalid one raises invalid_state."""
    return journal_of(storage, storage.read_bytes(JOURNAL_NAME, JOURNAL_LIMIT))


def journal_of(storage: Storage, raw: bytes | None):
    """read_journal of a journal read already (None: there is none)."""
    checked = bounded(storage, JOURNAL_NAME, JOURNAL_LIMIT, raw)
    return parse_journal(checked, storage.describe(JOURNAL_NAME)) if checked is not None else None


def read_record(storage: Storage, name: str, limit: int) -> bytes | None:
    """A record (state, journal, index) read with its bound (see bounded)."""
    return bounded(storage, name, limit, storage.read_bytes(name, limit))


def bounded(storage: Storage, name: str, limit: int, raw: bytes | None) -> bytes | None:
    """A record as read with its bound: anyone who can write the destination can plant one of
    any size, and one over the bound is refused after `limit + 1` bytes, never read whole or
    parsed."""
    if raw is not None and len(raw) > limit:
        raise DistributorError(
            "invalid_state",
            "%s is larger than %d bytes, the most distributor reads of it, so it was not read: distributor "
            "never writes one that large. Find out who did." % (storage.describe(name), limit),
        )
    return raw


def list_present(storage: Storage) -> frozenset:
    """The outputs' side of the bundle path: distributor's own records and lock (`.distributor*`)
    are never an output, so no decision counts them as present or unmanaged files."""
    return present_in(storage.list_files())


def present_in(listing) -> frozenset:
    """As list_present, for a listing already made (publish keeps the full one for recovery,
    which does delete staged `.distributor*` files)."""
    return frozenset(p for p in listing if not is_reserved(p))
