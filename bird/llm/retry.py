"""One retry policy for every backend: exponential backoff with jitter, Retry-After honoured, capped.

The SDKs' own retries are switched off (max_retries=0 on the client) so this is the only policy. See docs/llm.md.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from bird.llm.base import LLMError

__all__ = ["RetryPolicy", "TransientError", "call_with_retry", "parse_retry_after"]

T = TypeVar("T")


class TransientError(Exception):
    """A fault worth retrying (429, 5xx, overload, connection error, timeout, truncated body).

    :param message: what happened, without secrets.
    :param retry_after: seconds the server asked us to wait (None = not given).
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    # retries after the first attempt (0 = one attempt)
    max_retries: int = 6
    # first backoff (s); doubles each retry
    base_s: float = 1.0
    # longest single wait (s), also caps Retry-After
    cap_s: float = 60.0

    def wait_s(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number `attempt` (0-based): Retry-After if given, else jittered backoff."""
        if retry_after is not None:
            return min(self.cap_s, max(0.0, retry_after))
        backoff = min(self.cap_s, self.base_s * 2**attempt)
        return backoff / 2 + rng.uniform(0.0, backoff / 2)  # "equal jitter"


def call_with_retry(
    fn: Callable[[], T],
    policy: RetryPolicy,
    what: str = "request",
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> tuple[T, int]:
    """Call `fn` until it returns or raises something other than TransientError.

    Returns:
        (result, attempts). Raises LLMError naming `what` and the last fault once the retries are spent.
    """
    rng = rng or random.Random()
    attempt = 0
    while True:
        try:
            return fn(), attempt + 1
        except TransientError as exc:
            if attempt >= policy.max_retries:
                raise LLMError(f"{what} failed after {attempt + 1} attempt(s): {exc}") from None
            sleep(policy.wait_s(attempt, exc.retry_after, rng))
        attempt += 1


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from `retry-after-ms`, or `retry-after` as seconds or an HTTP date; None if absent or unparsable."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
