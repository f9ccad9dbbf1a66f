# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Deletes need proof of authorship: the file itself, not only the record that names it.

A record owned by a trusted account says what distributor wrote (storage.base.untrusted_record),
but the file at a name it records may since have been replaced by another account's: one that
could write the directory renamed a file of its own, or of a third account it can read, over the
output. A publisher running with more rights than that account (root) would then delete or
overwrite a file its owner's own `rm` could not touch. So before a run deletes or writes over a
file, the file there is judged (Storage.doubt_files: a regular file, owned by the publishing
account, storage.owner or storage.trusted_owners, locally with the names distributor made), and
one it cannot vouch for makes the whole run refuse, `unmanaged`, before anything is written:
nothing is deleted or overwritten, the journal included, and check mode refuses the same way.

The judgement is made once, before the act, not again at each delete: whoever can swap a file in
between can write the directory, and so delete or rename the files in it themselves; a run they
race gains them no right they lacked. What the race must not gain them is a file of someone who
cannot write there, and such a file was already there to be judged.
"""

from __future__ import annotations

from typing import Callable

from ..errors import DistributorError
from .guards import first_paths
from .plan import Plan


def overwritten_or_deleted(the_plan: Plan, present: frozenset) -> list[str]:
    """The paths a run of `the_plan` deletes or writes over that the listing shows present
    (a replace's or a takeover's deletes, forced replacement's, writes, repairs and new settings
    on outputs in place): where nothing is, nobody's file is lost. Nothing for a skip."""
    paths = [w.path for w in the_plan.writes + the_plan.repairs + the_plan.resettles]
    paths.extend(the_plan.deletes)
    return sorted({path for path in paths if path in present})


def check_authorship(paths: list[str], doubt_files: Callable[[list[str]], list], where: str, act: str) -> None:
    """The refusal of a run that would `act` on a file at one of `paths` that distributor
    cannot vouch it wrote, as `doubt_files` (Storage.doubt_files) judges them, all at once and
    only when there are any: a skip asks storage nothing. Every such file is named with why,
    grouped by why (the owner, what it is), and counted in the message and in the failure's
    `unvouched` ({path, why} each); nothing is acted on, however many others could be."""
    if not paths:
        return
    unvouched = [(path, why) for path, why in zip(paths, doubt_files(paths)) if why]
    if not unvouched:
        return
    grouped: dict[str, list[str]] = {}
    for path, why in unvouched:
        grouped.setdefault(why, []).append(path)
    named = "; ".join("%s (%s)" % (first_paths(names)[2:], why) for why, names in grouped.items())
    raise DistributorError(
        "unmanaged",
        "%s: %d file(s) %s are not distributor's to touch, so it changed nothing: %s. distributor deletes or writes over "
        "only a regular file of the publishing account, storage.owner or storage.trusted_owners, with the names it made. "
        "If an account that owns one of them publishes to this destination too, name it in storage.trusted_owners; "
        "otherwise find out who put them there, and move them away once you know what they are (docs/untrusted-destinations.md, "
        "records and files of other accounts)"
        % (where, len(unvouched), act, named),
        {"unvouched": [{"path": path, "why": why} for path, why in unvouched]},
    )
