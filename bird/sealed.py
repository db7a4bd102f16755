"""Files bird writes for itself and loads as code later (compiled JAX programs): sealed with an HMAC under a secret
key of this user, so a file planted in the store by anyone else (another user of a shared folder, a copied cache)
is refused, however it hashes its own bytes.

The key is `store-<uid>.key` in the store's root: 32 random bytes, mode 0600, owned by this user, never a link. A key
file that fails any of these is not used: nothing is loaded from the store and nothing is added to it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
import tempfile
from pathlib import Path

__all__ = ["TAG_BYTES", "seal", "unseal", "key_path"]

TAG_BYTES = 32
_KEY_BYTES = 32
_DOMAIN = b"bird-sealed-v1\0"
log = logging.getLogger(__name__)
_WARNED: set[str] = set()


def key_path(root: Path) -> Path:
    """Where this user's key for the store under `root` lives."""
    return Path(root) / f"store-{os.geteuid()}.key"


def _refuse(path: Path, why: str) -> None:
    if str(path) not in _WARNED:
        _WARNED.add(str(path))
        log.warning("bird: %s %s: the compiled-program store is not used (programs are compiled again)", path, why)


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _refuse(path, f"cannot be opened ({exc.strerror})")
        return b""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            _refuse(path, "is not a regular file of this user with mode 0600")
            return b""
        data = os.read(fd, _KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != _KEY_BYTES:
        _refuse(path, f"does not hold {_KEY_BYTES} bytes")
        return b""
    return data


def _key(root: Path, create: bool) -> bytes | None:
    """This user's key for `root` (made when absent and `create`); None when there is none to use."""
    path = key_path(root)
    key = _read_key(path)
    if key is None and create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".key-")  # mode 0600
            try:
                os.write(fd, secrets.token_bytes(_KEY_BYTES))
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, path)  # atomic, and never over an existing file: a racing process's key wins
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        except OSError:
            return None
        key = _read_key(path)
    return key or None


def _tag(key: bytes, label: str, data: bytes) -> bytes:
    return hmac.new(key, _DOMAIN + label.encode() + b"\0" + data, hashlib.sha256).digest()


def seal(root: Path, label: str, data: bytes) -> bytes | None:
    """`data` with its tag in front, bound to `label` (e.g. the file's name); None when there is no usable key."""
    key = _key(root, create=True)
    return None if key is None else _tag(key, label, data) + data


def unseal(root: Path, label: str, blob: bytes) -> bytes | None:
    """The data `seal(root, label, ...)` wrapped, or None (another key, another label, altered, or no key)."""
    key = _key(root, create=False)
    if key is None or len(blob) < TAG_BYTES:
        return None
    data = blob[TAG_BYTES:]
    return data if hmac.compare_digest(blob[:TAG_BYTES], _tag(key, label, data)) else None
