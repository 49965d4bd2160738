"""Test suites. Importing this package registers every built-in suite in ``SUITES``."""

from . import otsc_hi, tgbi_hi, winomt_hi  # noqa: F401  (registration)
from .base import ITEM_SCHEMA, SUITES, Subset, Suite

__all__ = ["ITEM_SCHEMA", "SUITES", "Subset", "Suite"]
