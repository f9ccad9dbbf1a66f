# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bounds on what distributor reads from a destination, on how long a lock outlives its holder, and
on how many entries a list of a result holds.

Anyone with write access to a destination can plant a record of any size or a tree of any
depth; a bound turns that into a clear refusal instead of a MemoryError or a RecursionError.
Each bound is far above what distributor itself ever writes there.
"""

from __future__ import annotations

# The state record: about 500 bytes a record leaves room for 1,000,000 outputs.
STATE_LIMIT = 512 * 1024 * 1024
# The journal names every path one attempt writes: as many as the state, but shorter records.
JOURNAL_LIMIT = 256 * 1024 * 1024
# Bytes of JSON text per array or object, at least, in a record read back or a manifest: the
# densest distributor writes is about one per 45 bytes (a shared root of owners of empty bundles,
# written compactly). Denser text is refused before it is decoded: 512 MiB of `[]` decodes to
# 12 GiB of empty lists, and walking them took minutes.
BYTES_PER_CONTAINER = 32
# The release index (releases.index.py): about 500 bytes a release, and a release's entry goes with
# its generation, so an index holds `keep` good releases and the failed ones of a few runs.
INDEX_LIMIT = 4 * 1024 * 1024
# A lock holds one holder record of a few hundred bytes.
LOCK_LIMIT = 64 * 1024
# Bytes of a symbolic link's target read back (Storage.entry): Linux's PATH_MAX, the most a link holds.
LINK_TARGET_LIMIT = 4096
# Directory levels below a bundle path that a listing descends; deeper is a storage_error.
DEPTH_LIMIT = 256
# Characters of a string read from storage (a lock holder, an owner id) shown back to a user.
SHOWN_LIMIT = 256
# Seconds a lock record stays valid without renewal (the default of `lock.expiry`): a holder that
# died blocks the next publish no longer than this.
LOCK_EXPIRY_SECONDS = 600.0
# Entries each list of a module's result holds unless `result_limit` says otherwise (budget.py):
# a publish of any size with --diff then returns about 250 KB, which AWX keeps as a job event.
RESULT_LIMIT = 100
# `result_limit` (and a list bound given as this): every entry.
UNLIMITED = -1
