# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manifest contract: the model of a source bundle's manifest, its parse and its digest.

A bundle comes from a producer, who is trusted less than the operator: every value in its
manifest is checked here before anything is planned. Reading the bundle's files against it is
bundle.py; building and writing one is manifest_build.py.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Iterable

from .errors import DistributorError
from .paths import RESERVED_PREFIX, is_reserved, path_problem
from .schemas import check_nesting, show, validate
from .timestamps import parse_rfc3339

MANIFEST_NAME = "manifest.json"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ManifestFile:
    """One listed file: what every read of it is checked against."""

    path: str
    sha256: str
    size: int


def listed(items, make) -> list:
    """`make(item)` for every item, made now: the form records are written in. A result passes
    budget.Mapped in its place, which makes only the entries it returns."""
    return [make(item) for item in items]


def file_to_dict(entry: ManifestFile) -> dict:
    """One file entry as manifest.json and the state record write it."""
    return {"path": entry.path, "sha256": entry.sha256, "size": entry.size}


@dataclass(frozen=True)
class Manifest:
    """A checked manifest: only parse_manifest makes one from a producer's JSON, so every value
    the core plans with has passed the contract."""

    schema_version: int
    id: str
    digest: str
    created: str
    files: tuple[ManifestFile, ...]

    def to_dict(self, each=listed) -> dict:
        """The form embedded in state records and written to manifest.json; `each(files, make)`
        makes its list of files."""
        return {
            "schema_version": self.schema_version,
            "id": self.id,
            "digest": self.digest,
            "created": self.created,
            "files": each(self.files, file_to_dict),
        }

    @property
    def created_at(self) -> datetime:
        """`created` as an aware datetime, for `{created:...}` placeholders and comparisons."""
        return parse_rfc3339(self.created)

    @cached_property
    def _by_path(self) -> dict[str, ManifestFile]:
        return {f.path: f for f in self.files}

    @property
    def paths(self):
        """The listed paths, for membership tests: each has passed the path rules."""
        return self._by_path.keys()

    def file(self, path: str) -> ManifestFile:
        """The entry for `path`; KeyError when the manifest does not list it (a caller bug:
        every path the core handles comes from this manifest)."""
        return self._by_path[path]


def compute_digest(files: Iterable[ManifestFile]) -> str:
    """The bundle's identity: equal digests mean equal content, whatever the file order."""
    hasher = hashlib.sha256()
    for entry in sorted(files, key=lambda f: f.path.encode("utf-8")):
        hasher.update(("%s\0%s\0%d\n" % (entry.path, entry.sha256, entry.size)).encode("utf-8"))
    return "sha256:" + hasher.hexdigest()


_VALID: dict[str, list] = {}
_VALID_KEPT = 8


def parse_manifest(data: object, where: str, reason: str = "invalid_manifest", *, nesting_checked: bool = False) -> Manifest:
    """A Manifest from decoded JSON, or DistributorError(reason) naming `where` and the field.

    The state parser passes reason="invalid_state" for the manifest embedded in a record, and
    `nesting_checked` since it bounded the nesting of the whole record already.
    A publish meets the same manifest twice (the bundle's, and the one its state embeds) and
    validating a large one costs far more than recognising it, so valid ones are remembered by
    digest. Only a manifest claiming a remembered digest is compared with the remembered one
    (_same, which tells 1 from 1.0 and true): the other owners' manifests in a shared root
    never are.
    """
    if not nesting_checked:
        check_nesting(data, where, reason)
    claimed = data.get("digest") if isinstance(data, dict) else None
    if isinstance(claimed, str) and claimed in _VALID and _same(data, _VALID[claimed]):
        return _VALID[claimed][0]
    validate("manifest", data, where, reason, nesting_checked=True)
    manifest = Manifest(
        schema_version=data["schema_version"],
        id=data["id"],
        digest=data["digest"],
        created=data["created"],
        files=tuple(ManifestFile(f["path"], f["sha256"], f["size"]) for f in data["files"]),
    )
    _check_created(manifest, where, reason)
    _check_paths(manifest.files, where, reason)
    _check_digest(manifest, where, reason)
    if len(_VALID) >= _VALID_KEPT:
        _VALID.clear()
    _VALID[manifest.digest] = [manifest, None]
    return manifest


def _same(data: dict, remembered: list) -> bool:
    """Whether `data` is exactly the remembered valid manifest: equal as Python values, and
    with integers where Python would also find true or 1.0 equal to 1. The schema admits no
    other types Python equality confuses, so this is equality of the JSON texts, without
    writing 100,000 entries out twice."""
    if remembered[1] is None:
        remembered[1] = remembered[0].to_dict()
    return data == remembered[1] and _integer(data["schema_version"]) and all(_integer(entry["size"]) for entry in data["files"])


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def short_digest(digest: str) -> str:
    """`sha256:ab12cd34ef56…`: enough of a hash for a person to compare two of them in a message."""
    return digest[:19] + "…" if len(digest) > 19 else digest


def _check_created(manifest: Manifest, where: str, reason: str) -> None:
    try:
        parse_rfc3339(manifest.created)
    except ValueError:
        raise DistributorError(
            reason, "%s: created %s is not an RFC3339 timestamp (like 2026-06-04T12:00:00Z)"
            % (where, show(manifest.created))) from None


def publishable_path_problem(path: str) -> str | None:
    """Why `path` may not be listed in a manifest, or None: the shared path rules, plus the
    reserved names and UTF-8, which the digest and every destination need."""
    problem = path_problem(path)
    if problem:
        return problem
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid UTF-8"
    if is_reserved(path):
        return ("uses the reserved prefix %s (names starting %s belong to distributor at every destination); "
                "rename it" % (show(RESERVED_PREFIX), RESERVED_PREFIX))
    return None


def _check_paths(files: tuple[ManifestFile, ...], where: str, reason: str) -> None:
    """Clean, unique paths, none of them also a directory of another: a destination can hold
    only one thing under each name."""
    seen: dict[str, int] = {}
    for index, entry in enumerate(files):
        problem = publishable_path_problem(entry.path)
        if problem or entry.path in seen:
            field = "%s: files[%d].path %s" % (where, index, show(entry.path))
            if problem:
                raise DistributorError(reason, "%s %s" % (field, problem))
            raise DistributorError(reason, "%s is listed twice (also files[%d])" % (field, seen[entry.path]))
        seen[entry.path] = index
    for path, index in seen.items():
        parent = path.rpartition("/")[0]
        while parent:
            if parent in seen:
                raise DistributorError(reason, "%s: files[%d].path %s is inside files[%d].path %s, which is a file"
                                       % (where, index, show(path), seen[parent], show(parent)))
            parent = parent.rpartition("/")[0]


def _check_digest(manifest: Manifest, where: str, reason: str) -> None:
    computed = compute_digest(manifest.files)
    if computed != manifest.digest:
        raise DistributorError(reason, "%s: digest %s does not match its files (computed %s); regenerate the manifest"
                               % (where, short_digest(manifest.digest), short_digest(computed)))
