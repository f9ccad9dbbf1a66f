# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's version, as every state record it writes names it. A unit test ties it to
galaxy.yml, so a release cannot write records that name the previous one."""

from __future__ import annotations

COLLECTION_VERSION = "0.2.0"
