# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The contract's rules as pure functions over records: who owns what (ownership), what a publish
does (decide), what it writes and deletes (plan), the digest a reviewer approves, the guards.
"""
