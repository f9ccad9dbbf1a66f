# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""S3 storage: a bucket prefix, over boto3.
"""
