# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one check that keeps every storage operation inside the bundle path.

Paths reach storage from manifests, state records and journals, and the last two are read back
from the destination, where others can write. Each parser refuses bad paths with a message
naming its field; this wrapper is the backstop under all of them: root.opened applies it to every
backend, so publish, recovery, a failed attempt's clean-up, reconcile-state and prune cannot
read, write or delete anything but a clean relative path below the bundle path, whatever a
caller forgets.
"""

from __future__ import annotations

from typing import Callable, ContextManager, Iterable

from ..errors import DistributorError
from ..paths import path_problem
from .base import Storage


class ConfinedStorage(Storage):
    """Delegates to `inner` after checking every path it is given."""

    def __init__(self, inner: Storage):
        super().__init__(inner.token)
        self.inner = inner
        self.kind = inner.kind

    def _inside(self, path: str) -> str:
        problem = path_problem(path)
        if problem:
            raise DistributorError(
                "invalid_state",
                "refused to touch %r under %s: it %s, and distributor only reads, writes and deletes "
                "clean relative paths inside the bundle path" % (path, self.inner.describe(), problem),
            )
        return path

    def describe(self, path: str = "") -> str:
        return self.inner.describe(path)

    def read_bytes(self, path: str) -> bytes | None:
        return self.inner.read_bytes(self._inside(path))

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        self.inner.write(self._inside(path), chunks)

    def write_bytes(self, path: str, data: bytes) -> None:
        self.inner.write_bytes(self._inside(path), data)

    def write_many(self, items: Iterable[tuple[str, Callable[[], Iterable[bytes]]]]) -> None:
        self.inner.write_many((self._inside(path), factory) for path, factory in items)

    def delete(self, path: str) -> bool:
        return self.inner.delete(self._inside(path))

    def delete_many(self, paths: Iterable[str]) -> list[str]:
        """Every path is checked before the first is deleted: a bad one deletes nothing."""
        return self.inner.delete_many([self._inside(p) for p in paths])

    def exists(self, path: str) -> bool:
        return self.inner.exists(self._inside(path))

    def list_files(self) -> list[str]:
        return self.inner.list_files()

    def lock(self, *args, **kwargs) -> ContextManager[None]:
        """The lock file's name is the backend's own, never a caller's."""
        return self.inner.lock(*args, **kwargs)

    def close(self) -> None:
        self.inner.close()
