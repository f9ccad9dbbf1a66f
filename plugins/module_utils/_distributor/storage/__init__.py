# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Storage backends behind one small interface (see base.Storage)."""
