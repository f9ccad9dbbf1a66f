# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan digest: one value for what a run does and what it relies on, so the plan a reviewer
approved in check mode can be required of the real run (`expect_plan_digest`), as Terraform
applies a saved plan.

The canonical form ("facts") is plain data built from the plan and what the shell read, without
the clock: check mode and the real run that follows see the same destination and bundle and so
build the same facts. It holds only this owner's side of a shared root, so another owner
publishing unrelated paths in between changes nothing; every path the run writes, deletes or takes
over carries who managed it before and its recorded digest, so another owner claiming one does.
Every write carries its kind of change too (`create`, `update`, `take_over`, `force_overwrite`,
`repair`):
with `force`, an unmanaged file put at a planned path after the review turns a `create` into a
`force_overwrite`, which overwrites content the reviewer never saw.
"""

from __future__ import annotations

import hashlib
import json
from itertools import chain, repeat
from operator import attrgetter
from typing import Iterator

from ..budget import LISTS, Mapped
from .changes import others_before
from ..errors import DistributorError
from .plan import Plan
from ..records.formats import is_sha256
from ..records.state import Output, OwnerKey, State

# Bumped whenever the canonical form changes, so digests of different forms never compare equal.
PLAN_FORMAT = 2
SHOWN = 5
_by_path = attrgetter("path")


def _source(manifest) -> dict | None:
    return {"id": manifest.id, "digest": manifest.digest, "created": manifest.created} if manifest else None


def _recorded_source(state: State | None, key: OwnerKey) -> dict | None:
    """This owner's recorded source before the run, None when it has no record there."""
    owner = state.owner(key) if state else None
    return _source(owner.manifest) if owner else None


class Records(tuple):
    """Output records in the facts, in path order, written out by `canonical` without their
    timestamps (the clock is not part of a plan). Each is written as json.dumps would write its
    dict of plain values, straight from the record: a republish of 100,000 files would
    otherwise build 100,000 dicts only to serialize them."""


_STRING = json.encoder.encode_basestring_ascii
# json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True), with one encoder.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)
_PIECE = 1024 * 1024
_BATCH = 1000
# The keys of a record in sorted order, as canonical's json.dumps orders them, each written before its value.
_RECORD_KEYS = ('{"attributes":', ',"kind":', ',"owner":', ',"path":', ',"sha256":', ',"size":', ',"source_path":',
                ',"transform":', ',"url":')


def _records_parts(records: Records) -> Iterator[str]:
    """The JSON array json.dumps writes for the records' dicts (ensure_ascii, no whitespace),
    _BATCH records at a time, each field a column formatted by passes that run in C: strings by
    json's own escaping (a source path equal to its path, as every copy's is, escaped once),
    fields of few distinct values (attributes, kind, owner, transform) written once each. A
    batch whose records share those four (a publication of copies) is written by one format per
    record, the shared values in it (_shared_form); any other has every key and value of the
    batch joined by one call."""
    yield "["
    for start in range(0, len(records), _BATCH):
        batch = records[start:start + _BATCH]
        paths, sources = list(map(_path, batch)), list(map(_source_path, batch))
        paths_shown = list(map(_STRING, paths))
        sources_shown = paths_shown if sources == paths else map(_STRING, sources)
        shas, sizes, urls = map(_STRING, map(_sha256, batch)), map(_size, batch), _urls(list(map(_url, batch)))
        first = batch[0]
        if all(map(_same_for_all, repeat(batch), _FEW, repeat(first))):
            text = ",".join(map(_shared_form(first).__mod__, zip(paths_shown, shas, sizes, sources_shown, urls)))
        else:
            values = (_few(batch, _attributes, _attributes_text), _few(batch, _kind, _STRING), _few(batch, _owner, _owner_text),
                      paths_shown, shas, map("%d".__mod__, sizes), sources_shown, _few(batch, _transform, _text_or_null), urls)
            pieces = [piece for pair in zip(map(repeat, _RECORD_KEYS), values) for piece in pair] + [repeat("},")]
            text = "".join(chain.from_iterable(zip(*pieces)))[:-1]
        yield ("," if start else "") + text
    yield "]"


