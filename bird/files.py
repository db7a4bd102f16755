"""Files bird writes and reads back, opened safely (docs/security.md, "Trust boundary").

Writes go through a temporary file made with `mkstemp` in the target's folder (`O_EXCL`, `O_NOFOLLOW`: never an
existing name or a planted link) and an atomic rename (a link at the target is replaced, not followed), fsynced
when asked (`durable`); a file changed in place (a lock, an append-only log) is opened with `O_NOFOLLOW` and must
be a regular file with one link. Reads take regular files only (no FIFO, device or link that leaves the directory),
up to a size cap per kind (`LIMITS`); JSON and YAML are parsed with bounded depth, string length and integer digits,
an `.npz` without pickles and with its uncompressed size under the cap. `refuse_links_leaving` refuses a run
directory holding a link that points outside it. One helper for every file bird reads back: docs/security.md.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["UnsafeFileError", "BoundedParseError", "LIMITS", "MAX_DEPTH", "MAX_STRING", "MAX_INT_DIGITS",
           "atomic_writer", "write_json", "write_text", "write_bytes", "append_text", "open_in_place", "read_bytes",
           "read_text", "copy_file", "read_json", "loads", "loads_lines", "load_yaml", "load_npz", "links_leaving",
           "refuse_links_leaving"]

# the most bytes bird reads from one file of each kind that another person may have written
LIMITS = {
    "status": 1 << 20,           # status.json
    "record": 16 << 20,          # candidate.json, episode<k>.json, environment.json, the leak audit's records
    "result": 64 << 20,          # result.json
    "config": 4 << 20,           # multirun.yaml, a received config.yaml
    "table": 64 << 20,           # epic.csv
    "text": 16 << 20,            # reward.py and config.yaml copied to the leaderboard, reward.py scored by EPIC
    "media": 512 << 20,          # a clip copied to the leaderboard, a file packed into a bundle
    "journal": 256 << 20,        # llm_calls.jsonl (about 350 bytes a call: 750,000 calls)
    "answer": 16 << 20,          # one response-cache entry (a request's messages and its answer, as text)
    # search_state.json. Measured at budget=smoke: 7.8 MB for grace on Meta-World reach (its 32 demonstrations are
    # the bulk), 0.19 MB for card on Hopper; CARD's trajectory store adds about 0.9 KB a stored Meta-World step
    # (about 18 MB at budget=paper, 0.2 GB with CARD's 100-episode store)
    "checkpoint": 1 << 30,
    "executable": 512 << 20,     # a sealed JAX store file (a .program of the CPU PPO program: 8.1 MiB)
    "arrays": 1 << 30,           # policy.npz, an EPIC dataset (uncompressed size of all members counts)
}
MAX_DEPTH = 64           # nesting of JSON arrays and objects
MAX_STRING = 4 << 20     # characters of one JSON string (a key or a value)
MAX_INT_DIGITS = 30      # digits of one JSON integer (a float of 1e30 still converts; 10**400 would not)


@functools.cache
def _umask() -> int:
    """This process's umask, read without setting it (a walled process may not call umask(2)): /proc/self/status,
    else the usual 022."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


class UnsafeFileError(OSError):
    """A file or directory bird refuses to open: a link, not a regular file, or over its size cap."""


class BoundedParseError(ValueError):
    """JSON or YAML nested too deep, with a string too long, an integer of too many digits, or a YAML alias."""


