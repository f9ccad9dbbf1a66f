# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Source bundles: the manifest contract, its digest, and reads that verify what they return.

A bundle comes from a producer, who is trusted less than the operator: every value in its
manifest is checked before anything is planned, and every byte is checked against the manifest
while it is read for publishing, so a bundle that changes mid-publish cannot reach a destination.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cached_property
from typing import Iterable, Iterator

from .errors import DistributorError
from .paths import RESERVED_PREFIX, is_reserved, path_problem
from .regular import NotRegularFile, kind_of, open_regular
from .schemas import check_nesting, show, validate
from .timestamps import format_rfc3339, parse_rfc3339

MANIFEST_NAME = "manifest.json"
SCHEMA_VERSION = 1
READ_CHUNK_SIZE = 1024 * 1024  # a chunk or two in memory at a time (see readahead), whatever the file size


@dataclass(frozen=True)
class ManifestFile:
    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Manifest:
    schema_version: int
    id: str
    digest: str
    created: str
    files: tuple[ManifestFile, ...]

    def to_dict(self) -> dict:
        """The form embedded in state records and written to manifest.json."""
        return {
            "schema_version": self.schema_version,
            "id": self.id,
            "digest": self.digest,
            "created": self.created,
            "files": [{"path": f.path, "sha256": f.sha256, "size": f.size} for f in self.files],
        }

    @property
    def created_at(self) -> datetime:
        """`created` as an aware datetime, for `{created:...}` placeholders and comparisons."""
        return parse_rfc3339(self.created)

    @cached_property
    def _by_path(self) -> dict[str, ManifestFile]:
        return {f.path: f for f in self.files}

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


_VALID: dict[str, Manifest] = {}
_VALID_KEPT = 8


def parse_manifest(data: object, where: str, reason: str = "invalid_manifest") -> Manifest:
    """A Manifest from decoded JSON, or DistributorError(reason) naming `where` and the field.

    The state parser passes reason="invalid_state" for the manifest embedded in a record.
    A publish meets the same manifest twice (the bundle's, and the one its state embeds) and
    validating a large one costs far more than recognising it, so valid ones are remembered.
    """
    check_nesting(data, where, reason)
    canonical = json.dumps(data, sort_keys=True, default=repr)
    if canonical in _VALID:
        return _VALID[canonical]
    validate("manifest", data, where, reason)
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
    _VALID[canonical] = manifest
    return manifest


def _short(digest: str) -> str:
    """`sha256:ab12cd34ef56…`: enough of a hash for a person to compare two of them."""
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
        field = "%s: files[%d].path %s" % (where, index, show(entry.path))
        problem = publishable_path_problem(entry.path)
        if problem:
            raise DistributorError(reason, "%s %s" % (field, problem))
        if entry.path in seen:
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
                               % (where, _short(manifest.digest), _short(computed)))


class Bundle:
    """A bundle directory whose manifest has been checked; reads of its files verify as they go."""

    def __init__(self, root: str, manifest: Manifest):
        self.root = root
        self.manifest = manifest
        self._inside = _Inside(root)

    @classmethod
    def load(cls, source_dir: str, manifest: dict | None = None) -> Bundle:
        """Parse `<source_dir>/manifest.json` and check each listed file is there, as listed,
        before anything is planned: a broken bundle fails before a destination is touched.

        `manifest` (decoded JSON, the publish option) is used in place of the file, which is
        then not read: in check mode distributor_manifest computes the manifest without writing
        it, so the file is stale or missing. It passes the same checks; messages name the option."""
        root = os.path.abspath(source_dir)
        if manifest is None:
            where = os.path.join(root, MANIFEST_NAME)
            manifest = _read_json(where)
        else:
            where = "%s (manifest option)" % root
        bundle = cls(root, parse_manifest(manifest, where))
        for entry in bundle.manifest.files:
            size = _listed_file(bundle._inside, entry.path, where)[1]
            if size != entry.size:
                raise _size_mismatch(entry.path, entry.size, "%d bytes" % size)
        return bundle

    def chunks(self, path: str) -> Iterator[bytes]:
        """The file's bytes in chunks, hashed while they stream. A file that outgrows its manifest
        size fails at once; size and sha256 are checked after the last chunk, when the consumer
        asks for more, so a writer that drains the iterator before committing never commits a
        file that differs from the manifest."""
        entry = self.manifest.file(path)
        hasher = hashlib.sha256()
        size = 0
        for chunk in _read_chunks(self._inside.resolve(path, self.root)[0], "verification_failed"):
            size += len(chunk)
            if size > entry.size:
                raise _size_mismatch(path, entry.size, "more than %d bytes" % entry.size)
            hasher.update(chunk)
            yield chunk
        if size != entry.size:
            raise _size_mismatch(path, entry.size, "%d bytes" % size)
        actual = "sha256:" + hasher.hexdigest()
        if actual != entry.sha256:
            raise DistributorError("verification_failed", "%s: sha256 mismatch (manifest %s, file %s); %s" % (
                path, _short(entry.sha256), _short(actual), _CHANGED))

    def read(self, path: str) -> bytes:
        """The whole verified file, for transforms that need it all at once."""
        return b"".join(self.chunks(path))


