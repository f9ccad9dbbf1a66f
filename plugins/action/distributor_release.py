# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_release runs in the controller's worker when its host is the controller (plugin_utils/in_controller.py)."""

from __future__ import annotations

from ansible_collections.distributor.core.plugins.plugin_utils.in_controller import ActionModule  # noqa: F401  pylint: disable=unused-import
