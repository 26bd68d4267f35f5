"""Which failures of a model's server are worth another try, and how long to wait before it."""

import email.utils
import time

import openai
from tenacity import wait_random_exponential


def retryable(error: BaseException) -> bool:
    """What openai's own client retries: connection errors, timeouts, 408, 409, 429, 5xx."""
    if isinstance(error, openai.APIConnectionError):
        return True
    return isinstance(error, openai.APIStatusError) and (
        error.status_code in (408, 409, 429) or error.status_code >= 500
    )


def backoff(retry_state) -> float:
    """The server's Retry-After when it gives one, else 0.5 s doubling to 4 s, jittered."""
    hinted = _retry_after(retry_state.outcome.exception())
    return hinted if hinted is not None else _JITTERED(retry_state)


_JITTERED = wait_random_exponential(multiplier=0.5, max=4)


def _retry_after(error: BaseException) -> float | None:
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    try:
        if "retry-after-ms" in headers:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        if "retry-after" in headers:
            value = headers["retry-after"]
            if value.strip().isdigit():
                return float(value)
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
    return None
