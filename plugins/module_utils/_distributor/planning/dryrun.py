# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an `invalid_state` or `conflict` failure tells the operator to run next.

Both mean the records at a destination are not what this run expected, and neither is fixed by
running again: a person has to look. Every such message ends with the task that shows, read-only,
what that bundle path records (`distributor_state_info` reports an unusable record instead of
failing on it). It is added in one place, where a bundle path is opened (root.opened), because
only there are both the destination and the rendered bundle path known.
"""

from __future__ import annotations

import json

from ..argspec import STORAGE
from ..records.attributes import FILE_SETTINGS, S3_SETTINGS
from ..records.config import Destination
from ..errors import DistributorError

HINTED_REASONS = ("invalid_state", "conflict")
# Settings that only say how outputs are written; reading the records needs none of them.
_WRITE_SETTINGS = frozenset(FILE_SETTINGS + S3_SETTINGS + ("directory_mode", "content_types"))
_SECRETS = frozenset(name for name, spec in STORAGE.items() if spec.get("no_log"))


def state_info_task(destination: Destination, bundle_path: str) -> tuple[str, bool]:
    """(the task as one line of YAML, whether credentials were left out of it). The rendered
    bundle path stands in for `path`, so the task needs no `created` or `source_id`."""
    storage = {k: v for k, v in destination.storage.items() if k not in _WRITE_SETTINGS and k not in _SECRETS}
    arguments = {"destination": {"id": destination.id, "storage": storage, "path": bundle_path}}
    if destination.releases is not None:
        arguments["destination"]["releases"] = {}
    task = "- distributor.core.distributor_state_info: " + json.dumps(arguments, ensure_ascii=False)
    return task, any(k in _SECRETS for k in destination.storage)


def with_dry_run_hint(error: DistributorError, destination: Destination, bundle_path: str) -> DistributorError:
    """`error` with the read-only report task appended when its reason is one a person must
    look into; any other error unchanged."""
    if error.reason not in HINTED_REASONS:
        return error
    task, secrets_left_out = state_info_task(destination, bundle_path)
    credentials = ", with the destination's secrets added back," if secrets_left_out else ""
    return DistributorError(error.reason, "%s. To see what is recorded there without changing anything, run "
                            "this task%s on the same host: %s" % (error.message.rstrip("."), credentials, task),
                            error.details)
