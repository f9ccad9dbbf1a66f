# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Building a manifest from a bundle directory and writing it as manifest.json.

What is built goes through parse_manifest, and every file is hashed through the same checked
reads a publish uses (bundle.py), so a manifest built here is one Bundle.load accepts.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from datetime import datetime, timezone
from typing import Iterable, Iterator

from .bundle import InsideBundle, listed_file, read_chunks, read_manifest_json
from ..errors import DistributorError
from .manifest import (MANIFEST_NAME, SCHEMA_VERSION, Manifest, ManifestFile, compute_digest, parse_manifest,
                       publishable_path_problem)
from ..paths import RESERVED_PREFIX
from .schemas import show
from ..timestamps import format_rfc3339


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
    inside = InsideBundle(root)
    hashed = [_hash_file(root, inside, path) for path in listed]
    files = tuple(entry for entry, _mtime in hashed)
    if created is None:
        created = derive_created(manifest_id, files, [mtime for _entry, mtime in hashed] or [_mtime(root, root)],
                                 previous)
    manifest = Manifest(SCHEMA_VERSION, manifest_id, compute_digest(files), created, files)
    return parse_manifest(manifest.to_dict(), os.path.join(root, MANIFEST_NAME))


def described(source_dir: str, manifest_id: str, created: str | None = None,
              paths: Iterable[str] | None = None) -> tuple[Manifest, Manifest | None, str]:
    """The bundle as it is now (build_manifest, `created` moving on from the manifest.json it
    has), that manifest.json (None when missing or invalid) and where it is: what
    distributor_manifest writes, and what a publish given `manifest_id` describes in place of
    reading the file, so a check, which writes nothing, publishes what the run will."""
    where = os.path.join(os.path.abspath(source_dir), MANIFEST_NAME)
    current = None
    if os.path.exists(where):
        try:
            current = parse_manifest(read_manifest_json(where), where)
        except DistributorError:
            current = None
    return build_manifest(source_dir, manifest_id, created, paths, previous=current), current, where


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
    """Write `manifest` as the bundle's manifest.json, replacing it whole: apart from
    build_manifest, so check mode can build one and stop there."""
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


def _hash_file(root: str, inside: InsideBundle, path: str) -> tuple[ManifestFile, float]:
    """The file's manifest entry and its modification time (of the target, for a link)."""
    if path == MANIFEST_NAME:
        problem = "is the manifest itself, which cannot list its own hash"
    else:
        problem = publishable_path_problem(path)
    if problem:
        raise DistributorError("invalid_manifest", "%s: cannot list %s in a manifest: it %s" % (
            root, show(path), problem))
    real = listed_file(inside, path, root)[0]
    hasher = hashlib.sha256()
    size = 0
    for chunk in read_chunks(real, "invalid_manifest"):
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