_CHANGED = "the bundle changed after its manifest was written"


def _size_mismatch(path: str, expected: int, actual: str) -> DistributorError:
    return DistributorError("verification_failed", "%s: size mismatch (manifest %d bytes, file %s); %s" % (
        path, expected, actual, _CHANGED))


def _read_json(where: str) -> object:
    try:
        with open_regular(where) as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise DistributorError("invalid_manifest", "%s does not exist; a bundle is a directory holding "
                               "manifest.json and the files it lists" % where) from None
    except NotRegularFile as exc:
        raise _not_regular(exc) from None
    except OSError as exc:
        raise DistributorError("invalid_manifest", "cannot read %s: %s" % (where, exc.strerror or exc)) from None
    try:
        return json.loads(raw.decode("utf-8-sig"), object_pairs_hook=_refuse_duplicate_keys)
    except UnicodeDecodeError as exc:
        raise DistributorError("invalid_manifest", "%s is not UTF-8 (byte %d); write it as UTF-8 JSON" % (
            where, exc.start)) from None
    except json.JSONDecodeError as exc:
        raise DistributorError("invalid_manifest", "%s is not valid JSON: %s at line %d, column %d" % (
            where, exc.msg, exc.lineno, exc.colno)) from None
    except (ValueError, RecursionError) as exc:
        raise DistributorError("invalid_manifest", "%s is not a manifest: %s" % (where, exc)) from None


def _refuse_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    """Python keeps the last of two equal keys silently; another reader may keep the first, so
    a manifest that says two things at once is refused."""
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise ValueError("key %s appears twice in one object" % show(key))
        result[key] = value
    return result


class _Inside:
    """Real locations of a bundle's files; a symlink may point anywhere inside the bundle but
    never out of it, so a producer cannot make distributor publish the host's files.

    Each directory is resolved once per bundle (not once per file and read), so loading costs
    one lstat per listed file when no file is a link."""

    def __init__(self, root: str):
        self.root = root
        self.real_root = os.path.realpath(root)
        self._dirs = {"": self.real_root}

    def _outside(self, path: str, real: str, where: str) -> DistributorError:
        return DistributorError("invalid_manifest", "%s: %s resolves to %s, outside the bundle; replace the "
                                "symbolic link with the file itself" % (where, show(path), real))

    def _inside(self, real: str) -> bool:
        return os.path.commonpath([self.real_root, real]) == self.real_root

    def resolve(self, path: str, where: str) -> tuple[str, os.stat_result | None]:
        """(real location, its lstat or None when it does not exist)."""
        head, name = path.rpartition("/")[::2]
        real_dir = self._dirs.get(head)
        if real_dir is None:
            real_dir = os.path.realpath(os.path.join(self.root, *head.split("/")))
            if not self._inside(real_dir):
                raise self._outside(path, os.path.join(real_dir, name), where)
            self._dirs[head] = real_dir
        real = os.path.join(real_dir, name)
        try:
            info = os.lstat(real)
        except FileNotFoundError:
            return real, None
        except OSError as exc:
            raise DistributorError("invalid_manifest", "%s: cannot read %s: %s" % (
                where, show(path), exc.strerror or exc)) from None
        if stat.S_ISLNK(info.st_mode):
            real = os.path.realpath(real)
            if not self._inside(real):
                raise self._outside(path, real, where)
            info = None
        return real, info


