# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads of a source bundle that verify what they return.

Every byte is checked against the manifest while it is read for publishing, so a bundle that
changes mid-publish cannot reach a destination, and no symbolic link leads a read out of the
bundle directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Iterator

from ..errors import DistributorError
from .manifest import DIGEST_MISMATCH, MANIFEST_NAME, Manifest, parse_manifest, short_digest
from ..regular import NotRegularFile, kind_of, open_looked_at, open_regular, open_regular_fd
from .schemas import check_density, show

READ_CHUNK_SIZE = 1024 * 1024  # a chunk or two in memory at a time (see readahead), whatever the file size


class Bundle:
    """A bundle directory whose manifest has been checked; reads of its files verify as they go."""

    def __init__(self, root: str, manifest: Manifest):
        self.root = root
        self.manifest = manifest
        self._inside = InsideBundle(root)
        self._real: dict[str, str] = {}  # where load found each listed file, so a read does not resolve it again

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
            bundle = cls(root, parse_manifest(read_manifest_json(where), where))
        else:
            where = "%s (manifest option)" % root
            bundle = cls(root, _option_manifest(manifest, where))
        bundle._real = bundle._inside.regular_files(bundle.manifest.files, where)
        return bundle

    def chunks(self, path: str) -> Iterator[bytes]:
        """The file's bytes in chunks, hashed while they stream. A file that outgrows its manifest
        size fails at once; size and sha256 are checked after the last chunk, when the consumer
        asks for more, so a writer that drains the iterator before committing never commits a
        file that differs from the manifest."""
        entry = self.manifest.file(path)
        hasher = hashlib.sha256()
        size = 0
        for chunk in read_chunks(self._location(path), "verification_failed", entry.size):
            size += len(chunk)
            if size > entry.size:
                _verify(path, entry, size, hasher)
            hasher.update(chunk)
            yield chunk
        _verify(path, entry, size, hasher)

    def read(self, path: str) -> bytes:
        """The whole verified file, for transforms that need it all at once, and for copies of
        small files: one read, checked before any byte is handed on, costs a fraction of a
        stream of chunks through generators."""
        entry = self.manifest.file(path)
        size = entry.size
        if size >= READ_CHUNK_SIZE:
            return b"".join(self.chunks(path))
        real = self._real.get(path)
        if real is None:
            data = b"".join(read_chunks(self._location(path), "verification_failed", size))
        else:
            data = read_looked_at(real, size)
        hasher = hashlib.sha256(data)
        if len(data) != size or "sha256:" + hasher.hexdigest() != entry.sha256:
            _verify(path, entry, len(data), hasher)
        return data

    def _location(self, path: str) -> str:
        return self._real.get(path) or self._inside.resolve(path, self.root)[0]


def _option_manifest(manifest: dict, where: str) -> Manifest:
    """The publish option parsed like manifest.json. A digest that does not match the files given
    is most often a manifest registered from distributor_manifest, whose result lists only the
    first result_limit files: the message says so, and how to publish without handing it on."""
    try:
        return parse_manifest(manifest, where)
    except DistributorError as error:
        if DIGEST_MISMATCH not in error.message:
            raise
        raise DistributorError(error.reason, "%s; if it is a distributor_manifest result (which lists the first result_limit "
                               "files, see its truncated), give this publish manifest_id with the same id in place of "
                               "manifest, or that task result_limit: -1" % error.message, error.details) from None


def _verify(path: str, entry, size: int, hasher) -> None:
    """The bytes read (`size` of them, hashed by `hasher`) are the manifest's, or the bundle changed."""
    if size > entry.size:
        raise _size_mismatch(path, entry.size, "more than %d bytes" % entry.size)
    if size != entry.size:
        raise _size_mismatch(path, entry.size, "%d bytes" % size)
    actual = "sha256:" + hasher.hexdigest()
    if actual != entry.sha256:
        raise DistributorError("verification_failed", "%s: sha256 mismatch (manifest %s, file %s); %s" % (
            path, short_digest(entry.sha256), short_digest(actual), _CHANGED))


_CHANGED = ("the bundle changed after its manifest was written: when the change is meant, write the manifest again "
            "(distributor_manifest, or the role's distributor_build_manifests: true); when the producer is still "
            "writing, publish once it has finished")


def _size_mismatch(path: str, expected: int, actual: str) -> DistributorError:
    return DistributorError("verification_failed", "%s: size mismatch (manifest %d bytes, file %s); %s" % (
        path, expected, actual, _CHANGED))


def _no_manifest(where: str) -> DistributorError:
    """A missing bundle directory (a mistyped path, an unpacked bundle elsewhere) said as such,
    not as a missing file in it."""
    directory = os.path.dirname(where)
    if directory and not os.path.isdir(directory):
        return DistributorError("invalid_manifest", "the bundle directory %s does not exist (nothing at that path, or not "
                                "a directory); check the bundle path: a bundle is a directory holding manifest.json and the "
                                "files it lists" % directory)
    return DistributorError("invalid_manifest", "%s does not exist; a bundle is a directory holding manifest.json and the "
                            "files it lists (distributor_manifest writes one)" % where)


