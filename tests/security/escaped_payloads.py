"""What a program could do had it escaped every Python-level wall: real builtins and any module, with the sandbox's
OS layers only. Run as the worker's entry module (sandbox.WorkerProcess(module="escaped_payloads")): it applies
the same layers through bird.reward.worker.start(), then runs one named attempt and reports what happened.
Every attempt must be stopped by the operating system; the driver also watches the host for side effects."""

from __future__ import annotations

import ctypes
import mmap
import os
import resource
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from bird.reward.worker import start

ATTEMPTS: dict[str, Callable[[dict[str, Any]], Any]] = {}
LANGUAGE = {"thread_bomb": "jax"}  # payloads run in a worker of another language than numpy (jax: threads allowed)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def attempt(fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    ATTEMPTS[fn.__name__] = fn
    return fn


def _sys(nr: int, *args: Any) -> int:
    ret = _libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(ret)


# -- processes ---------------------------------------------------------------------------------------------------
@attempt
def fork(t):
    pid = os.fork()
    if pid == 0:
        open(f"{t['sentinel']}/forked", "w").close()
        os._exit(0)
    return pid


@attempt
def daemon(t):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            import time

            time.sleep(30)
            os._exit(0)
        os._exit(0)


@attempt
def subprocess_shell(t):
    return subprocess.run(["/bin/sh", "-c", f"touch {t['sentinel']}/shell"], check=True)


@attempt
def execve_shell(t):
    os.execv("/bin/sh", ["sh", "-c", f"touch {t['sentinel']}/exec"])


@attempt
def raw_clone_process(t):
    pid = _sys(56, signal.SIGCHLD, 0, 0, 0, 0)  # clone(SIGCHLD): a fork-like process
    if pid == 0:
        os._exit(0)
    return pid


@attempt
def clone3(t):
    args = (ctypes.c_uint64 * 11)()
    args[4] = signal.SIGCHLD  # exit_signal
    pid = _sys(435, ctypes.byref(args), ctypes.sizeof(args))
    if pid == 0:
        os._exit(0)
    return pid


@attempt
def start_thread(t):
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()


@attempt
def thread_bomb(t):
    """Threads until the kernel refuses (in a jax worker, which may start threads): it must stop at the worker's
    own task limit, far below the machine's pid space."""
    event, started = threading.Event(), 0
    try:
        while started < 100_000:
            threading.Thread(target=event.wait, daemon=True).start()
            started += 1
    except RuntimeError as exc:
        raise RuntimeError(f"{started} threads started, then: {exc}") from None
    finally:
        event.set()
    return started


@attempt
def unshare_user_namespace(t):
    if _libc.unshare(ctypes.c_int(0x10000000)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@attempt
def setuid_root(t):
    os.setuid(0)


# -- files ---------------------------------------------------------------------------------------------------------
@attempt
def write_new_file(t):
    with open(f"{t['sentinel']}/written", "w") as fh:
        fh.write("escaped")


@attempt
def overwrite_victim_through_mmap(t):
    fd = os.open(t["victim"], os.O_RDWR)
    with mmap.mmap(fd, 0) as mm:
        mm[:6] = b"PWNED!"


@attempt
def truncate_victim(t):
    os.truncate(t["victim"], 0)


@attempt
def open_victim_for_writing(t):
    open(t["victim"], "wb").close()  # O_TRUNC: empties it even under RLIMIT_FSIZE=0


@attempt
def plant_a_stored_training_program(t):
    """A compile step's stored output that later trainers of the shape would load (StoredPrograms in
    bird/learners/jax_executables.py): replace one in the JAX store the trainer reads, or write a new one there."""
    root = os.environ.get("BIRD_JAX_CACHE") or os.path.expanduser("~/.cache/bird/jax")
    stores = [f"{root}/{d}/executables" for d in sorted(os.listdir(root)) if os.path.isdir(f"{root}/{d}/executables")]
    store = stores[0] if stores else root
    existing = sorted(f for f in os.listdir(store) if f.endswith(".program"))
    with open(f"{store}/{existing[0] if existing else 'planted.program'}", "wb") as fh:
        fh.write(bytes(32) + b"planted")


@attempt
def unlink_victim(t):
    os.unlink(t["victim"])


@attempt
def rename_victim(t):
    os.rename(t["victim"], t["victim"] + ".moved")


@attempt
def make_directory(t):
    os.mkdir(f"{t['sentinel']}/newdir")


@attempt
def symlink_into_sentinel(t):
    os.symlink("/etc/passwd", f"{t['sentinel']}/link")


@attempt
def chmod_victim(t):
    os.chmod(t["victim"], 0o777)


@attempt
def read_etc_passwd(t):
    with open("/etc/passwd") as fh:
        return fh.read(200)


@attempt
def list_root_directory(t):
    return os.listdir("/")


@attempt
def open_controlling_tty(t):
    open("/dev/tty", "w").close()


@attempt
def memfd_create(t):
    return os.memfd_create("payload")


# -- secrets -------------------------------------------------------------------------------------------------------
@attempt
def read_host_environ(t):
    with open(f"/proc/{t['host_pid']}/environ", "rb") as fh:
        return fh.read()


@attempt
def read_host_memory(t):
    found = []
    with open(f"/proc/{t['host_pid']}/maps") as maps, open(f"/proc/{t['host_pid']}/mem", "rb") as mem:
        for line in maps:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            try:
                mem.seek(lo)
                chunk = mem.read(min(hi - lo, 1 << 22))
            except OSError:
                continue
            if b"CANARY" in chunk.upper():
                i = chunk.upper().index(b"CANARY")
                found.append(chunk[max(0, i - 40): i + 60])
    return found


@attempt
def read_decoy_environ(t):
    with open(f"/proc/{t['decoy_pid']}/environ", "rb") as fh:
        return fh.read()


@attempt
def process_vm_readv(t):
    buf = ctypes.create_string_buffer(64)
    local = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 64)
    remote = (ctypes.c_void_p * 2)(0x400000, 64)
    return _sys(310, t["host_pid"], ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)


