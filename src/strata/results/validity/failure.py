"""The failed flag: no measurement, with the failure's category (errors.FAILURE_CATEGORIES)."""

from __future__ import annotations

from strata.results.flags import Failure

# The tail of a failure's stderr kept in the result: the cause, not the whole log.
FAILURE_STDERR_CHARS = 8000


def failed(category: str, message: str, stderr: str = "") -> Failure:
    """No measurement: `category` from errors.FAILURE_CATEGORIES."""
    return Failure(category, message, stderr[-FAILURE_STDERR_CHARS:])
