# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a reviewer reads: the `diff` listings of managed outputs and the state record."""

from __future__ import annotations

from ..records.attributes import describe
from ..limits import UNLIMITED
from ..records.state import Output, State
from ..visible import visible


def listing(state: State | None, where: str, shown: frozenset | None = None, changed: frozenset = frozenset()) -> str:
    """`path  sha256  size  owner  [settings]` per managed output, after a header naming the state record, so
    `--diff` shows added, rewritten and removed paths as changed lines. Every field is made
    `visible` on its own, newlines included: an id or path read from a record cannot start a line
    of its own (one that would pass for an output) or move the cursor over the lines shown.

    With `shown` (paths), only those outputs' lines, then one line counting the others and how
    many of them are among the `changed` paths."""
    if state is None:
        return "# %s: absent\n" % visible(where)
    lines = ["# %s: schema %d, %s, updated %s" % (visible(where), state.schema_version, state.mode, visible(state.updated_at))]
    for owner in state.owners:
        lines.append("# owner %s: source %s created %s (%s), %s" % tuple(visible(str(field)) for field in (
            owner.key, owner.manifest.id, owner.manifest.created, owner.manifest.digest, owner.reconciliation)))
    listed = state.outputs if shown is None else [o for o in state.outputs if o.path in shown]
    lines.extend(
        ("%s  %s  %d  %s  %s" % (visible(o.path), o.sha256, o.size, visible(str(o.owner)), visible(describe(o.attributes)))).rstrip()
        for o in sorted(listed, key=lambda o: o.path)
    )
    hidden = [o for o in state.outputs if o.path not in shown] if shown is not None else []
    if hidden:
        lines.append("# %d more output(s) not shown, %d of them changed" % (len(hidden), sum(1 for o in hidden if o.path in changed)))
    return "\n".join(lines) + "\n"


def diff(before: State | None, after: State | None, where: str, limit: int = UNLIMITED) -> dict:
    """`where` is the state record's full location, so several destinations sharing one bundle
    path stay apart in a reviewer's output. A state with more than `limit` outputs lists the
    paths whose line changes, the first `limit` of them by path, and counts the rest: unchanged
    lines are context a reviewer can do without, and the lines of 50,000 outputs twice are more
    than a job's output can hold."""
    shown, changed = _shown(before, after, limit)
    return {
        "before": listing(before, where, shown, changed),
        "after": listing(after, where, shown, changed),
        "before_header": where,
        "after_header": where,
    }


def _shown(before: State | None, after: State | None, limit: int) -> tuple[frozenset | None, frozenset]:
    """(the paths whose lines are listed, None for all; the paths whose line differs)."""
    old = _lines(before)
    new = _lines(after)
    if limit == UNLIMITED or max(len(old), len(new)) <= limit:
        return None, frozenset()
    changed = frozenset(path for path in old.keys() | new.keys() if old.get(path) != new.get(path))
    return frozenset(sorted(changed)[:limit]), changed


def _lines(state: State | None) -> dict:
    """What an output's listing line shows, by path, without formatting it."""
    return {o.path: _fields(o) for o in state.outputs} if state else {}


def _fields(output: Output) -> tuple:
    return output.sha256, output.size, output.owner, output.attributes
