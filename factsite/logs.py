"""Logging filters the settings' LOGGING names (kept out of settings.py so it stays settings)."""

import logging


class RefusalsWithoutTraceback(logging.Filter):
    """A request refused with a 4xx (PermissionDenied's 403, BadRequest's 400) is the client's
    doing, yet Django logs it with the exception's traceback: dozens of lines that tell an
    operator nothing and bury the real errors. Such a record keeps its one line; 5xx keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            record.exc_info = record.exc_text = None
        return True
