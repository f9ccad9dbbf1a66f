# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What distributor reads and writes as data: manifests and bundles, state records and their lines,
journals, the configuration, and the JSON Schemas that check them. Pure: no storage, no clock.
"""
