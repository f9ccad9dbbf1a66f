# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The release index: which generations a bundle path in release mode holds and what each is.

It sits in the release home beside the generations and, like every record read at a
destination, is evidence, never an instruction: an id read here must be a release id (never a
path: `../../etc` is refused), and a refused index makes the run change nothing. The rules that
move a release from one status to another are releases.rules'; this module only reads and writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DistributorError
from ..limits import INDEX_LIMIT
from ..records.schemas import load_json, show, validate
from ..records.state import OwnerKey, readable_json
from ..timestamps import parse_rfc3339
from ..vocabulary import RELEASE_STATUSES

STAGED, ACTIVE, SUPERSEDED, FAILED, ROLLED_BACK = RELEASE_STATUSES


@dataclass(frozen=True)
class Release:
    """One generation: what it was built from, for whom, and whether it may be served,
    returned to or removed (`status`, one of vocabulary.RELEASE_STATUSES). `built` is None
    until the generation is complete and durable; `from_id` names the release whose files it
    links."""

    id: str
    status: str
    manifest_id: str
    manifest_digest: str
    owners: tuple[OwnerKey, ...]
    created: str
    built: str | None = None
    activated: str | None = None
    from_id: str | None = None


@dataclass(frozen=True)
class ReleaseIndex:
    """Every release of one bundle path, sorted by id (oldest first: ids begin with their
    time), however they were given."""

    bundle_path: str
    releases: tuple[Release, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "releases", tuple(sorted(self.releases, key=lambda release: release.id)))

    def by_id(self, release_id: str) -> Release | None:
        """The release `release_id`; None when the index does not list it."""
        return next((release for release in self.releases if release.id == release_id), None)

    @property
    def active(self) -> Release | None:
        """The release the bundle path's link should hold; None before the first switch."""
        return next((release for release in self.releases if release.status == ACTIVE), None)


def serialize_index(index: ReleaseIndex) -> bytes:
    """The bytes of the index file, one form for the same index (fields in a fixed order,
    releases by id, one line each)."""
    releases = [release_to_dict(release) for release in index.releases]
    return (readable_json({"schema": 1, "bundle_path": index.bundle_path, "releases": releases}) + "\n").encode("utf-8")


def release_to_dict(release: Release) -> dict:
    """A release as the index and the modules' results hold it."""
    return {
        "id": release.id,
        "status": release.status,
        "manifest_id": release.manifest_id,
        "manifest_digest": release.manifest_digest,
        "owners": [{"pipeline": owner.pipeline_id, "destination": owner.destination_id} for owner in release.owners],
        "created": release.created,
        "built": release.built,
        "activated": release.activated,
        "from": release.from_id,
    }


def parse_index(raw: bytes, where: str) -> ReleaseIndex:
    """The index read at `where`, or invalid_state naming it and the first field at fault: over
    limits.INDEX_LIMIT, denser than any record, broken JSON or schema `release-index`, a
    timestamp that is not RFC3339, an id listed twice, a second active release."""
    if len(raw) > INDEX_LIMIT:
        raise _refused("%s is larger than %d bytes, the most distributor reads of it" % (where, INDEX_LIMIT))
    try:
        data = load_json(raw, where, "invalid_state")
        validate("release-index", data, where, "invalid_state", nesting_checked=True)
    except DistributorError as error:
        if error.reason != "invalid_state":  # jsonschema missing
            raise
        raise _refused(error.message) from None
    releases, seen, active = [], set(), None
    for position, item in enumerate(data["releases"]):
        field = "releases[%d]" % position
        if item["id"] in seen:
            raise _refused("%s: %s.id: %s is listed more than once" % (where, field, item["id"]))
        seen.add(item["id"])
        for name in ("created", "built", "activated"):
            if item[name] is not None:
                _check_time(item[name], where, "%s.%s" % (field, name))
        if item["status"] == ACTIVE:
            if active is not None:
                raise _refused("%s: %s.status: %s is a second active release (%s is active); one link holds one "
                               "release" % (where, field, item["id"], active))
            active = item["id"]
        releases.append(_release(item))
    return ReleaseIndex(data["bundle_path"], tuple(releases))


def _release(item: dict) -> Release:
    return Release(
        id=item["id"],
        status=item["status"],
        manifest_id=item["manifest_id"],
        manifest_digest=item["manifest_digest"],
        owners=tuple(OwnerKey(owner["pipeline"], owner["destination"]) for owner in item["owners"]),
        created=item["created"],
        built=item["built"],
        activated=item["activated"],
        from_id=item["from"],
    )


def _check_time(value: str, where: str, field: str) -> None:
    try:
        parse_rfc3339(value)
    except ValueError:
        raise _refused("%s: %s %s is not an RFC3339 timestamp" % (where, field, show(value))) from None


def _refused(problem: str) -> DistributorError:
    """One wording for every refusal: what is wrong where, and that nothing was switched or removed."""
    return DistributorError(
        "invalid_state",
        "%s; it is the release index of this bundle path and distributor never writes one like it, so this "
        "run switched and removed nothing. Find out who changed it." % problem,
    )
