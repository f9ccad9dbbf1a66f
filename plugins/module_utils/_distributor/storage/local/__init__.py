# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Local storage: a directory on the host that runs the module, reached through directory
descriptors only.
"""
