# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manifest contract: the model of a source bundle's manifest, its parse and its digest.

A bundle comes from a producer, who is trusted less than the operator: every value in its
manifest is checked here before anything is planned. Reading the bundle's files against it is
bundle.py; building and writing one is manifest_build.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Iterable

from .carried import CarriedFiles
from .columns import MANIFEST_KEYS, Row, fields, file_columns, file_line_columns, is_integer, manifest_columns, records_digest, rows
from ..errors import DistributorError
from ..paths import RESERVED_PREFIX, is_reserved, path_problem
from .schemas import check_nesting, show, validate
from ..timestamps import parse_rfc3339

MANIFEST_NAME = "manifest.json"
SCHEMA_VERSION = 1


class ManifestFile(Row, fields("ManifestFile", "path", "sha256", "size")):
    """One listed file (path, sha256, size): what every read of it is checked against. A Row:
    100,000 are made from a manifest's columns at once."""

    __slots__ = ()


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
    ordered = sorted(files, key=lambda f: f.path.encode("utf-8"))
    return records_digest([f.path for f in ordered], [f.sha256 for f in ordered], [f.size for f in ordered])


# Valid manifests by digest, each with its files' columns once asked for (_columns).
_VALID: dict[str, list] = {}
_VALID_KEPT = 8


def parse_manifest(data: object, where: str, reason: str = "invalid_manifest", *, nesting_checked: bool = False) -> Manifest:
    """A Manifest from decoded JSON, or DistributorError(reason) naming `where` and the field.

    The state parser passes reason="invalid_state" for the manifest embedded in a record, and
    `nesting_checked` since it bounded the nesting of the whole record already.
    A manifest the column checks accept (recognised) needs no more; any other takes the full
    path (nesting, schema, `created`, path rules, digest), which words what is wrong.
    """
    known = recognised(data)
    if known is not None:
        return known[0]
    if not nesting_checked:
        check_nesting(data, where, reason)
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
    return _remember(manifest, None)[0]


def recognised(data: object) -> tuple[Manifest, list] | None:
    """(the Manifest, its paths in order) for a manifest that parse_manifest certainly accepts,
    told without a Python call per file: one equal to a manifest already parsed (a publish
    meets the same manifest twice, the bundle's and the one its state embeds), or one the
    column checks accept (columns.manifest_columns). None sends it to the full path. Only a
    manifest claiming a remembered digest is compared with the remembered one (_same), so the
    other owners' manifests in a shared root never are; a claimed digest is trusted for
    nothing else."""
    claimed = data.get("digest") if isinstance(data, dict) else None
    remembered = _VALID.get(claimed) if isinstance(claimed, str) else None
    if remembered is not None and _same(data, remembered):
        return remembered[0], _columns(remembered)[0]
    columns = manifest_columns(data)
    if columns is None:
        return None
    paths, sha256s, sizes = columns
    manifest = Manifest(data["schema_version"], data["id"], data["digest"], data["created"],
                        rows(ManifestFile, paths, sha256s, sizes))
    return _remember(manifest, columns)[0], paths


def carried(data: object, raw: bytes, start: int, end: int) -> Manifest | None:
    """recognised for an owner's manifest embedded in a shared root's record, its file lines
    (`raw[start:end]`, state_lines.split_files) read in place and its `files` member a
    placeholder: the same checks over the lines' columns, the digest recomputed from them
    (columns.file_line_columns). Its entries are modelled only when asked for, and written back
    as read (carried.CarriedFiles): other owners' manifests cost a publish no model. One that
    is a manifest already parsed (the publishing owner's, met first in its bundle: the digest
    both recomputed from the same files, the other members equal) is that one."""
    paths = file_line_columns(data, raw, start, end)
    if paths is None:
        return None
    remembered = _VALID.get(data["digest"])
    if remembered is not None and _same_members(data, remembered[0]):
        return remembered[0]
    return Manifest(data["schema_version"], data["id"], data["digest"], data["created"],
                    CarriedFiles(paths, raw[start:end], ManifestFile))


def _remember(manifest: Manifest, columns: list | None) -> list:
    if len(_VALID) >= _VALID_KEPT:
        _VALID.clear()
    remembered = _VALID[manifest.digest] = [manifest, columns]
    return remembered


def _columns(remembered: list) -> list:
    if remembered[1] is None:
        files = remembered[0].files
        remembered[1] = [[f.path for f in files], [f.sha256 for f in files], [f.size for f in files]]
    return remembered[1]


def _same(data: dict, remembered: list) -> bool:
    """Whether `data` is exactly the remembered valid manifest: its members, and its files'
    columns (columns.file_columns, which tells an integer size from true or 1.0), equal."""
    return _same_members(data, remembered[0]) and file_columns(data["files"]) == _columns(remembered)


def _same_members(data: dict, manifest: Manifest) -> bool:
    version = data.get("schema_version")
    return (data.keys() == MANIFEST_KEYS and is_integer(version) and version == manifest.schema_version
            and data["id"] == manifest.id and data["created"] == manifest.created)


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


# The words of a digest that does not match the files listed, which a caller may add a cause to.
DIGEST_MISMATCH = "does not match its files"


def _check_digest(manifest: Manifest, where: str, reason: str) -> None:
    computed = compute_digest(manifest.files)
    if computed != manifest.digest:
        raise DistributorError(reason, "%s: digest %s %s (computed %s); regenerate the manifest"
                               % (where, short_digest(manifest.digest), DIGEST_MISMATCH, short_digest(computed)))
