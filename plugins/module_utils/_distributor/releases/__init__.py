# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release mode: the rules (which release is live, kept, removable), the index, the release home
opened through its link, a generation built and switched to.
"""