def _listed_file(inside: _Inside, path: str, where: str) -> tuple[str, int]:
    """The real location and size of a listed file that exists, inside the bundle, as a
    regular file."""
    real, info = inside.resolve(path, where)
    try:
        info = info or os.stat(real)
    except FileNotFoundError:
        raise DistributorError("invalid_manifest", "%s: %s is listed but does not exist" % (
            where, show(path))) from None
    except OSError as exc:
        raise DistributorError("invalid_manifest", "%s: cannot read %s: %s" % (
            where, show(path), exc.strerror or exc)) from None
    kind = kind_of(info.st_mode)
    if kind:
        raise DistributorError("invalid_manifest", "%s: %s is listed but is %s, not a regular file" % (
            where, show(path), kind))
    return real, info.st_size


def _read_chunks(real: str, reason: str) -> Iterator[bytes]:
    """A file that stopped being a regular file since the manifest was checked (a FIFO swapped
    in, say) is refused unread, as at load: it is the bundle that is wrong, not its bytes."""
    try:
        with open_regular(real) as handle:
            while True:
                chunk = handle.read(READ_CHUNK_SIZE)
                if not chunk:
                    return
                yield chunk
    except NotRegularFile as exc:
        raise _not_regular(exc) from None
    except OSError as exc:
        raise DistributorError(reason, "cannot read %s: %s" % (real, exc.strerror or exc)) from None


def _not_regular(exc: NotRegularFile) -> DistributorError:
    return DistributorError("invalid_manifest", "%s is %s, not a regular file; a bundle holds only regular files "
                            "(and links to them inside the bundle)" % (exc.filename, exc.kind))


def build_manifest(source_dir: str, manifest_id: str, created: str | None, paths: Iterable[str] | None = None,
                   previous: Manifest | None = None) -> Manifest:
    """Hash the bundle's files into a Manifest without writing anything (check mode needs that).

    With `paths` None every regular file below `source_dir` is listed except manifest.json;
    symbolic links to directories are not descended into, so list such files in `paths`.
    `created` None derives it from the bundle (see derive_created; `previous` is the manifest
    the bundle had). The result goes through parse_manifest: what this builds, load reads.
    """
    root = os.path.abspath(source_dir)
    listed = sorted(_walk(root) if paths is None else paths, key=lambda p: p.encode("utf-8", "surrogateescape"))
    inside = _Inside(root)
    hashed = [_hash_file(root, inside, path) for path in listed]
    files = tuple(entry for entry, _mtime in hashed)
    if created is None:
        created = derive_created(manifest_id, files, [mtime for _entry, mtime in hashed] or [_mtime(root, root)],
                                 previous)
    manifest = Manifest(SCHEMA_VERSION, manifest_id, compute_digest(files), created, files)
    return parse_manifest(manifest.to_dict(), os.path.join(root, MANIFEST_NAME))


def derive_created(manifest_id: str, files: tuple[ManifestFile, ...], mtimes: list[float],
                   previous: Manifest | None) -> str:
    """`created` as a function of the bundle, so a check and the run that follows it describe
    the same bundle (and an approved plan digest can run) whenever either runs.

    The previous manifest's `created` when the id and files are unchanged; otherwise the newest
    modification time of the files (of the bundle directory when it lists none), in UTC, whole
    seconds, but at least one second after the previous `created` of the same id, so a changed
    bundle always moves forward and replaces the recorded one at its destinations.
    """
    if previous is not None and previous.id == manifest_id:
        if previous.files == files:
            return previous.created
        floor = previous.created_at.timestamp() + 1
    else:
        floor = 0
    newest = max(int(max(mtimes)), int(math.ceil(floor)))
    return format_rfc3339(datetime.fromtimestamp(newest, timezone.utc))


