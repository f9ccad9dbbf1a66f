# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Opening a root that already holds a record, for reconcile-state and prune: which bundle path a
selector names, and the record read under the lock and checked by `ownership.check_owner` (the
rules publish applies too) before the operation's body may act on it."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Iterator, NamedTuple

from ..records.config import Destination, render_bundle_path
from ..errors import DistributorError
from ..planning.ownership import check_owner
from ..paths import JOURNAL_NAME, STATE_NAME
from ..releases.home import opened_tree
from ..releases.rules import outside_shared
from ..execution.root import inspect
from ..records.state import OwnerKey, State
from ..storage.base import Storage
from ..timestamps import parse_rfc3339


class Selector(NamedTuple):
    """What fills a bundle path's placeholders when no bundle is at hand."""

    source_id: str | None = None
    created: str | None = None


@dataclass(frozen=True)
class ManagedRoot:
    """What an operation on an existing root works with: the locked storage, the owner acting,
    the checked record, the files present and the warnings about the record to pass on."""

    storage: Storage
    key: OwnerKey
    bundle_path: str
    state: State
    present: frozenset
    warnings: list


def parse_created(created: str | None) -> datetime | None:
    """The selector's `created` as a time, or the invalid_config failure naming the option:
    operations without a bundle fill the bundle path's `{created}` from it."""
    if created is None:
        return None
    try:
        return parse_rfc3339(created)
    except ValueError as exc:
        raise DistributorError("invalid_config", "created: %s" % exc) from exc


@contextmanager
def open_managed_root(pipeline_id: str, destination: Destination, selector: Selector, lock_timeout: float,
                      check_mode: bool, opener) -> Iterator[ManagedRoot]:
    """Open the selected root under its lock and read the record the body may act on. In release
    mode the live release's shared paths (links to what a web server keeps) are no file of it."""
    bundle_path = render_bundle_path(destination, pipeline_id, selector.source_id, parse_created(selector.created))
    with opened_tree(destination, bundle_path, lock_timeout, check_mode, opener) as storage:
        where = storage.describe(STATE_NAME)
        records = inspect(storage)
        key = OwnerKey(pipeline_id, destination.id)
        state = check_owner(records.state, records.state_error, key, destination, where)
        warnings = []
        if state.owner(key) is None:
            warnings.append("owner %s has no record in %s" % (key, where))
        if records.journal is not None:
            warnings.append(
                "%s records an interrupted publish (attempt %s); its unrecorded outputs are left for "
                "the next publish to remove" % (storage.describe(JOURNAL_NAME), records.journal.token))
        shared = destination.releases.shared if destination.releases else ()
        yield ManagedRoot(storage, key, bundle_path, state, outside_shared(records.present, shared), warnings)
