"""The error a user can fix in their config (every config command prints it and exits 2)."""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A config problem the user can fix; the message names every bad key."""
