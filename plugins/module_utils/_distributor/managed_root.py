# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules for acting on a root that already holds a record, in one place: which bundle path a
selector names, which owner may act on it, and the refusals reconcile-state and prune (and, for a
shared root opened as single-owner, publish) word alike."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Iterator, NamedTuple

from .config import Destination, render_bundle_path
from .errors import DistributorError
from .paths import JOURNAL_NAME, STATE_NAME
from .root import inspect, opened
from .state import SHARED_ROOT, OwnerKey, State
from .storage.base import Storage
from .timestamps import parse_rfc3339


class Selector(NamedTuple):
    """What fills a bundle path's placeholders when no bundle is at hand."""

    source_id: str | None = None
    created: str | None = None


def shared_state_at_single_owner(where: str, destination_id: str, consequence: str = "") -> DistributorError:
    """Shared-root state is never acted on as single-owner: that would treat every other
    owner's outputs as this one's."""
    return DistributorError(
        "conflict",
        "%s holds shared_root state but destination %s is configured single_owner; set state.mode: "
        "shared_root%s" % (where, destination_id, consequence),
    )


def check_owner(state: State | None, state_error: DistributorError | None, key: OwnerKey,
                destination: Destination, where: str) -> State:
    """The record both operations may act on, or the failure that says why not.

    No record fails rather than succeeding quietly: it almost always means a wrong `path` or
    `created`, and success would hide that. Its reason is `unmanaged`, the contract's word for a
    root without state, so automation can tell it from a corrupt record (`invalid_state`), which
    needs a person. A record of another owner (or a shared root opened as
    single-owner, which publish refuses too) is `conflict`, as in publish. The owner's own
    single-owner state under a shared_root configuration is accepted and kept single-owner:
    converting it is the next publish's migration, not a repair.
    """
    if state_error is not None:
        raise DistributorError(
            "invalid_state",
            state_error.message + "; distributor never rewrites invalid state: repair the file or restore it from backup",
        )
    if state is None:
        raise DistributorError(
            "unmanaged",
            "%s does not exist: distributor manages nothing there. Check destination.path and created, "
            "or publish first" % where,
        )
    if state.mode == SHARED_ROOT and not destination.shared_root:
        raise shared_state_at_single_owner(where, destination.id)
    if state.mode != SHARED_ROOT and state.owners[0].key != key:
        raise DistributorError(
            "conflict",
            "%s belongs to pipeline %s and destination %s, not %s and %s; distributor never rewrites "
            "another owner's state" % (where, *state.owners[0].key, *key),
        )
    return state


@dataclass(frozen=True)
class ManagedRoot:
    storage: Storage
    key: OwnerKey
    bundle_path: str
    state: State
    present: frozenset
    warnings: list


def parse_created(created: str | None) -> datetime | None:
    if created is None:
        return None
    try:
        return parse_rfc3339(created)
    except ValueError as exc:
        raise DistributorError("invalid_config", "created: %s" % exc) from exc


@contextmanager
def open_managed_root(pipeline_id: str, destination: Destination, selector: Selector, lock_timeout: float,
                      check_mode: bool, opener) -> Iterator[ManagedRoot]:
    """Open the selected root under its lock and read the record the body may act on."""
    bundle_path = render_bundle_path(destination, pipeline_id, selector.source_id, parse_created(selector.created))
    with opened(destination, bundle_path, lock_timeout, check_mode, opener) as storage:
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
        yield ManagedRoot(storage, key, bundle_path, state, records.present, warnings)
