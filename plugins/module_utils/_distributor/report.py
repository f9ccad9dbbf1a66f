# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a reviewer reads: the `diff` listings of managed outputs and the state record."""

from __future__ import annotations

from .attributes import describe
from .state import State
from .visible import visible


def listing(state: State | None, where: str) -> str:
    """`path  sha256  size  owner  [settings]` per managed output, after a header naming the state record, so
    `--diff` shows added, rewritten and removed paths as changed lines. Every field is made
    `visible` on its own, newlines included: an id or path read from a record cannot start a line
    of its own (one that would pass for an output) or move the cursor over the lines shown."""
    if state is None:
        return "# %s: absent\n" % visible(where)
    lines = ["# %s: schema %d, %s, updated %s" % (visible(where), state.schema_version, state.mode, visible(state.updated_at))]
    for owner in state.owners:
        lines.append("# owner %s: source %s created %s (%s), %s" % tuple(visible(str(field)) for field in (
            owner.key, owner.manifest.id, owner.manifest.created, owner.manifest.digest, owner.reconciliation)))
    lines.extend(
        ("%s  %s  %d  %s  %s" % (visible(o.path), o.sha256, o.size, visible(str(o.owner)), visible(describe(o.attributes)))).rstrip()
        for o in sorted(state.outputs, key=lambda o: o.path)
    )
    return "\n".join(lines) + "\n"


def diff(before: State | None, after: State | None, where: str) -> dict:
    """`where` is the state record's full location, so several destinations sharing one bundle
    path stay apart in a reviewer's output."""
    return {
        "before": listing(before, where),
        "after": listing(after, where),
        "before_header": where,
        "after_header": where,
    }