def read_manifest_json(where: str) -> object:
    """The decoded manifest.json at `where`, or DistributorError(invalid_manifest) saying what is
    wrong with the file itself, before its content is checked (parse_manifest)."""
    try:
        with open_regular(where) as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise _no_manifest(where) from None
    except NotRegularFile as exc:
        raise _not_regular(exc) from None
    except OSError as exc:
        raise DistributorError("invalid_manifest", "cannot read %s: %s" % (where, exc.strerror or exc)) from None
    check_density(raw, where, "invalid_manifest")
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
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen = set()
    for key, _value in pairs:
        if key in seen:
            raise ValueError("key %s appears twice in one object" % show(key))
        seen.add(key)
    return result


class InsideBundle:
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
        """(real location, its lstat or None when it does not exist): one lookup gives callers
        both where to read and, for a file that is no link, its kind and size."""
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

    def regular_files(self, files, where: str) -> dict[str, str]:
        """Where each listed file is (path -> real location), each with listed_file's checks and
        of its listed size. A file in a directory already resolved that lstat finds regular
        needs nothing more: that is one lstat per file, the whole cost of checking a bundle of
        100,000; anything else (a link, a missing file, an error) takes listed_file's way, which
        says what is wrong."""
        found: dict[str, str] = {}
        prefixes: dict[str, str] = {}
        lstat, is_regular = os.lstat, stat.S_ISREG
        for entry in files:
            path = entry.path
            head, _slash, name = path.rpartition("/")
            prefix = prefixes.get(head)
            info = None
            if prefix is not None:
                real = prefix + name
                try:
                    info = lstat(real)
                except OSError:
                    pass
            if info is not None and is_regular(info.st_mode):
                size = info.st_size
            else:
                real, size = listed_file(self, path, where)
                if prefix is None and head in self._dirs:
                    prefixes[head] = os.path.join(self._dirs[head], "")
            if size != entry.size:
                raise _size_mismatch(path, entry.size, "%d bytes" % size)
            found[path] = real
        return found


def listed_file(inside: InsideBundle, path: str, where: str) -> tuple[str, int]:
    """The real location and size of a listed file that exists, inside the bundle, as a
    regular file: the check Bundle.load and build_manifest both make before trusting a path."""
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


def read_chunks(real: str, reason: str, size: int | None = None) -> Iterator[bytes]:
    """A bundle file in READ_CHUNK_SIZE pieces, for verifying (Bundle.chunks) and for hashing
    (build_manifest) alike; `reason` is what a failed read is. A file that stopped being a
    regular file since the manifest was checked (a FIFO swapped in, say) is refused unread, as
    at load: it is the bundle that is wrong, not its bytes.

    With the manifest's `size`, a small file is read with one system call: it asks for one byte
    more than listed, so a file that grew is still seen, and a shorter answer is the end of it.
    Nothing past the first byte over `size` is read: that byte is enough to refuse the file."""
    want = READ_CHUNK_SIZE if size is None or size >= READ_CHUNK_SIZE else size + 1
    try:
        fd = open_regular_fd(real)
        try:
            total = 0
            while True:
                chunk = os.read(fd, want)
                if not chunk:
                    return
                yield chunk
                total += len(chunk)
                if size is not None and (total > size or (total == size and want == size + 1)):
                    return
        finally:
            os.close(fd)
    except OSError as exc:
        raise _unreadable(exc, real, reason) from None


def read_looked_at(real: str, size: int) -> bytes:
    """A small file Bundle.load found regular (under READ_CHUNK_SIZE), read as read_chunks reads
    it, with one read of one byte more than `size`, but opened without a second look at the name
    (regular.open_looked_at) and with no generator: a copy of 10,000 files pays this per file."""
    try:
        fd = open_looked_at(real)
        try:
            data = os.read(fd, size + 1)
            while 0 < len(data) < size:
                more = os.read(fd, size + 1 - len(data))
                if not more:
                    break
                data += more
        finally:
            os.close(fd)
    except OSError as exc:
        raise _unreadable(exc, real, "verification_failed") from None
    return data


def _unreadable(exc: OSError, real: str, reason: str) -> DistributorError:
    """A failed read of a bundle file: `reason`, or invalid_manifest when it is no regular file."""
    if isinstance(exc, NotRegularFile):
        return _not_regular(exc)
    return DistributorError(reason, "cannot read %s: %s" % (real, exc.strerror or exc))


def _not_regular(exc: NotRegularFile) -> DistributorError:
    return DistributorError("invalid_manifest", "%s is %s, not a regular file; a bundle holds only regular files "
                            "(and links to them inside the bundle)" % (exc.filename, exc.kind))
