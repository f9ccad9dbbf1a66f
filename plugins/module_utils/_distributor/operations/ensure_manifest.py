# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The distributor_manifest operation, as publish, prune and reconcile-state have theirs."""

from __future__ import annotations

from typing import Iterable

from ..records.manifest_build import described, write_manifest


def ensure_manifest(source_dir: str, *, manifest_id: str, created: str | None, paths: Iterable[str] | None,
                    check_mode: bool) -> dict:
    """The distributor_manifest operation: write manifest.json only when its content changes.

    Without `created` it is derived from the bundle (derive_created), in check mode and in a
    run alike: a play re-run on an unchanged bundle changes nothing, and a check predicts the run.
    """
    wanted, current, where = described(source_dir, manifest_id, created, paths)
    changed = wanted != current
    if changed and not check_mode:
        write_manifest(source_dir, wanted)
    return {"changed": changed, "manifest": wanted.to_dict(), "digest": wanted.digest, "files_count": len(wanted.files),
            "path": where}
