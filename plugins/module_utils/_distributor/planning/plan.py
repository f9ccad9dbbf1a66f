# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""From a decision to the exact writes, deletes and state record: pure data, reviewable in check
mode, executed as is. Output rules, links, reconciliation and timestamps live here."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from itertools import repeat
from operator import attrgetter
from typing import Mapping

from ..records.attributes import resettable
from ..records.carried import Carried
from ..records.columns import Row, fields, rows
from ..records.config import Destination, Pipeline
from .decide import Decision
from ..errors import DistributorError
from ..globs import glob_matcher
from ..records.manifest import Manifest
from ..paths import is_reserved, path_problem
from ..records.state import Output, Owner, OwnerKey, State, schema_version_for
from ..timestamps import format_rfc3339
from ..records.transforms import output_kind, output_path
from ..urls import output_url
from ..version import COLLECTION_VERSION
from ..vocabulary import SHARED_ROOT, SINGLE_OWNER

_path, _kind, _source_path, _transform = map(attrgetter, ("path", "kind", "source_path", "transform"))
_sha256, _size, _attributes, _render_key = map(attrgetter, ("sha256", "size", "attributes", "render_key"))


class PlannedOutput(Row, fields("PlannedOutput", "path", "kind", "source_path", "transform")):
    """An output the pipeline rules produce from one manifest file, before its bytes exist. A
    Row: the default pipeline makes one per file of the manifest at once."""

    __slots__ = ()


class Content(Row, fields("Content", "sha256", "size", "data", "attributes", "render_key", "reused",
                          defaults=(None, (), None, False))):
    """The bytes of an output: copies stream from the bundle; generated outputs carry `data` and
    their `render_key`. One whose key equals its record's is `reused`: it carries the record's
    digest and size and no `data` until the shell renders it for a write (publish.pages_rendered).
    Check mode keeps no page's `data` once its digest is taken: it writes none of them. A Row:
    a publish makes one for every planned output."""

    __slots__ = ()


class Write(Row, fields("Write", "path", "source_path", "content")):
    """One output the executor writes: its path, the source file it streams from (for copies),
    and its content. A Row: a first publish makes one for every output."""

    __slots__ = ()


@dataclass(frozen=True)
class Plan:
    """Everything a publish will do, as data: check mode renders it, the plan digest covers it,
    and the executor does exactly this and nothing else."""

    decision: Decision
    owner: OwnerKey
    bundle_path: str
    writes: tuple[Write, ...]
    deletes: tuple[str, ...]
    before: State | None
    after: State | None
    retained: tuple[str, ...]
    repairs: tuple[Write, ...] = ()  # drifted outputs rewritten as they are recorded (drift.py)
    resettles: tuple[Write, ...] = ()  # outputs whose bytes stay and whose storage settings change
    primary_url: str | None = None  # made from a path and links.base_url, never read (plan.primary_url)

    @property
    def changed(self) -> bool:
        """True exactly when executing the plan writes or deletes something (state included)."""
        return bool(self.writes or self.deletes or self.repairs or self.resettles) or self.after != self.before

    def outputs(self) -> tuple[Output, ...]:
        """The records this owner manages once the plan is executed."""
        return self.after.outputs_of(self.owner) if self.after else ()

    def directories_changed(self) -> set[str]:
        """The directories a run of this plan creates, renames or removes files in, relative to
        the bundle path ('' is the bundle path itself, where the state record is written):
        check mode asks storage whether it could (Storage.check_writable)."""
        if not self.changed:
            return set()
        paths = [w.path for w in self.writes + self.repairs + self.resettles] + list(self.deletes)
        return {path.rpartition("/")[0] for path in paths} | {""}


def plan_outputs(manifest: Manifest, pipeline: Pipeline) -> tuple[PlannedOutput, ...]:
    """Every rule that matches a file produces one output; two producing one path is an error.
    A file matching a pipeline `exclude` glob produces none. Each rule's pattern and kind are
    worked out once, not once per file; a copy lands at its source path, which the manifest
    parse has checked already. The default pipeline (copy `**`, nothing excluded) copies every
    file to its own path, which no newline-free path fails to match and no two files share."""
    if not pipeline.exclude and [(rule.match, rule.transform) for rule in pipeline.rules] == [("**", "copy")]:
        paths = sorted(entry.path for entry in manifest.files)
        return rows(PlannedOutput, paths, repeat(output_kind("copy")), paths, repeat("copy"))
    produced: dict[str, PlannedOutput] = {}
    excluded = [glob_matcher(pattern) for pattern in pipeline.exclude]
    rules = [(glob_matcher(rule.match), rule.transform, output_kind(rule.transform)) for rule in pipeline.rules]
    for entry in manifest.files:
        source = entry.path
        if excluded and any(match(source) for match in excluded):
            continue
        for match, transform, kind in rules:
            if match(source) is None:
                continue
            path = output_path(transform, source)
            if path != source and (path_problem(path) or is_reserved(path)):
                raise DistributorError("invalid_config", "pipeline %s: output path %r from %s is not allowed" % (pipeline.id, path, source))
            if path in produced:
                raise DistributorError(
                    "invalid_config",
                    "pipeline %s: %s (%s) and %s (%s) both produce %s; make the output rules disjoint"
                    % (pipeline.id, produced[path].source_path, produced[path].transform, source, transform, path),
                )
            produced[path] = PlannedOutput(path, kind, source, transform)
    return tuple(produced[path] for path in sorted(produced))


