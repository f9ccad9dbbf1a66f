# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only part of a publish that changes storage: it walks a Plan and nothing else.

Crash safety: before touching anything it records its intent in `.distributor.journal.json`
(the attempt token, and each path it will write with the digest and size of what it writes).
State is written last and atomically, then the journal is removed. A run that finds a journal
left by a dead attempt first deletes that attempt's staged files and every output it wrote that
no state records, so nothing distributor wrote stays unaccounted for and the next decision sees
the root as the last good state left it. A journal is read back from where others can write, so
it only proposes: a path is deleted when the file there is the one the entry describes, owned
by distributor's account (Storage.doubt), and what is not stays, named in a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from ..records.bundle import READ_CHUNK_SIZE
from ..errors import DistributorError
from ..records.journal import Entry, Journal, serialize_journal
from ..paths import JOURNAL_NAME, STAGING_PREFIX, STATE_NAME, directories, in_the_way, inside_any, is_staging
from ..planning.plan import Plan
from .readahead import read_ahead
from .root import read_state
from ..records.state import serialize_state
from ..storage.base import Storage, temp_name


@dataclass(frozen=True)
class Leftovers:
    """What interrupted attempts left in a bundle path, judged: recovery deletes only what
    Storage.doubt vouches distributor made. From the journal (attempt `token`): `outputs`, its
    writes that no state records, each the file it wrote there; `staged`, its staged files.
    From the listing: `staging`, empty staging directories of dead attempts. `left` and
    `staging_left` are (path, why) of what stays: a journaled file distributor cannot vouch
    for, a staging directory that is not empty or not its own."""

    token: str | None = None
    outputs: tuple[Entry, ...] = ()
    staged: tuple[str, ...] = ()
    staging: tuple[str, ...] = ()
    left: tuple[tuple[str, str], ...] = ()
    staging_left: tuple[tuple[str, str], ...] = ()

    def deletes(self, the_plan: Plan | None = None) -> list[str]:
        """The leftover outputs recovery deletes before `the_plan` runs: all but those the plan
        writes again with the very bytes the dead attempt put there. Those are replaced by the
        write instead (its journal names them with the same digest), so republishing after a
        killed publish neither deletes and rewrites them nor counts them against the guard.
        Without leftover outputs (no dead attempt: nearly every run) the plan's writes are not
        indexed: a publish asks this up to three times, and a first one has 100,000 writes."""
        if not self.outputs:
            return []
        again = {w.path: w.content.sha256 for w in the_plan.writes} if the_plan else {}
        return [e.path for e in self.outputs if again.get(e.path) != e.sha256]


def find_leftovers(storage: Storage, journal: Journal | None, managed: set, listed: frozenset) -> Leftovers:
    """Leftovers of dead attempts, each judged by Storage.doubt (all asked at once: S3 asks
    them concurrently). Only what the listing shows is considered, so a name the attempt could
    never create (too long for the filesystem, say) cannot make every later recovery fail. But a
    journaled path whose directory is listed as something else (a link or file put there since)
    may be hidden, not absent: then nothing is deleted and the journal stays, so the attempt's
    files are found once the directory is back.

    Under the lock, a staging directory is a dead attempt's: staging directories are made only
    by runs holding the bundle path's lock, and a publish lists before it makes any (a failed
    attempt's clean-up, after it removed its own). rmdir removes only an empty one, so even a
    run that lost its lock meanwhile loses no file."""
    unrecorded, staged, old = [], [], []
    if journal is not None:
        hidden = next((p for p in journal.paths if p not in listed and inside_any(p, listed)), None)
        if hidden is not None:
            raise DistributorError(
                "storage_error",
                "cannot resolve the interrupted publish (attempt %s): %s cannot be looked at, because %s is not a directory "
                "now; put the directory back, then run again" % (journal.token, hidden, sorted(directories((hidden,)) & listed)[0]),
            )
        writes = [e for e in journal.writes if e.path in listed and e.path not in managed]
        unrecorded = [e for e in writes if e.sha256 is not None]
        old = [(e.path, "is named by a journal of an earlier distributor, which recorded no digest") for e in writes if e.sha256 is None]
        staged = [n for n in (temp_name(p, journal.token) for p in journal.paths + (STATE_NAME, JOURNAL_NAME)) if n in listed]
    empty = sorted(p for p in listed if STAGING_PREFIX in p and _staging_of(p) == p)
    asked = [(e.path, e.size, e.sha256) for e in unrecorded] + [(name, None, None) for name in staged + empty]
    why = dict(zip((path for path, _size, _sha256 in asked), storage.doubt_many(asked)))
    removed = frozenset(name for name in staged if why[name] is None)
    full = {_staging_of(p) for p in listed if STAGING_PREFIX in p and p not in removed} - {None, *empty}
    return Leftovers(
        journal.token if journal else None,
        tuple(e for e in unrecorded if why[e.path] is None),
        tuple(sorted(removed)),
        tuple(path for path in empty if why[path] is None),
        tuple(sorted([(path, why[path]) for path in [e.path for e in unrecorded] + staged if why[path]] + old)),
        tuple(sorted([(path, why[path]) for path in empty if why[path]] + [(path, "is not empty") for path in full])),
    )


