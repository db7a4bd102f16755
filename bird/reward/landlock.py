"""Landlock (Linux ≥ 5.13) through raw syscalls: read-only access to a few paths, no TCP bind/connect, no signals
or abstract unix sockets outside the sandbox. Unprivileged; needs no_new_privs set first.

Kernel reference: include/uapi/linux/landlock.h and Documentation/userspace-api/landlock.rst.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["abi_version", "restrict", "LandlockResult"]

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # same number on every architecture
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1

# filesystem rights, by the ABI version that introduced them
_FS_V1 = (1 << 13) - 1  # EXECUTE, WRITE_FILE, READ_FILE, READ_DIR, REMOVE_DIR/FILE, MAKE_CHAR/DIR/REG/SOCK/FIFO/BLOCK/SYM
_FS_BY_ABI = {2: 1 << 13, 3: 1 << 14, 5: 1 << 15}  # REFER, TRUNCATE, IOCTL_DEV
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_IOCTL_DEV = 1 << 15  # ABI 5
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(nr: int, *args: object) -> int:
    ret = _libc.syscall(ctypes.c_long(nr), *args)
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(ret)


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent or disabled."""
    try:
        return _syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError:
        return 0


@dataclass
class LandlockResult:
    abi: int
    filesystem: bool = False  # every filesystem right handled: only the read paths are readable, nothing writable
    network: bool = False  # TCP bind and connect denied
    scoped: bool = False  # signals and abstract unix sockets confined to the sandbox
    read_paths: list[str] = field(default_factory=list)
    device_paths: list[str] = field(default_factory=list)  # read, write and (ABI >= 5) ioctl: GPU device nodes


def _fs_rights(abi: int) -> int:
    rights = _FS_V1
    for since, bit in _FS_BY_ABI.items():
        if abi >= since:
            rights |= bit
    return rights


def _add_rule(ruleset: int, path: str, access: int) -> bool:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False  # a path that does not exist here needs no rule
    try:
        rule = _PathBeneathAttr(access, fd)
        _syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                 ctypes.c_uint32(0))
        return True
    finally:
        os.close(fd)


def restrict(read_paths: Sequence[str], device_paths: Sequence[str] = ()) -> LandlockResult:
    """Restrict this (single-threaded) process: read and map files under `read_paths` only, write nothing except
    the device nodes in `device_paths` (read, write, ioctl: a GPU's), no TCP, no signals outside the sandbox.
    Raises OSError when the kernel refuses; returns what is enforced."""
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available in this kernel")
    attr = _RulesetAttr(_fs_rights(abi), _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0,
                        _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else ctypes.sizeof(_RulesetAttr)
    ruleset = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    result = LandlockResult(abi, True, abi >= 4, abi >= 6)
    try:
        for path in read_paths:
            if _add_rule(ruleset, path, _READ_FILE | _EXECUTE | (_READ_DIR if os.path.isdir(path) else 0)):
                result.read_paths.append(path)
        for path in device_paths:  # character devices only: never a directory or a regular file
            if not os.path.exists(path) or not stat.S_ISCHR(os.stat(path).st_mode):
                continue
            if _add_rule(ruleset, path, _READ_FILE | _WRITE_FILE | (_IOCTL_DEV if abi >= 5 else 0)):
                result.device_paths.append(path)
        _syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return result
