# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The delete guard: a publish nobody watches must not empty a destination by mistake.

A bundle built in the wrong directory, or truncated on its way, is still a valid bundle, and a
replace publishes it by deleting every output it omits. The plan already names every path it
deletes, so the guard is exact: it refuses a plan over `transfer.max_deletes`, and a bundle with
no files that would delete anything unless `transfer.allow_empty`, before anything is written,
in check mode too, so the reviewer of a check run sees the refusal.
"""

from __future__ import annotations

from ..records.config import Destination
from ..errors import DistributorError
from ..records.manifest import Manifest
from .plan import Plan

UNLIMITED = -1
SHOWN = 20


def check_delete_limit(plan: Plan, destination: Destination, manifest: Manifest, recovered=()) -> None:
    """Raise delete_limit when the plan deletes more outputs than the destination allows, or
    when an empty bundle would delete any. Counted are the paths the plan deletes (replacement's
    omitted outputs, takeover, forced replacement, in single-owner and shared roots alike: every
    delete of a publish is in `plan.deletes`) and `recovered`, the outputs an interrupted attempt
    left that recovery deletes first: a journal is read back from storage, and however well it is
    checked, a run nobody watches must not delete more than the limit on its word. The empty
    bundle rule is about the bundle, so recovery does not count there."""
    where = "destination %s" % destination.id
    if plan.deletes and not manifest.files and not destination.allow_empty:
        raise DistributorError(
            "delete_limit",
            "%s: the bundle is empty and publishing it would delete %d output(s)%s; if that is meant, set "
            "transfer.allow_empty: true" % (where, len(plan.deletes), first_paths(plan.deletes)),
        )
    deletes = list(plan.deletes) + list(recovered)
    limit = destination.max_deletes
    if limit != UNLIMITED and len(deletes) > limit:
        left = " (%d of them left by an interrupted publish)" % len(recovered) if recovered else ""
        raise DistributorError(
            "delete_limit",
            "%s: the publish would delete %d output(s)%s, more than transfer.max_deletes (%d)%s; if that is "
            "meant, raise transfer.max_deletes (-1 for no limit)" % (where, len(deletes), left, limit, first_paths(deletes)),
        )


def first_paths(paths, shown: int = SHOWN) -> str:
    """": a, b and N more": enough paths for a reviewer to tell a mistake from a clean-up, short
    enough for a message about thousands; empty for no paths."""
    paths = list(paths)
    if not paths:
        return ""
    more = " and %d more" % (len(paths) - shown) if len(paths) > shown else ""
    return ": " + ", ".join(paths[:shown]) + more