class Writes(Mapped):
    """A publish's writes in the facts: each entry the dict of a write (its path, kind of change
    from `changes`, digest, size, owner and attributes) made when read (explain), and the whole
    written out by `canonical` from the writes' columns (_writes_parts), not a dict a write."""

    def __init__(self, writes: tuple, changes: dict, key: OwnerKey):
        super().__init__(writes, self._entry)
        self.writes, self.changes, self.owner = writes, changes, str(key)

    def _entry(self, write) -> dict:
        return {"path": write.path, "change": self.changes[write.path], "sha256": write.content.sha256,
                "size": write.content.size, "owner": self.owner, "attributes": list(map(list, write.content.attributes))}


def _writes_parts(writes: Writes) -> Iterator[str]:
    """The JSON array json.dumps writes for the writes' dicts, _BATCH writes at a time, by one
    format per write over columns (the owner written in once, kinds of change and attributes
    once per distinct value)."""
    form = '{"attributes":%s,"change":%s,"owner":' + _STRING(writes.owner).replace("%", "%%") + ',"path":%s,"sha256":%s,"size":%d}'
    items = writes.writes
    yield "["
    for start in range(0, len(items), _BATCH):
        batch = items[start:start + _BATCH]
        paths, contents = list(map(_path, batch)), list(map(_content, batch))
        changes = _few(paths, writes.changes.__getitem__, _STRING)
        attributes = _few(contents, _attributes, _attributes_text)
        yield ("," if start else "") + ",".join(map(form.__mod__, zip(
            attributes, changes, map(_STRING, paths), map(_STRING, map(_sha256, contents)), map(_size, contents))))
    yield "]"


def _same_for_all(batch, field, first) -> bool:
    value = field(first)
    return list(map(field, batch)).count(value) == len(batch)


def _shared_form(record: Output) -> str:
    """The format of a record of a batch sharing `record`'s attributes, kind, owner and transform:
    those written in, path, sha256, size, source path and url left to fill."""
    def shared(text: str) -> str:
        return text.replace("%", "%%")
    return "".join((_RECORD_KEYS[0], shared(_attributes_text(record.attributes)), _RECORD_KEYS[1], shared(_STRING(record.kind)),
                    _RECORD_KEYS[2], shared(_owner_text(record.owner)), _RECORD_KEYS[3], "%s", _RECORD_KEYS[4], "%s",
                    _RECORD_KEYS[5], "%d", _RECORD_KEYS[6], "%s", _RECORD_KEYS[7], shared(_text_or_null(record.transform)),
                    _RECORD_KEYS[8], "%s}"))


_path, _source_path, _sha256, _size, _url = map(attrgetter, ("path", "source_path", "sha256", "size", "url"))
_attributes, _kind, _owner, _transform = map(attrgetter, ("attributes", "kind", "owner", "transform"))
_content = attrgetter("content")
_FEW = (_attributes, _kind, _owner, _transform)


def _few(batch, field, text) -> Iterator[str]:
    """The JSON text of `field` of each record, for a field most records share a value of: each
    distinct value written once."""
    values = list(map(field, batch))
    shown = {value: text(value) for value in set(values)}
    return map(shown.__getitem__, values)


def _text_or_null(value: str | None) -> str:
    return "null" if value is None else _STRING(value)


def _attributes_text(attributes: tuple) -> str:
    return "[%s]" % ",".join("[%s,%s]" % (_STRING(name), _STRING(value)) for name, value in attributes)


def _owner_text(owner: OwnerKey) -> str:
    return _STRING(str(owner))


def _urls(urls: list):
    """Each url's JSON text: most records have one (a base URL is set) or none have."""
    if None not in urls:
        return map(_STRING, urls)
    if urls.count(None) == len(urls):
        return repeat("null", len(urls))
    return map(_text_or_null, urls)


def _manager(record: Output | None) -> dict:
    return {"owner": str(record.owner) if record else None, "sha256": record.sha256 if record else None}


