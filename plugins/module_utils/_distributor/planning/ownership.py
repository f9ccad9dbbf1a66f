# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who may act on a destination's record, in one place: publish's takeover rules and the owner
check of reconcile-state and prune.

Pure: a parsed record and the destination's settings in, a verdict or the contract's failure out.
It reads no storage, so `decide` (which must stay pure) and `managed_root` (the shell that opens
the root) apply the same rules in the same words.
"""

from __future__ import annotations

from ..records.config import Destination
from ..errors import DistributorError
from ..records.manifest import Manifest
from ..records.state import Owner, OwnerKey, State
from ..vocabulary import SHARED_ROOT


def may_take_over(destination: Destination) -> bool:
    """Takeover replaces another owner's (or source's) managed outputs, which only the operator
    can allow: takeover.mode managed, or transfer.on_conflict replace."""
    return destination.takeover == "managed" or destination.on_conflict == "replace"


def identity_mismatch(owner: Owner, key: OwnerKey, manifest: Manifest) -> str | None:
    """Why a single-owner record is not this publish's own (another pipeline, destination or
    source id), in the words the conflict and the takeover report; None when it is."""
    if owner.key != key:
        return "the state belongs to pipeline %s and destination %s, not %s and %s" % (
            owner.key.pipeline_id, owner.key.destination_id, key.pipeline_id, key.destination_id)
    if owner.manifest.id != manifest.id:
        return "the state records source %s, not %s" % (owner.manifest.id, manifest.id)
    return None


def refuse_shared_state_at_single_owner(state: State | None, destination: Destination, where: str,
                                        consequence: str = "") -> None:
    """Shared-root state is never acted on as single-owner: that would treat every other
    owner's outputs as this one's. `consequence` adds what the refused operation suggests."""
    if state is not None and state.mode == SHARED_ROOT and not destination.shared_root:
        raise DistributorError(
            "conflict",
            "%s holds shared_root state but destination %s is configured single_owner; set state.mode: "
            "shared_root%s" % (where, destination.id, consequence),
        )


def check_owner(state: State | None, state_error: DistributorError | None, key: OwnerKey,
                destination: Destination, where: str) -> State:
    """The record reconcile-state and prune may act on, or the failure that says why not.

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
    refuse_shared_state_at_single_owner(state, destination, where)
    if state.mode != SHARED_ROOT and state.owners[0].key != key:
        raise DistributorError(
            "conflict",
            "%s belongs to pipeline %s and destination %s, not %s and %s; distributor never rewrites "
            "another owner's state" % (where, *state.owners[0].key, *key),
        )
    return state
