# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SFTP storage: a directory on an SSH server, over paramiko, every path checked on the way.
"""