def with_data(the_plan: Plan, contents: dict) -> Plan:
    """The plan with the bytes of pages rendered after it was made, for writes whose render was
    reused: the same writes, digests and records, now carrying what the executor puts in place."""
    def filled(writes: tuple) -> tuple:
        return tuple(w._replace(content=contents[w.path]) if w.path in contents else w for w in writes)
    return replace(the_plan, writes=filled(the_plan.writes), repairs=filled(the_plan.repairs),
                   resettles=filled(the_plan.resettles))


def primary_url(paths, patterns, base_url: str | None) -> str | None:
    """The first output (by path) matching a `links.primary` pattern, patterns tried in order:
    the least of a pattern's matches, found by one pass of its matcher over the paths. Without a
    base URL there is no URL to make (output_url), and the paths (100,000 in a large first
    publish, each run through every pattern's matcher) are not matched."""
    if not base_url:
        return None
    for pattern in patterns:
        first = min(filter(glob_matcher(pattern), paths), default=None)
        if first is not None:
            return output_url(base_url, first)
    return None


def _records(planned: tuple, contents_of: list, key: OwnerKey, manifest: Manifest, base_url, created: list, now: str) -> tuple:
    """This owner's new records, in the order of `planned` (with `contents_of` their Contents and
    `created` their `created_at`s), made from their columns at once (columns.rows): a first
    publish of 100,000 copies made a record a call. A copy records no transform; every record
    shares the owner, the source and the clock."""
    paths, kinds = list(map(_path, planned)), list(map(_kind, planned))
    transforms = (map(_generated_transform, kinds, map(_transform, planned)) if "generated" in kinds else repeat(None))
    urls = map(output_url, repeat(base_url), paths) if base_url else repeat(None)
    return rows(Output, paths, kinds, map(_source_path, planned), transforms, urls, map(_sha256, contents_of),
                map(_size, contents_of), created, repeat(now), repeat(key), repeat(manifest.id), repeat(manifest.digest),
                repeat(manifest.created), map(_attributes, contents_of), map(_render_key, contents_of))


def _generated_transform(kind: str, transform: str) -> str | None:
    return transform if kind == "generated" else None


def _upsert_owner(owners: tuple[Owner, ...], owner: Owner) -> tuple[Owner, ...]:
    """The publishing owner's record changes in place; unrelated owners keep theirs, in order."""
    if any(o.key == owner.key for o in owners):
        return tuple(owner if o.key == owner.key else o for o in owners)
    return owners + (owner,)


def plan(
    *,
    decision: Decision,
    key: OwnerKey,
    destination: Destination,
    manifest: Manifest,
    planned: tuple[PlannedOutput, ...],
    contents: dict,
    before: State | None,
    present: frozenset,
    bundle_path: str,
    base_url: str | None,
    now: datetime,
) -> Plan:
    """The complete plan for `decision`; `contents` maps each planned path to its Content and may
    be empty when nothing is written (skip, or a migration of an unchanged source)."""
    stamp = format_rfc3339(now)
    planned_paths = frozenset(map(_path, planned))
    if decision.action == "skip":
        return Plan(decision, key, bundle_path, (), (), before, before, (),
                    primary_url=_kept_primary_url(before, key, planned_paths, destination, base_url))
    base = decision.state
    if not decision.rewrites_outputs:
        made = _kept_primary_url(base, key, planned_paths, destination, base_url)
        owners = tuple(replace(o, primary_url=made) if o.key == key else o for o in base.owners)
        after = replace(base, updated_at=stamp, distributor_version=COLLECTION_VERSION, owners=owners)
        return Plan(decision, key, bundle_path, (), (), before, after, (), primary_url=made)
    shared = destination.shared_root
    previous = base.by_path() if base else {}
    mine = {o.path: o for o in (base.outputs_of(key) if shared else base.outputs)} if base else {}
    omitted = sorted(set(mine) - planned_paths)
    retained = tuple(omitted) if decision.reconciliation == "merge" else ()
    keep_created = shared or decision.reconciliation == "merge"
    paths = list(map(_path, planned))
    contents_of = list(map(contents.__getitem__, paths))
    created = ([_created_at(previous.get(path), keep_created, stamp) for path in paths] if previous and keep_created
               else repeat(stamp))
    records = _records(planned, contents_of, key, manifest, base_url, created, stamp) + tuple(mine[p] for p in retained)
    owner = Owner(key, destination.reconciliation, manifest, primary_url(planned_paths, destination.primary, base_url))
    after = _state_after(base, before, owner, records, planned_paths, shared, stamp)
    writes, resettles = _writes(planned, contents_of, previous, present)
    deletes = _deletes(decision, omitted, planned_paths, present, shared)
    return Plan(decision, key, bundle_path, tuple(writes), deletes, before, after, retained, resettles=tuple(resettles),
                primary_url=owner.primary_url)