def _staging_of(path: str) -> str | None:
    """The staging directory `path` lies in, or is; None when none."""
    parts = path.split("/")
    at = next((i for i, part in enumerate(parts) if is_staging(part)), None)
    return None if at is None else "/".join(parts[:at + 1])


def recover(storage: Storage, found: Leftovers, outputs: list[str], journal_stays: bool = False) -> tuple[list, list]:
    """Delete what `found` vouches for: `outputs` (Leftovers.deletes), the staged files and the
    empty staging directories, then the journal, unless `journal_stays`: a plan that rewrites
    some leftovers writes its own journal over it, naming them, so no instant passes with them
    in place and no journal to name them. (outputs removed, staging directories removed)."""
    removed = storage.delete_many(outputs)
    storage.delete_many(found.staged)
    cleared = storage.delete_many(found.staging)
    if found.token is not None and not journal_stays:
        storage.discard(JOURNAL_NAME)
    return removed, cleared


def output_chunks(write, bundle):
    """The bytes a write puts in place: rendered ones as they are, small copies read (and
    verified) at once, larger ones streamed (and verified) from the bundle."""
    if write.content.data is not None:
        return [write.content.data]
    if write.content.size < READ_CHUNK_SIZE:
        return [bundle.read(write.source_path)]
    return read_ahead(bundle.chunks(write.source_path))


def is_page(path: str) -> bool:
    """HTML outputs are what readers open; everything else is what pages reference."""
    return path.lower().endswith((".html", ".htm"))


def execute(plan: Plan, storage: Storage, bundle) -> None:
    """Writes (assets, then pages), then new settings on outputs whose bytes stay, then deletes,
    then state; on failure removes only what this attempt created.

    Every non-HTML output is in place before the first page is, so a reader who opens a new page
    during the publish finds the images and stylesheets it references.

    The contract's replace reads "delete, then write": that is the end state. Writing first
    means a write that fails (a tampered source, a full disk) leaves every old output in place.
    Only a delete that clears the way for a write (a file where a directory now goes, or a file
    inside a directory where a file now goes) runs first.
    """
    writes = plan.writes + plan.repairs
    if not (writes or plan.deletes or plan.resettles):
        storage.write_bytes(STATE_NAME, serialize_state(plan.after))
        return
    journal = Journal(storage.token, tuple(Entry(w.path, w.content.sha256, w.content.size) for w in writes + plan.resettles))
    storage.write_bytes(JOURNAL_NAME, serialize_journal(journal))
    try:
        first = in_the_way((w.path for w in writes), plan.deletes)
        storage.delete_many(sorted(first))
        assets, pages = [], []
        for w in writes:
            (pages if is_page(w.path) else assets).append(w)
        for group in (assets, pages):
            if group:
                storage.write_many([(w.path, partial(output_chunks, w, bundle)) for w in group])
        _resettle(plan.resettles, storage, bundle)
        storage.delete_many([d for d in plan.deletes if d not in first])
        storage.write_bytes(STATE_NAME, serialize_state(plan.after))
    except BaseException:
        _clean_up(storage, journal)
        raise
    storage.discard(JOURNAL_NAME)


def _resettle(resettles: tuple, storage: Storage, bundle) -> None:
    """New storage settings on outputs whose bytes stay; one that is not the file distributor
    wrote (Storage.resettle) is written again, so the record's digest and settings hold."""
    if resettles:
        again = set(storage.resettle_many((w.path, w.content.sha256, w.content.size) for w in resettles))
        storage.write_many((w.path, partial(output_chunks, w, bundle)) for w in resettles if w.path in again)


def _clean_up(storage: Storage, journal: Journal) -> None:
    """The failed attempt's own recovery, now rather than on the next run, judged like that run
    would judge it: by the state on storage (a state write that failed late may have landed) and
    by what is at each planned path. A planned path no state records is deleted only when it
    holds what this attempt wrote, so a file force was to replace stays until a write replaced
    it. If storage is gone too, the journal stays."""
    try:
        state, state_error = read_state(storage)
        if state_error is None:
            found = find_leftovers(storage, journal, set(state.by_path()) if state else set(), frozenset(storage.list_files()))
            recover(storage, found, found.deletes())
    except DistributorError:
        pass