def write_manifest(source_dir: str, manifest: Manifest) -> None:
    where = os.path.join(os.path.abspath(source_dir), MANIFEST_NAME)
    _write_atomically(where, (json.dumps(manifest.to_dict(), indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def create_manifest(source_dir: str, manifest_id: str, created: str | None, paths: Iterable[str] | None = None) -> dict:
    """Hash the bundle's files and write its manifest.json; returns the manifest as written."""
    manifest = build_manifest(source_dir, manifest_id, created, paths)
    write_manifest(source_dir, manifest)
    return manifest.to_dict()


def _walk(root: str) -> Iterator[str]:
    for directory, _dirs, names in os.walk(root, onerror=_unlistable):
        for name in names:
            full = os.path.join(directory, name)
            relative = os.path.relpath(full, root).replace(os.sep, "/")
            if relative != MANIFEST_NAME and os.path.isfile(full):
                yield relative


def _unlistable(exc: OSError) -> None:
    """os.walk skips what it cannot read; a manifest silently missing files is worse than none."""
    raise DistributorError("invalid_manifest", "cannot list %s: %s" % (exc.filename, exc.strerror or exc))


def _hash_file(root: str, inside: _Inside, path: str) -> tuple[ManifestFile, float]:
    """The file's manifest entry and its modification time (of the target, for a link)."""
    if path == MANIFEST_NAME:
        problem = "is the manifest itself, which cannot list its own hash"
    else:
        problem = publishable_path_problem(path)
    if problem:
        raise DistributorError("invalid_manifest", "%s: cannot list %s in a manifest: it %s" % (
            root, show(path), problem))
    real = _listed_file(inside, path, root)[0]
    hasher = hashlib.sha256()
    size = 0
    for chunk in _read_chunks(real, "invalid_manifest"):
        hasher.update(chunk)
        size += len(chunk)
    return ManifestFile(path, "sha256:" + hasher.hexdigest(), size), _mtime(real, path)


def _mtime(real: str, path: str) -> float:
    try:
        return os.stat(real).st_mtime
    except OSError as exc:
        raise DistributorError("invalid_manifest", "cannot read %s: %s" % (show(path), exc.strerror or exc)) from None


def _write_atomically(where: str, content: bytes) -> None:
    """A publisher reading the bundle meanwhile sees the old manifest or the new, never half.
    The staging name is reserved, so one left by a crash is refused loudly, never listed."""
    staged = None
    try:
        with tempfile.NamedTemporaryFile(dir=os.path.dirname(where), prefix=RESERVED_PREFIX + ".manifest.",
                                         delete=False) as handle:
            staged = handle.name
            handle.write(content)
        os.chmod(staged, 0o644)
        os.replace(staged, where)
    except OSError as exc:
        if staged and os.path.exists(staged):
            os.unlink(staged)
        raise DistributorError("invalid_manifest", "cannot write %s: %s" % (where, exc.strerror or exc)) from None


def ensure_manifest(source_dir: str, *, manifest_id: str, created: str | None, paths: Iterable[str] | None,
                    check_mode: bool) -> dict:
    """The distributor_manifest operation: write manifest.json only when its content changes.

    Without `created` it is derived from the bundle (derive_created), in check mode and in a
    run alike: a play re-run on an unchanged bundle changes nothing, and a check predicts the run.
    """
    where = os.path.join(os.path.abspath(source_dir), MANIFEST_NAME)
    current = None
    if os.path.exists(where):
        try:
            current = parse_manifest(_read_json(where), where)
        except DistributorError:
            current = None
    wanted = build_manifest(source_dir, manifest_id, created, paths, previous=current)
    changed = wanted != current
    if changed and not check_mode:
        write_manifest(source_dir, wanted)
    return {"changed": changed, "manifest": wanted.to_dict(), "path": where}