def publish_facts(the_plan: Plan, manifest, recovered, changes: list) -> dict:
    """A publish: the decision, the source, this owner's recorded source, every write (with its
    kind of change, from `changes`) and delete, who managed each path it touches, the records it
    leaves for this owner and the outputs an interrupted attempt left that it removes first
    (`recovered`). The entries of writes and paths touched are made as they are read."""
    kinds = {entry["path"]: entry["change"] for entry in changes}
    key = the_plan.owner
    base = the_plan.decision.state
    outputs = the_plan.outputs()
    after_owner = the_plan.after.owner(key) if the_plan.after else None
    touched = {w.path for w in the_plan.writes + the_plan.repairs + the_plan.resettles} | set(the_plan.deletes)
    if others_before(base, key):
        owners = base.owners_by_path()
        touched.update(o.path for o in outputs if o.path in owners and owners[o.path] != key)
    previous = base.by_path() if base and touched else {}
    return {
        "plan_format": PLAN_FORMAT,
        "operation": "publish",
        "action": the_plan.decision.action,
        "bundle_path": the_plan.bundle_path,
        "owner": str(key),
        "source": _source(manifest),
        "recorded_source": _recorded_source(the_plan.before, key),
        "state_mode": the_plan.after.mode if the_plan.after else None,
        "reconciliation": after_owner.reconciliation if after_owner else None,
        "primary_url": the_plan.primary_url,
        "writes": Writes(the_plan.writes + the_plan.repairs + the_plan.resettles, kinds, key),
        "deletes": sorted(the_plan.deletes),
        "managed_before": Mapped(sorted(touched), lambda p: dict(_manager(previous.get(p)), path=p)),
        "outputs": Records(sorted(outputs, key=_by_path)),
        "recovered": sorted(recovered),
    }


def forget_facts(operation: str, bundle_path: str, key: OwnerKey, state: State, owners, forgotten, deleted) -> dict:
    """prune and reconcile-state: the records removed (`forgotten`), the files deleted with them
    (prune: the forgotten ones present) and the owners checked."""
    return {
        "plan_format": PLAN_FORMAT,
        "operation": operation,
        "bundle_path": bundle_path,
        "owner": str(key),
        "recorded_source": _recorded_source(state, key),
        "owners": sorted(str(k) for k in owners),
        "forgets": Records(sorted(forgotten, key=_by_path)),
        "deletes": sorted(deleted),
    }


def canonical_parts(facts: dict) -> Iterator[bytes]:
    """The canonical form in pieces of about _PIECE bytes: sorted keys, no whitespace, ASCII
    escapes (names that are not UTF-8 arrive as lone surrogates and escape the same way every
    time), json.dumps's form, Records included. Each list is written an entry at a time (a list
    made when read, budget.Mapped, makes each entry then), _BATCH entries at a time: the whole
    form of 50,000 writes at once, with json's own pieces of it, was the peak of a publish's memory."""
    pending, size = [], 0
    for part in _parts(facts):
        pending.append(part)
        size += len(part)
        if size >= _PIECE:
            yield "".join(pending).encode("ascii")
            pending, size = [], 0
    yield "".join(pending).encode("ascii")


def _parts(facts: dict) -> Iterator[str]:
    for index, (name, value) in enumerate(sorted(facts.items())):
        yield ("{" if index == 0 else ",") + _STRING(name) + ":"
        if isinstance(value, Records):
            yield from _records_parts(value)
        elif isinstance(value, Writes):
            yield from _writes_parts(value)
        elif isinstance(value, LISTS):
            yield "["
            for start in range(0, len(value), _BATCH):
                yield ("," if start else "") + _ENCODER.encode(list(value[start:start + _BATCH]))[1:-1]
            yield "]"
        else:
            yield _ENCODER.encode(value)
    yield "}" if facts else "{}"


def canonical(facts: dict) -> bytes:
    """The canonical form whole (canonical_parts)."""
    return b"".join(canonical_parts(facts))


