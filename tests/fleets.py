# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One release id on every destination of a fleet, for tests of the switch before publishes can
be given one (issue 40, releases.id): each destination's own staged release is renamed to it."""

from __future__ import annotations

import os

INDEX = ".distributor-releases.json"


def adopt_release_id(home: str, own: str, shared: str) -> None:
    """The release `own` in the release home `home` (a local directory) renamed `shared`, in its
    directory and its index, as if its publish had been given that id."""
    os.rename(os.path.join(home, own), os.path.join(home, shared))
    path = os.path.join(home, INDEX)
    with open(path, "rb") as handle:
        data = handle.read()
    with open(path + ".tmp", "wb") as handle:
        handle.write(data.replace(own.encode(), shared.encode()))
    os.replace(path + ".tmp", path)
