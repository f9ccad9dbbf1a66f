# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only part of a publish that changes storage: it walks a Plan and nothing else.

Crash safety: before touching anything it records its intent in `.distributor.journal.json`
(the attempt token and the paths it will write). State is written last and atomically, then the
journal is removed. A run that finds a journal left by a dead attempt first deletes that
attempt's staged files and every output it wrote that no state records, so nothing distributor
wrote stays unaccounted for and the next decision sees the root as the last good state left it.
"""

from __future__ import annotations

import json
from functools import partial

from .bundle import READ_CHUNK_SIZE
from .errors import DistributorError
from .journal import Journal
from .paths import JOURNAL_NAME, STATE_NAME, directories, in_the_way, inside_any
from .plan import Plan
from .readahead import read_ahead
from .root import read_state
from .state import serialize_state
from .storage.base import Storage, temp_name


def recovery_deletes(journal: Journal, managed: set, listed: frozenset) -> tuple[list[str], list[str]]:
    """(outputs, staged files) a dead attempt left: what it wrote that no state records. Only
    what the listing shows is deleted, so a name the attempt could never create (too long for
    the filesystem, say) cannot make every later recovery fail. But a path whose directory is
    listed as something else (a link or file put there since) may be hidden, not absent: then
    nothing is deleted and the journal stays, so the attempt's files are found once the
    directory is back."""
    hidden = next((p for p in journal.writes if p not in listed and inside_any(p, listed)), None)
    if hidden is not None:
        raise DistributorError(
            "storage_error",
            "cannot resolve the interrupted publish (attempt %s): %s cannot be looked at, because %s is not a "
            "directory now; put the directory back, then run again" % (journal.token, hidden, sorted(directories((hidden,)) & listed)[0]),
        )
    outputs = [p for p in journal.writes if p not in managed and p in listed]
    staged = [name for name in (temp_name(p, journal.token) for p in journal.writes + (STATE_NAME, JOURNAL_NAME)) if name in listed]
    return outputs, staged


def recover(storage: Storage, journal: Journal, managed: set, listed: frozenset) -> list[str]:
    """Undo what a dead attempt left behind; returns the output paths removed."""
    outputs, staged = recovery_deletes(journal, managed, listed)
    removed = storage.delete_many(outputs)
    storage.delete_many(staged)
    storage.delete(JOURNAL_NAME)
    return removed


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
    journal = Journal(storage.token, tuple(w.path for w in writes + plan.resettles))
    storage.write_bytes(JOURNAL_NAME, json.dumps({"token": journal.token, "writes": journal.writes}).encode("utf-8"))
    try:
        first = in_the_way((w.path for w in writes), plan.deletes)
        storage.delete_many(sorted(first))
        for pages in (False, True):
            group = [w for w in writes if is_page(w.path) == pages]
            if group:
                storage.write_many((w.path, partial(output_chunks, w, bundle)) for w in group)
        _resettle(plan.resettles, storage, bundle)
        storage.delete_many([d for d in plan.deletes if d not in first])
        storage.write_bytes(STATE_NAME, serialize_state(plan.after))
    except BaseException:
        _clean_up(storage, journal)
        raise
    storage.delete(JOURNAL_NAME)


def _resettle(resettles: tuple, storage: Storage, bundle) -> None:
    """New storage settings on outputs whose bytes stay; one that is not the file distributor
    wrote (Storage.resettle) is written again, so the record's digest and settings hold."""
    if resettles:
        again = set(storage.resettle_many((w.path, w.content.sha256, w.content.size) for w in resettles))
        storage.write_many((w.path, partial(output_chunks, w, bundle)) for w in resettles if w.path in again)


def _clean_up(storage: Storage, journal: Journal) -> None:
    """The failed attempt's own recovery, now rather than on the next run, judged like that run
    would judge it: by the state on storage (a state write that failed late may have landed).
    Planned paths no state records count as this attempt's, so force's colliding unmanaged files
    are replaced from the attempt's start. If storage is gone too, the journal stays."""
    try:
        state, state_error = read_state(storage)
        if state_error is None:
            recover(storage, journal, set(state.by_path()) if state else set(), frozenset(storage.list_files()))
    except DistributorError:
        pass