@attempt
def ptrace_attach_host(t):
    return _sys(101, 16, t["host_pid"], 0, 0)  # ptrace(PTRACE_ATTACH, host)


# -- metadata (Landlock governs opening files, not stat/readlink; the namespaces hide them) --------------------------
@attempt
def stat_host_file(t):
    st = os.stat(t["victim"])
    return st.st_size, st.st_uid, st.st_mtime


@attempt
def readlink_host_cwd(t):
    return os.readlink(f"/proc/{t['host_pid']}/cwd")


@attempt
def stat_host_process(t):
    return os.stat(f"/proc/{t['host_pid']}").st_uid


@attempt
def stat_through_init_root(t):
    """The namespace's init forked before the tree: its /proc/1/root and /proc/1/cwd are the host's."""
    return os.stat(f"/proc/1/root{t['victim']}").st_size, os.readlink("/proc/1/cwd")


@attempt
def escape_tree_through_a_descriptor(t):
    """A directory descriptor left open from before pivot_root would lead back to the host's tree (openat "..")."""
    import stat

    found = []
    for fd in range(64):
        try:
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                found.append((fd, os.listdir(fd)[:5]))
        except OSError as exc:
            error = exc
    if found:
        return found
    raise error


@attempt
def enumerate_processes(t):
    """pids and process groups of the machine through getpgid (allowed: the worker asks its own), all but 1 (any
    machine's init) and itself: the last refusal is raised when no other process is visible."""
    seen, error = [], None
    for pid in range(2, 65536):
        if pid == os.getpid():
            continue
        try:
            seen.append((pid, os.getpgid(pid)))
        except OSError as exc:
            error = exc
    if seen or error is None:
        return seen[:20]
    raise error


# -- signals -------------------------------------------------------------------------------------------------------
@attempt
def kill_host(t):
    os.kill(t["host_pid"], signal.SIGKILL)


@attempt
def stop_host(t):
    os.kill(t["host_pid"], signal.SIGSTOP)


@attempt
def kill_decoy(t):
    os.kill(t["decoy_pid"], signal.SIGKILL)


@attempt
def kill_host_process_group(t):
    os.killpg(os.getpgid(t["host_pid"]), signal.SIGKILL)


@attempt
def probe_signal_everyone(t):
    os.kill(-1, 0)  # signal 0: a permission probe that harms nobody if it succeeds


@attempt
def pidfd_signal_host(t):
    fd = _sys(434, t["host_pid"], 0)  # pidfd_open
    return _sys(424, fd, signal.SIGKILL, 0, 0)  # pidfd_send_signal


# -- network -------------------------------------------------------------------------------------------------------
@attempt
def tcp_connect_loopback(t):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as conn:
        conn.connect(("127.0.0.1", t["port"]))
        conn.sendall(b"escaped")


@attempt
def udp_send_loopback(t):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"escaped", ("127.0.0.1", t["udp_port"]))


@attempt
def abstract_unix_socket(t):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect("\0" + t["unix"])


# -- the kernel and the sandbox itself -----------------------------------------------------------------------------
@attempt
def io_uring_setup(t):
    params = (ctypes.c_uint8 * 120)()
    return _sys(425, 8, ctypes.byref(params))


@attempt
def mount_tmpfs(t):
    if _libc.mount(b"none", t["sentinel"].encode(), b"tmpfs", 0, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@attempt
def bpf_syscall(t):
    return _sys(321, 0, 0, 0)


@attempt
def raise_cpu_limit(t):
    resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


@attempt
def lower_file_limit(t):
    resource.setrlimit(resource.RLIMIT_NOFILE, (8, 8))  # harmless, but only RLIMIT_CPU may be set


@attempt
def make_itself_dumpable(t):
    if _libc.prctl(4, 1, 0, 0, 0) != 0:  # PR_SET_DUMPABLE 1
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@attempt
def forge_result_frames(t):
    import json
    import struct

    fake = json.dumps({"ok": True, "outcome": "completed", "seq": 10**6}).encode()
    os.write(t["result_fd"], struct.pack("<I", len(fake)) + fake + struct.pack("<Q", 1 << 40))
    return "forged"


def main(result_fd: int) -> None:
    session, _ = start(result_fd)
    header, _ = session.recv()
    targets = {**header["targets"], "result_fd": result_fd}
    try:
        value = ATTEMPTS[header["attempt"]](targets)
        reply = {"ok": True, "outcome": "completed", "value": repr(value)[:300]}
    except BaseException as exc:  # noqa: BLE001 - what stopped it is the result
        reply = {"ok": True, "outcome": "raised", "error": type(exc).__name__, "errno": getattr(exc, "errno", None),
                 "text": str(exc)[:300]}
    session.send(reply)