def plan_digest(facts: dict) -> str:
    """The `plan_digest` check mode returns and `expect_plan_digest` must repeat: a hash of the
    canonical form, so equal plans give equal digests on any host and Python version."""
    digest = hashlib.sha256()
    for piece in canonical_parts(facts):
        digest.update(piece)
    return "sha256:" + digest.hexdigest()


def check_expected(expected: str | None, facts: dict, digest: str, changes: list) -> None:
    """Refuse a run whose plan is not the approved one, before it touches storage."""
    if expected is None:
        return
    if not is_sha256(expected):
        raise DistributorError("invalid_config", "expect_plan_digest %r is not a plan digest (sha256:<64 lowercase hex>); "
                               "pass the plan_digest a check-mode run returned" % expected)
    if expected != digest:
        raise DistributorError(
            "plan_changed",
            "the approved plan (%s) is not what this run would do (%s): since the plan was made, the destination "
            "changed (its record or files), the bundle differs, or another owner now manages a path the plan "
            "touches. Nothing was written. This run would now: %s. Run check mode again and approve the new plan."
            % (expected, digest, explain(facts)),
            details={"plan_digest": digest, "changes": changes},
        )


def _some(paths) -> str:
    paths = list(paths)
    more = " and %d more" % (len(paths) - SHOWN) if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


def _describe_source(source: dict | None) -> str:
    return "%s (%s, created %s)" % (source["id"], source["digest"], source["created"]) if source else "none"


def explain(facts: dict) -> str:
    """What the run sees, in the words of the plan, so a reviewer can set it beside the approved
    check's `changes`: only the expected digest reaches the run, so which input moved cannot be
    known, but every input the digest covers is named."""
    if facts["operation"] == "fleet_release":
        return "; ".join("destination %s: %s" % (each["id"], explain(each)) for each in facts["destinations"])
    if facts["operation"] == "release":
        return "switch %s from release %s to %s%s, changing the outputs of owners %s%s" % (
            facts["bundle_path"], facts["from"] or "none", facts["to"], " (a rollback)" if facts["rollback"] else "",
            ", ".join(facts["owners"]) or "none", ", then remove releases %s" % _some(facts["clears"]) if facts["clears"] else "")
    parts = []
    if facts["operation"] == "publish":
        parts.append("%s source %s" % (facts["action"], _describe_source(facts["source"])))
    else:
        parts.append("%s of owners %s" % (facts["operation"], ", ".join(facts["owners"]) or "none"))
    parts.append("this owner's recorded source is %s" % _describe_source(facts["recorded_source"]))
    if facts["operation"] == "publish":
        parts.append("write %d path(s)%s" % (len(facts["writes"]), _listed([w["path"] for w in facts["writes"]])))
    else:
        parts.append("forget %d record(s)%s" % (len(facts["forgets"]), _listed([o.path for o in facts["forgets"]])))
    parts.append("delete %d path(s)%s" % (len(facts["deletes"]), _listed(facts["deletes"])))
    others = ["%s (%s)" % (m["path"], m["owner"]) for m in facts.get("managed_before", ())
              if m["owner"] not in (None, facts["owner"])]
    if others:
        parts.append("take over from other owners %s" % _some(others))
    overwritten = [w["path"] for w in facts.get("writes", ()) if w["change"] == "force_overwrite"]
    if overwritten:
        parts.append("overwrite files no record manages %s" % _some(overwritten))
    return "; ".join(parts)


def _listed(paths) -> str:
    return ": " + _some(paths) if paths else ""


def fleet_publish_digest(plans, release) -> str:
    """One digest for the plans of a pipeline released together (the role's fleet_digest filter):
    over each destination's plan digest, by key, and the release id the fleet switches to, so a
    reviewer approves the fleet as one, and a run whose plan changed on any destination, or that
    stages another set of destinations or another release, switches none. ValueError for
    anything but a dict of digests."""
    if not isinstance(plans, dict) or not all(isinstance(value, str) for value in plans.values()):
        raise ValueError("fleet_digest takes a dict of plan digests by destination, not %r" % (plans,))
    return plan_digest({"operation": "fleet_publish", "release": str(release), "plans": {str(key): value for key, value in plans.items()}})