def _writes(planned: tuple, contents_of: list, previous: Mapping, present: frozenset) -> tuple[list, list]:
    """The planned outputs written and those resettled: every one written where nothing is
    recorded (a first publish), made by one pass over the columns."""
    if not previous:
        return list(rows(Write, map(_path, planned), map(_source_path, planned), contents_of)), []
    writes, resettles = [], []
    for item, content in zip(planned, contents_of):
        recorded, here = previous.get(item.path), item.path in present
        if not _already_there(recorded, content, here):
            (resettles if _resettled(recorded, content, here) else writes).append(Write(item.path, item.source_path, content))
    return writes, resettles


def _kept_primary_url(state: State, key: OwnerKey, planned_paths: frozenset, destination: Destination,
                      base_url: str | None) -> str | None:
    """The primary URL of a publication whose outputs stay as recorded (skip, a migration of an
    unchanged source): made again from the planned outputs this owner has recorded, not read
    from its record, which anyone who can write the state could have pointed elsewhere. Without
    a base URL there is no URL to make, and the records (100,000 in a large skip) are not looked at."""
    if not base_url:
        return None
    recorded = set(map(_path, state.outputs_of(key)))
    return primary_url(planned_paths & recorded, destination.primary, base_url)


def _created_at(old: Output | None, keep_created: bool, stamp: str) -> str:
    """Merge keeps a rewritten output's `created_at`, and so does a shared root as long as the
    output stays managed; replacement starts it anew."""
    return old.created_at if keep_created and old is not None else stamp


def _deletes(decision: Decision, omitted: list, planned_paths: frozenset, present: frozenset, shared: bool) -> tuple:
    """Replacement deletes this owner's omitted outputs (merge retains them); forced
    replacement of a single-owner root deletes everything else in the bundle path, and in a
    shared root the unmanaged files that are in the way of planned outputs."""
    if decision.action == "force_replace" and not shared:
        return tuple(sorted(present - planned_paths))
    dropped = () if decision.reconciliation == "merge" else omitted
    return tuple(sorted(set(dropped) | (decision.forced - planned_paths)))


def _state_after(base: State | None, before: State | None, owner: Owner, records: tuple, planned_paths: frozenset,
                 shared: bool, stamp: str) -> State:
    """A shared root carries every other owner's records over unchanged (less the paths this
    owner takes over); a single-owner root holds this owner alone."""
    if shared:
        owners = _upsert_owner(base.owners if base else (), owner)
        return State(SHARED_ROOT, schema_version_for(SHARED_ROOT), base.created_at if base else stamp, stamp, None,
                     COLLECTION_VERSION, owners, _carried_over(base, owner.key, planned_paths, records))
    created_at = before.created_at if before is not None and before.mode == SINGLE_OWNER else stamp
    return State(SINGLE_OWNER, schema_version_for(SINGLE_OWNER), created_at, stamp, stamp, COLLECTION_VERSION, (owner,), records)


def _carried_over(base: State | None, key: OwnerKey, planned_paths: frozenset, records: tuple):
    """The other owners' records less the paths this owner plans, then this owner's: carried
    records stay the lines they were read as (carried.Carried.without)."""
    if base is not None and isinstance(base.outputs, Carried):
        return base.outputs.without(key, planned_paths).with_records(records)
    return tuple(o for o in (base.outputs if base else ()) if o.owner != key and o.path not in planned_paths) + records


def _resettled(recorded: Output | None, content: Content, present: bool) -> bool:
    """A managed output whose bytes are the planned ones but whose storage settings changed is
    given the new settings in place (Storage.resettle), no byte written, where the settings allow
    it (attributes.resettable)."""
    return present and recorded is not None and (
        (recorded.sha256, recorded.size) == (content.sha256, content.size) and resettable(recorded.attributes, content.attributes))


def _already_there(recorded: Output | None, content: Content, present: bool) -> bool:
    """A managed output whose recorded digest, size and storage settings equal the planned ones,
    and whose file is present, is not written again: a republish with a few changed files writes
    just those. Its record is still renewed, so `updated_at` keeps saying which publication last
    produced it."""
    return present and recorded is not None and (
        (recorded.sha256, recorded.size, recorded.attributes) == (content.sha256, content.size, content.attributes))