# --- writes ---------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def atomic_writer(path: Path, durable: bool = False, mode: int | None = None) -> Iterator[BinaryIO]:
    """`with atomic_writer(path) as fh:` a binary file that replaces `path` when the block ends without an error:
    a reader never sees half a file, and a link at `path` or at the temporary name is never followed (the link
    itself is replaced). On an error the temporary file is removed and `path` is left as it was.

    :param durable: fsync the file before the rename and the folder after it (a checkpoint: the old or the new file
        after a power cut, never an empty one).
    :param mode: the file's permissions (default: what a plain open() gives under the umask, not mkstemp's 0600).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask() if mode is None else mode)
        with os.fdopen(fd, "wb") as fh:
            yield fh
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def write_bytes(path: Path, data: bytes, durable: bool = False, mode: int | None = None) -> None:
    """Atomic write (atomic_writer)."""
    with atomic_writer(path, durable, mode) as fh:
        fh.write(data)


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=1, default=str) + "\n")


def open_in_place(path: Path, flags: int) -> int:
    """A descriptor of `path` (created when `flags` has O_CREAT) for a file changed in place: refused when it is a
    link, not a regular file, or has another hard link."""
    fd = _open_nofollow(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise UnsafeFileError(f"{path} is not a plain file (a {_kind_of(st.st_mode)} with {st.st_nlink} "
                                  "link(s)); refusing to write to it")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def append_text(path: Path, text: str) -> None:
    """Append `text` to `path` (an append-only log), never through a link."""
    fd = open_in_place(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        view = memoryview(text.encode("utf-8"))
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _open_nofollow(path: Path, flags: int, mode: int = 0o666) -> int:
    try:
        return os.open(path, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last component is a link
            raise UnsafeFileError(f"{path} is a link; refusing to open it") from None
        raise


def _kind_of(mode: int) -> str:
    kinds = [(stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"),
             (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"), (stat.S_ISREG, "regular file")]
    return next((name for test, name in kinds if test(mode)), "special file")


# --- reads ----------------------------------------------------------------------------------------------------
def read_bytes(path: Path, kind: str, root: Path | None = None, limit: int | None = None) -> bytes:
    """The content of the regular file `path`, at most LIMITS[kind] bytes (or `limit`).

    Refused (UnsafeFileError, an OSError): a link whose target lies outside `root` (default: the file's folder),
    a FIFO, device, socket or directory, a file over the cap. A missing file raises FileNotFoundError.
    """
    path, cap = Path(path), LIMITS[kind] if limit is None else limit
    base = os.path.realpath(root if root is not None else path.parent)
    real = os.path.realpath(path)
    if os.path.commonpath([base, real]) != base:
        raise UnsafeFileError(f"{path} is a link that leaves {root or path.parent} (to {real}); refusing to read it")
    fd = _open_nofollow(Path(real), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"{path} is not a regular file (a {_kind_of(st.st_mode)}); refusing to read it")
        if st.st_size > cap:
            raise UnsafeFileError(f"{path} is {st.st_size} bytes; a {kind} file may hold at most {cap} bytes")
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= cap and (chunk := os.read(fd, min(1 << 20, cap + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > cap:
        raise UnsafeFileError(f"{path} grew past {cap} bytes while read; a {kind} file may hold at most {cap} bytes")
    return b"".join(chunks)


def copy_file(src: Path, dst: Path, kind: str, root: Path | None = None) -> None:
    """Copy the regular file `src` (read as read_bytes reads it: inside `root`, at most LIMITS[kind] bytes) to
    `dst` (written atomically)."""
    write_bytes(dst, read_bytes(src, kind, root))


def read_text(path: Path, kind: str, root: Path | None = None, limit: int | None = None) -> str:
    """read_bytes decoded as UTF-8 (UnicodeDecodeError, a ValueError, when it is not)."""
    return read_bytes(path, kind, root, limit).decode("utf-8")


def read_json(path: Path, kind: str, root: Path | None = None, max_string: int = MAX_STRING) -> Any:
    """read_bytes parsed by `loads` (bounded); ValueError when it is not JSON or exceeds a bound."""
    return loads(read_bytes(path, kind, root), max_string)


def loads(text: str | bytes, max_string: int = MAX_STRING) -> Any:
    """json.loads with bounds: nesting at most MAX_DEPTH, strings at most `max_string` characters (a checkpoint's
    arrays are long strings), integers at most MAX_INT_DIGITS digits. Raises BoundedParseError (a ValueError)
    beyond them, ValueError when it is not JSON."""
    try:
        obj = json.loads(text, parse_int=_bounded_int)
    except RecursionError:
        raise BoundedParseError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    _check_bounds(obj, max_string)
    return obj


def loads_lines(text: str | bytes) -> list[Any]:
    """Each non-blank line of JSON lines parsed by `loads`; the ValueError names the line (1-based). Lines end at
    `\\n` only: a JSON string may hold U+2028, U+2029 or U+0085 unescaped, which str.splitlines would cut at."""
    lines = text.decode("utf-8") if isinstance(text, bytes) else text
    out = []
    for n, line in enumerate(lines.split("\n"), 1):
        if line.strip():
            try:
                out.append(loads(line))
            except ValueError as exc:
                raise (BoundedParseError if isinstance(exc, BoundedParseError) else ValueError)(
                    f"line {n}: {exc}") from None
    return out


def load_npz(path: Path, kind: str, root: Path | None = None) -> dict[str, Any]:
    """{name: array} of an `.npz` read as read_bytes reads it, without pickles (allow_pickle=False) and with its
    members' uncompressed sizes at most LIMITS[kind] together (a small compressed file cannot expand in memory).
    Raises UnsafeFileError (an OSError) or ValueError (not an npz, an object array, over the cap)."""
    import io
    import zipfile

    import numpy as np

    data, cap = read_bytes(path, kind, root), LIMITS[kind]
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            size = sum(info.file_size for info in zf.infolist())
    except zipfile.BadZipFile as exc:
        raise ValueError(f"{path} is not an .npz ({exc})") from None
    if size > cap:
        raise ValueError(f"{path} holds {size} bytes uncompressed; a {kind} file may hold at most {cap}")
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return {name: z[name] for name in z.files}


def load_yaml(text: str) -> Any:
    """yaml.safe_load with the bounds of `loads` and without aliases (no billion-laughs expansion); nothing in it is
    resolved (an `${oc.env:...}` stays a string). Raises BoundedParseError or ValueError (not YAML)."""
    import yaml

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise BoundedParseError("a YAML alias (bird does not read aliases in files it receives)")
            return super().compose_node(parent, index)

    try:
        data = yaml.load(text, Loader=NoAliases)  # a SafeLoader
    except RecursionError:
        raise BoundedParseError(f"YAML nested deeper than {MAX_DEPTH} levels") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML ({str(exc)[:200]})") from None
    _check_bounds(data)
    return data


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise BoundedParseError(f"a JSON integer of {len(digits.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(digits)


def _check_bounds(obj: Any, max_string: int = MAX_STRING) -> None:
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            if len(node) > max_string:
                raise BoundedParseError(f"a JSON string of {len(node)} characters (at most {max_string})")
            continue
        if not isinstance(node, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise BoundedParseError(f"JSON nested deeper than {MAX_DEPTH} levels")
        items = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        stack.extend((item, depth + 1) for item in items)


# --- directories ----------------------------------------------------------------------------------------------
def links_leaving(root: Path) -> list[str]:
    """`name -> target` of every symbolic link at or below `root` whose target (resolved, existing or not) lies
    outside `root`, sorted; links within `root` are allowed."""
    root = Path(root)
    base = os.path.realpath(root)
    found = []
    for here, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = os.path.join(here, name)
            if os.path.islink(path) and os.path.commonpath([base, os.path.realpath(path)]) != base:
                found.append(f"{os.path.relpath(path, root)} -> {os.readlink(path)}")
    return sorted(found)


def refuse_links_leaving(root: Path, what: str = "run directory") -> None:
    """Raise UnsafeFileError naming the links (at most five) when the directory `root` holds any that leave it."""
    found = links_leaving(root) if Path(root).is_dir() else []
    if found:
        shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
        raise UnsafeFileError(f"{root}: the {what} holds links that leave it ({shown}); bird writes only into a "
                              "directory whose links stay inside it: remove them, or choose another directory")
