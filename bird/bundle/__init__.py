"""Replay bundles: publish a comparison as one file that anyone can verify and re-run without an API key.

`pack(runs, out)` writes the bundle, `verify(path)` checks it, `replay(path, out)` re-runs its cells from the
recorded LLM answers and compares the results, `unpack(path, dest)` gives its run directories back (what
bird.analysis reads). Format: docs/bundles.md (schema_version 1)."""

from __future__ import annotations

from bird.bundle.archive import SCHEMA_VERSION, BundleError
from bird.bundle.pack import pack
from bird.bundle.reader import Bundle, is_bundle, unpack
from bird.bundle.replay import replay
from bird.bundle.verify import verify

__all__ = ["SCHEMA_VERSION", "Bundle", "BundleError", "is_bundle", "pack", "replay", "unpack", "verify"]
