"""Pull a reward program out of a generator's answer (Eureka's pattern order)."""

from __future__ import annotations

import re

__all__ = ["extract_code"]

_PATTERNS = (r"```python(.*?)```", r"```(.*?)```")


def extract_code(text: str, entry: str = "compute_reward") -> str | None:
    """The first fenced block that defines `entry` (else the first fenced block), or the raw text if it does."""
    blocks = [m.strip() for p in _PATTERNS for m in re.findall(p, text, flags=re.DOTALL)]
    for block in blocks:
        if f"def {entry}" in block:
            return block + "\n"
    if blocks:
        return blocks[0] + "\n"
    return text.strip() + "\n" if f"def {entry}" in text else None
