# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The imperative shell under the operations: a bundle path opened and locked (root), its records
read, and the executor, the one part of a publish that changes storage.
"""
