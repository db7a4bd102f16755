"""Each OS layer of the reward worker (bird/reward/isolation.py) applied alone in a forked child, which then tries
what the layer forbids, next to a control child without it where the same attempt succeeds; and what each layer
reports (`python -m bird.reward check --explain` shows it) checked against what the kernel then enforces.
The forked twin of tests/security/test_layers.py (fresh interpreters), so that mutation testing reaches the layers."""

from __future__ import annotations

import ctypes
import encodings.idna  # noqa: F401 - socket addresses use it; a child that dropped its uid cannot import it later
import importlib.util
import math
import os
import re
import resource
import signal
import socket
import sys
import threading
import time

import pytest
from forked import attempt, in_child, limits, send, spawn, vm_size_mb

from bird.reward import isolation, landlock, seccomp_policy

ROOT = os.geteuid() == 0
NUMPY_DIR = os.path.dirname(importlib.util.find_spec("numpy").origin)
_libc = ctypes.CDLL(None, use_errno=True)


def config(**kw) -> isolation.IsolationConfig:
    """This process is the host: the child's parent. No cgroup unless a test asks (no host removes it here)."""
    base = {"memory_mb": vm_size_mb() + 2048, "call_timeout_s": 5.0, "host_pid": os.getpid(), "cgroup": "off"}
    return isolation.IsolationConfig(**{**base, **kw})


def _layers(cfg: isolation.IsolationConfig, steps: list[str], then, as_user: tuple[int, int] | None = None) -> dict:
    """Child: (optionally become `as_user`), apply `steps` in order, then run `then()`."""
    if as_user is not None:
        _become(*as_user)
    layers = [isolation.STEPS[s](cfg, os.geteuid() == 0).to_json() for s in steps]
    send({"layers": layers})  # before `then`, which may end the child
    return {"layers": layers, "found": then()}


def _become(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def run(steps: list[str], then, cfg: isolation.IsolationConfig | None = None,
        as_user: tuple[int, int] | None = None) -> dict:
    out = in_child(_layers, cfg or config(), steps, then, as_user).result
    for layer in out["layers"]:
        assert layer["active"] or layer["name"] == "resource_limits", layer
    return out


def _status(field: str) -> str:
    with open("/proc/self/status") as fh:
        return next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith(field + ":"))


# -- resource limits ---------------------------------------------------------------------------------------------
def test_address_space_limit_is_memory_mb_and_stops_an_allocation_beyond_it():
    mb = vm_size_mb() + 256

    def then():
        return [attempt(lambda: bytearray(64 << 20)), attempt(lambda: bytearray(512 << 20)),
                list(limits()["Max address space"])]

    assert run([], then)["found"][:2] == ["ok", "ok"]  # control: this machine has the memory
    assert run(["resource_limits"], then, config(memory_mb=mb))["found"] == ["ok", "MemoryError:", [str(mb << 20)] * 2]


def test_file_size_limit_lets_no_byte_be_written(tmp_path):
    def then():
        path = tmp_path / f"f{os.getpid()}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        return [attempt(lambda: os.write(fd, b"xy")), os.path.getsize(path)]

    assert run([], then)["found"] == ["ok", 2]
    assert run(["resource_limits"], then)["found"] == ["OSError:27", 0]  # EFBIG, nothing written


def test_descriptor_limit_is_64_and_core_dumps_are_off():
    def then():
        fds = []
        while attempt(lambda: fds.append(os.dup(0))) == "ok":
            pass
        for fd in fds:
            os.close(fd)
        return [max(fds), list(limits()["Max core file size"])]

    assert run([], then)["found"][0] > 64
    assert run(["resource_limits"], then)["found"] == [63, ["0", "0"]]


def _fork() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def _thread() -> None:
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()


def test_process_limit_stops_fork_and_threads_unless_the_language_needs_threads(test_user):
    """RLIMIT_NPROC=0 for a language without threads (root ignores it: as the worker does, drop to its own uid)."""
    steps = ["task_limit", "unprivileged_user"]

    def then():
        return {"fork": attempt(_fork), "thread": attempt(_thread)}

    assert run(["unprivileged_user"], then)["found"] == {"fork": "ok", "thread": "ok"}
    limited = run(steps, then, config(cgroup="off"))["found"]
    assert limited["fork"] == "BlockingIOError:11" and limited["thread"].startswith("RuntimeError")
    threads = run(steps, then, config(threads=True, cgroup="off"))
    assert threads["found"] == {"fork": "ok", "thread": "ok"}  # seccomp's clone rule is what stops processes there
    assert threads["layers"][0]["active"] is True


def _thread_bomb() -> int:
    """Start threads until the kernel refuses (at most 200); return how many started."""
    event, started = threading.Event(), 0
    try:
        for _ in range(200):
            threading.Thread(target=event.wait, daemon=True).start()
            started += 1
    except RuntimeError:
        pass
    event.set()
    return started


def test_task_limit_stops_a_thread_bomb_at_the_workers_own_limit(test_user):
    """Each mechanism alone stops a bomb at max_tasks (12: the process itself + 11 threads), where without the
    layer 200 threads start: RLIMIT_NPROC counted for the worker's own uid (root host) or its own user namespace
    (unprivileged host), and, where this machine allows one, a cgroup of its own with pids.max (checked as root
    without the uid drop, which RLIMIT_NPROC does not bind)."""
    from bird.reward import cgroups

    bomb = config(threads=True, max_tasks=12, cgroup="off")
    assert run([], _thread_bomb, bomb)["found"] == 200  # control
    if ROOT:
        out = run(["task_limit", "unprivileged_user"], _thread_bomb, bomb)
        assert out["found"] == 11 and "counted for uid" in out["layers"][0]["detail"]
    out = run(["network_namespace", "task_limit"], _thread_bomb, bomb, as_user=test_user)
    assert out["found"] == 11 and "own user namespace" in out["layers"][1]["detail"]
    if ROOT and cgroups.parent(v1=True) is not None:  # here: the v1 pids hierarchy, the same files as v2
        out = run(["task_limit"], lambda: [_thread_bomb(), os.getpid()], config(threads=True, max_tasks=12,
                                                                                 cgroup="any"))
        fired = isolation.tasks_fired(out["found"][1])  # what the host reads for a killed worker's message
        isolation.release_tasks(out["found"][1])  # what the host does once a worker is reaped
        assert out["found"][0] == 11 and "pids.max=12" in out["layers"][0]["detail"]
        assert fired.startswith("pids.max of its cgroup (") and f"bird-worker-{out['found'][1]})" in fired, fired
        calm = run(["task_limit"], os.getpid, config(threads=True, max_tasks=12, cgroup="any"))["found"]
        assert isolation.tasks_fired(calm) == "", "a limit that never fired is not reported"
        isolation.release_tasks(calm)
        made = re.search(r"cgroup v1 (\S+):", out["layers"][0]["detail"]).group(1)
        assert os.path.basename(made) == f"bird-worker-{out['found'][1]}" and not os.path.exists(made)


def test_task_limit_names_the_allowed_cgroup_choices():
    with pytest.raises(ValueError, match=r"cgroup='yes': expected one of \['any', 'off', 'v2'\]"):
        isolation.limit_tasks(1, cgroup="yes")


def test_resource_limits_report_what_the_kernel_enforces():
    mb = vm_size_mb() + 1000

    def then():
        return {k: list(v) for k, v in limits().items()} | {"cpu_used": time.process_time()}

    budget = isolation.cpu_budget()  # 3600 s, unless this process runs under a lower hard limit (mutmut sets one)
    if resource.getrlimit(resource.RLIMIT_CPU)[1] == resource.RLIM_INFINITY:
        assert budget == isolation.CPU_BUDGET_S == 3600
    for threads in (False, True):
        out = run(["resource_limits"], then, config(memory_mb=mb, call_timeout_s=2.5, threads=threads))
        found, (layer,) = out["found"], out["layers"]
        assert layer == {"name": "resource_limits", "active": True, "detail": (
            f"RLIMIT_AS={mb} MiB, RLIMIT_FSIZE=0, RLIMIT_CPU per call 4 s (life {budget} s), RLIMIT_NOFILE=64, "
            "RLIMIT_CORE=0 (processes and threads: task_limit)")}
        assert found["Max address space"] == [str(mb << 20)] * 2 and found["Max file size"] == ["0", "0"]
        # the CPU soft limit: CPU used so far (rounded up) + the per-call limit (rounded up) + 1 s; hard: the budget
        # (at most one second less when the CPU used crossed a whole second after arming: a fresh child starts at 0)
        soft, hard = found["Max cpu time"]
        assert math.ceil(found["cpu_used"]) + 3 <= int(soft) <= math.ceil(found["cpu_used"]) + 3 + 1
        assert hard == str(budget)


def test_cpu_limit_ends_a_call_that_spins_past_the_per_call_limit():
    def spin():
        send({"soft": resource.getrlimit(resource.RLIMIT_CPU)[0]})
        while True:
            pass

    child = spawn(_layers, config(call_timeout_s=0.4), ["resource_limits"], spin).wait(timeout=300)
    soft = next(m["soft"] for m in child.messages if "soft" in m)
    assert child.status == -signal.SIGXCPU
    assert soft - 0.5 <= child.cpu_s < soft + 1.0  # SIGXCPU at the soft limit (give or take accounting), not at 3600 s


def test_arming_the_cpu_limit_counts_from_the_cpu_used_so_far():
    def then():
        start = time.process_time()
        while time.process_time() < start + 1.3:
            pass
        used = time.process_time()
        isolation.arm_cpu_limit(0.2)
        return [used, list(resource.getrlimit(resource.RLIMIT_CPU))]

    used, (soft, hard) = run(["resource_limits"], then)["found"]
    assert (soft, hard) == (math.ceil(used) + 1 + 1, isolation.cpu_budget())


def test_a_host_under_a_lower_cpu_hard_limit_keeps_it_and_the_limits_still_apply():
    """A batch system's `ulimit -t 900`: the worker cannot raise its hard CPU limit to 3600 s, so it keeps 900 s
    (and still sets every other limit and the per-call soft limit)."""
    def then():
        return list(resource.getrlimit(resource.RLIMIT_CPU))

    def lowered(hard: int):
        resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
        return _layers(config(call_timeout_s=2.5), ["resource_limits"], then)

    now = resource.getrlimit(resource.RLIMIT_CPU)[1]  # infinite, or lower under mutmut
    for hard in [h for h in (900, 5000) if now == resource.RLIM_INFINITY or h < now] or [now - 1]:
        out = in_child(lowered, hard).result
        budget = min(hard, isolation.CPU_BUDGET_S)
        assert out["layers"][0]["active"] is True and f"(life {budget} s)" in out["layers"][0]["detail"], out
        assert out["found"][1] == budget and out["found"][0] < 10


# -- working directory, identity --------------------------------------------------------------------------------
def test_empty_workdir_is_checked(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "left-over").write_text("x")
    ok = in_child(_layers, config(), ["empty_workdir"], lambda: None, cwd=str(tmp_path / "empty")).result
    assert ok["layers"] == [{"name": "empty_workdir", "active": True,
                             "detail": f"cwd {tmp_path / 'empty'} (empty, made by the host for this worker; recreated "
                                       "empty and read-only in the minimal tree)"}]
    full = in_child(lambda: attempt(lambda: isolation.STEPS["empty_workdir"](config(), ROOT)), cwd=str(tmp_path / "full"))
    assert full.result == "OSError:"


@pytest.mark.skipif(not ROOT, reason="the uid drop applies when bird runs as root")
def test_a_root_worker_drops_to_a_uid_of_its_own_without_groups_or_capabilities(tmp_path):
    secret = tmp_path / "root-only"
    secret.write_text("root only")
    secret.chmod(0o600)
    tmp_path.chmod(0o755)

    def then():
        return {"ids": [os.getresuid(), os.getresgid()], "groups": os.getgroups(), "cap": _status("CapEff"),
                "read": attempt(lambda: secret.read_text()), "pid": os.getpid()}

    assert run([], then)["found"]["read"] == "ok"
    out = run(["unprivileged_user"], then)
    uid = isolation.WORKER_UID_BASE + out["found"].pop("pid")  # its own: RLIMIT_NPROC counts this worker alone
    assert out["found"] == {"ids": [[uid] * 3, [uid] * 3], "groups": [], "cap": "0000000000000000",
                            "read": "PermissionError:13"}
    assert out["layers"][0]["detail"] == (f"dropped from root to uid/gid {uid} (this worker's own), no supplementary "
                                          "groups; no capabilities")


def test_an_unprivileged_worker_drops_the_capabilities_of_its_user_namespace(test_user):
    def then():
        return _status("CapEff")

    out = run(["network_namespace"], then, as_user=test_user)
    assert out["found"] != "0000000000000000"  # control: inside its new user namespace it holds capabilities
    out = run(["network_namespace", "unprivileged_user"], then, as_user=test_user)
    assert out["found"] == "0000000000000000"
    assert out["layers"][1] == {"name": "unprivileged_user", "active": True, "detail": (
        "already an unprivileged user; capabilities in its user namespace dropped; no capabilities")}


# -- namespaces --------------------------------------------------------------------------------------------------

def _connect(port: int):
    return lambda: socket.create_connection(("127.0.0.1", port), 2).close()


CUT_OFF = ("ConnectionRefusedError:111", "OSError:101")  # a new namespace's loopback is down: refused/unreachable


def test_network_namespace_cuts_off_the_hosts_loopback(listener):
    def then():
        return [attempt(_connect(listener)), os.readlink("/proc/self/ns/net")]

    before = os.readlink("/proc/self/ns/net")
    assert run([], then)["found"] == ["ok", before]
    out = run(["network_namespace"], then)
    assert out["found"][0] in CUT_OFF and out["found"][1] != before
    how = "" if ROOT else " (inside a new user namespace)"
    assert out["layers"][0]["detail"] == f"new network namespace{how}; interfaces ['lo'], all down"


def test_network_namespace_of_an_unprivileged_worker_is_made_inside_a_user_namespace(test_user, listener):
    def then():
        return [attempt(_connect(listener)), os.readlink("/proc/self/ns/user") != user_ns]

    user_ns = os.readlink("/proc/self/ns/user")
    out = run(["network_namespace"], then, as_user=test_user)
    assert out["found"][0] in CUT_OFF and out["found"][1] is True
    assert out["layers"][0]["detail"] == ("new network namespace (inside a new user namespace); interfaces ['lo'], "
                                          "all down")


# -- process attributes ------------------------------------------------------------------------------------------
def _dumpable() -> int:
    return _libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE


@pytest.fixture(autouse=True)
def _dumpable_pytest():
    """Forked children start dumpable: an earlier in-process sandbox host may have hardened this pytest process."""
    before = _dumpable()
    _libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE=1
    yield
    _libc.prctl(4, before, 0, 0, 0)


def test_non_dumpable_and_no_new_privs():
    def then():
        return [_dumpable(), _status("NoNewPrivs")]

    assert run([], then)["found"] == [1, "0"]
    out = run(["non_dumpable", "no_new_privs"], then)
    assert out["found"] == [0, "1"]
    assert [d["detail"] for d in out["layers"]] == [
        "PR_SET_DUMPABLE=0 here; the host and training processes set it too", "PR_SET_NO_NEW_PRIVS=1"]


def test_harden_host_makes_the_host_non_dumpable():
    assert in_child(lambda: [_dumpable(), isolation.harden_host(), _dumpable()]).result == [1, None, 0]


def _host_then_worker(steps: list[str], w: int) -> int:
    """Child = a host that starts a worker (its own child), which applies `steps` and waits; the host then exits."""
    import forked

    pid = os.fork()
    if pid == 0:  # the worker: it holds `w` open as long as it lives
        try:
            os.close(forked._channel)  # only the host reports
            cfg = config(host_pid=os.getppid())
            for step in steps:
                isolation.STEPS[step](cfg, ROOT)
            os.write(w, b"r")
            time.sleep(60)
        finally:
            os._exit(0)
    time.sleep(0.5)
    return pid


def test_a_worker_dies_with_its_host():
    """PR_SET_PDEATHSIG: when the host exits the worker is killed; without the layer it lives on."""
    for steps, dies in (([], False), (["parent_death_signal"], True)):
        r, w = os.pipe()
        host = in_child(_host_then_worker, steps, w, keep=(w,))
        os.close(w)
        worker = host.result
        first = os.read(r, 1)
        deadline = time.monotonic() + (30 if dies else 2)
        import select

        gone = bool(select.select([r], [], [], max(0.0, deadline - time.monotonic()))[0]) and os.read(r, 1) == b""
        os.close(r)
        if not gone:
            os.kill(worker, signal.SIGKILL)
        assert first == b"r" and gone is dies, steps


def test_a_worker_whose_host_is_already_gone_exits():
    child = in_child(isolation.STEPS["parent_death_signal"], config(host_pid=1), ROOT)
    assert child.status == 70 and not child.messages
    cfg = config()
    ok = in_child(lambda: isolation.STEPS["parent_death_signal"](cfg, ROOT).to_json()).result
    assert ok == {"name": "parent_death_signal", "active": True, "detail": "SIGKILL when the host dies"}


# -- Landlock ----------------------------------------------------------------------------------------------------
def _landlock_then(port: int, abstract: str, numpy_file: str):
    def then():
        unix = socket.socket(socket.AF_UNIX)
        return {"numpy_file": attempt(lambda: open(numpy_file).read(10)),
                "numpy_dir": attempt(lambda: os.listdir(NUMPY_DIR)),
                "extension": attempt(lambda: __import__("xxlimited_35")),  # a C extension nobody imported: mmap exec
                "etc": attempt(lambda: open("/etc/hostname").read()),
                "write": attempt(lambda: open("/tmp/bird-landlock-unit", "w")),
                "connect": attempt(_connect(port)),
                "abstract_unix": attempt(lambda: unix.connect("\0" + abstract)),
                "signal_parent": attempt(lambda: os.kill(os.getppid(), 0)),
                "proc_parent": attempt(lambda: open(f"/proc/{os.getppid()}/status").read())}
    return then


def test_landlock_allows_reading_and_running_the_language_only_and_denies_tcp_and_signals(listener):
    abstract = f"bird-landlock-unit-{os.getpid()}"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind("\0" + abstract)
    srv.listen(1)
    then = _landlock_then(listener, abstract, importlib.util.find_spec("numpy").origin)
    try:
        control = run(["no_new_privs"], then)["found"]
        assert all(v == "ok" for v in control.values()), control
        assert "xxlimited_35" not in sys.modules
        cfg = config(read_modules=("numpy", "math"))
        out = run(["no_new_privs", "landlock"], then, cfg)
    finally:
        srv.close()
    found = out["found"]
    assert found["numpy_file"] == found["numpy_dir"] == found["extension"] == "ok"
    assert found["etc"] == found["write"] == found["connect"] == found["proc_parent"] == "PermissionError:13"
    assert found["signal_parent"] == found["abstract_unix"] == "PermissionError:1"
    paths = isolation.read_paths_for(["numpy", "math"])
    assert out["layers"][1]["detail"] == (f"ABI {landlock.abi_version()}; read-only: {', '.join(paths)}; TCP "
                                          "bind/connect denied; signals and abstract unix sockets scoped")


def test_landlock_on_a_process_with_threads_is_refused():
    """Landlock binds only the calling thread: with another thread alive the layer is refused and says why."""
    assert in_child(_thread_then_landlock, config(threads=True)).result == [
        "OSError", "Landlock restricts only the calling thread, and this process has several"]


def _thread_then_landlock(cfg):
    event = threading.Event()
    threading.Thread(target=event.wait, daemon=True).start()
    isolation.STEPS["no_new_privs"](cfg, ROOT)
    try:
        isolation.STEPS["landlock"](cfg, ROOT)
    except OSError as exc:
        return [type(exc).__name__, str(exc)]
    finally:
        event.set()
    return ["ok", ""]


def test_landlock_rules_cover_files_directories_and_skip_missing_paths(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.txt").write_text("in a directory")
    (tmp_path / "file.txt").write_text("a file on its own")
    (tmp_path / "other.txt").write_text("not listed")

    def open_fds() -> int:
        return sum(attempt(lambda fd=fd: os.fstat(fd)) == "ok" for fd in range(256))

    def then():
        fds = open_fds()
        isolation._prctl(38, 1)  # no_new_privs
        res = landlock.restrict([str(tmp_path / "dir"), str(tmp_path / "file.txt"), str(tmp_path / "missing")])
        return {"result": [res.abi, res.filesystem, res.network, res.scoped, res.read_paths],
                "fds_left_open": open_fds() - fds,
                "dir_file": attempt(lambda: (tmp_path / "dir" / "a.txt").read_text()),
                "dir_list": attempt(lambda: os.listdir(tmp_path / "dir")),
                "file": attempt(lambda: (tmp_path / "file.txt").read_text()),
                "other": attempt(lambda: (tmp_path / "other.txt").read_text()),
                "write_in_dir": attempt(lambda: (tmp_path / "dir" / "a.txt").write_text("x")),
                "truncate": attempt(lambda: os.truncate(tmp_path / "file.txt", 0)),
                "remove": attempt(lambda: os.unlink(tmp_path / "dir" / "a.txt")),
                "mkdir": attempt(lambda: os.mkdir(tmp_path / "dir" / "new"))}

    out = in_child(then).result
    abi = landlock.abi_version()
    assert abi >= 6 and out["result"] == [abi, True, True, True, [str(tmp_path / "dir"), str(tmp_path / "file.txt")]]
    assert out["fds_left_open"] == 0
    assert out["dir_file"] == out["dir_list"] == out["file"] == "ok"
    assert out["other"] == out["write_in_dir"] == out["truncate"] == out["remove"] == out["mkdir"] == \
        "PermissionError:13"
    assert (tmp_path / "dir" / "a.txt").read_text() == "in a directory"


def test_filesystem_rights_grow_with_the_abi():
    """ABI 1 handles the first 13 rights; REFER comes with ABI 2, TRUNCATE with 3, IOCTL_DEV with 5."""
    assert [landlock._fs_rights(abi) for abi in (1, 2, 3, 4, 5, 6, 7)] == [
        0x1FFF, 0x3FFF, 0x7FFF, 0x7FFF, 0xFFFF, 0xFFFF, 0xFFFF]


def _landlock_as_abi(abi: int, port: int):
    """Child: pretend the kernel offers only Landlock `abi`, apply the layer, then try a file, TCP and a signal."""
    landlock.abi_version = lambda: abi
    isolation.STEPS["no_new_privs"](config(), ROOT)
    try:
        layer = isolation.STEPS["landlock"](config(read_modules=("numpy",)), ROOT).to_json()
    except OSError as exc:
        layer = f"OSError: {exc}"
    return {"layer": layer, "etc": attempt(lambda: open("/etc/hostname").read()),
            "connect": attempt(_connect(port)), "signal_parent": attempt(lambda: os.kill(os.getppid(), 0))}


def test_an_older_landlock_abi_enforces_what_it_has_and_the_layer_says_what_it_lacks(listener):
    paths = ", ".join(isolation.read_paths_for(["numpy"]))
    abi3 = in_child(_landlock_as_abi, 3, listener).result
    assert abi3["layer"] == {"name": "landlock", "active": False, "detail": (
        f"ABI 3; read-only: {paths}; network rules need ABI 4; scoping needs ABI 6")}
    assert abi3["etc"] == "PermissionError:13" and abi3["connect"] == abi3["signal_parent"] == "ok"
    abi5 = in_child(_landlock_as_abi, 5, listener).result
    assert abi5["layer"]["active"] is False and abi5["layer"]["detail"].endswith(
        "; TCP bind/connect denied; scoping needs ABI 6")
    assert abi5["connect"] == "PermissionError:13" and abi5["signal_parent"] == "ok"
    none = in_child(_landlock_as_abi, 0, listener).result
    assert none["layer"] == "OSError: Landlock is not available in this kernel"
    assert none["etc"] == none["connect"] == "ok"


# -- seccomp -----------------------------------------------------------------------------------------------------
def _ioctl(request: int, fd: int) -> str:
    arg = ctypes.c_int(0)
    if _libc.ioctl(fd, ctypes.c_ulong(request), ctypes.byref(arg)) < 0:
        return f"errno {ctypes.get_errno()}"
    return "ok"


def _syscall_then():
    r, w = os.pipe()
    event, done, seen = threading.Event(), threading.Event(), {}

    def older_thread():  # started before the filter: CTL_TSYNC must filter it too
        event.wait()
        seen["socket"] = attempt(lambda: socket.socket())
        done.set()

    older = threading.Thread(target=older_thread, daemon=True)
    older.start()

    def then():
        out = {"fork": attempt(_fork), "thread": attempt(_thread), "socket": attempt(lambda: socket.socket()),
               "write_open": attempt(lambda: open("/tmp/bird-seccomp-unit", "w")),  # noqa: SIM115
               "append_open": attempt(lambda: os.open("/tmp/bird-seccomp-unit", os.O_RDONLY | os.O_APPEND)),
               "read_open": attempt(lambda: open(os.__file__).read(10)),  # noqa: SIM115
               "kill_self": attempt(lambda: os.kill(os.getpid(), 0)),
               "kill_parent": attempt(lambda: os.kill(os.getppid(), 0)),
               "signal_own_thread": attempt(lambda: signal.pthread_kill(threading.main_thread().ident, 0)),
               "signal_older_thread": attempt(lambda: signal.pthread_kill(older.ident, 0)),  # tid != pid
               # raw open(2) (Python uses openat): read-only allowed, any write flag denied
               "raw_open_read": attempt(lambda: os.close(_sys(2, _path(os.__file__), os.O_RDONLY, 0))),
               "raw_open_write": attempt(lambda: _sys(2, _path("/tmp/bird-seccomp-unit"), os.O_WRONLY | os.O_CREAT, 0o600)),
               # clone with CLONE_THREAD but no CLONE_SIGHAND: the kernel says EINVAL, so EPERM means the filter
               # refused it first; EINVAL for plain thread flags, EPERM once a namespace or process flag is added
               **{f"clone_{name}": attempt(lambda flags=flags: _sys(56, _CLONE_THREAD | flags, 0, 0, 0, 0))
                  for name, flags in _CLONE_EXTRA.items()},
               "tgkill_parent": attempt(lambda: _sys(234, os.getppid(), os.getppid(), 0)),
               "set_cpu_limit": attempt(lambda: resource.setrlimit(resource.RLIMIT_CPU, _cpu_limits_below_hard())),
               "set_as_limit": attempt(lambda: _set_limit(resource.RLIMIT_AS)),
               "get_limit": attempt(lambda: resource.getrlimit(resource.RLIMIT_AS)),
               "set_name": attempt(lambda: _check(_libc.prctl(15, b"bird-unit", 0, 0, 0))),
               "get_dumpable": attempt(lambda: _check(_libc.prctl(3, 0, 0, 0, 0))),
               "set_dumpable": attempt(lambda: _check(_libc.prctl(4, 1, 0, 0, 0))),
               "tcgets": _ioctl(0x5401, r), "fionread": _ioctl(0x541B, r), "fionbio": _ioctl(0x5421, r),
               "clone3": attempt(lambda: _sys(435, 0, 0)), "openat2": attempt(lambda: _sys(437, -100, 0, 0, 0)),
               "unshare": attempt(lambda: _check(_libc.unshare(0x20000)))}
        event.set()
        done.wait(10)
        out["older_thread_socket"] = seen.get("socket")
        return out

    return then


_libc.syscall.restype = ctypes.c_long
_CLONE_THREAD = 0x00010000
_CLONE_EXTRA = {"thread": 0, "newuser": 0x10000000, "newnet": 0x40000000, "newtime": 0x00000080,
                "vfork": 0x00004000, "pidfd": 0x00001000}


def _path(text: str) -> int:
    buf = ctypes.create_string_buffer(text.encode())
    _PATHS.append(buf)  # kept alive until the child ends
    return ctypes.addressof(buf)


_PATHS: list = []


def _sys(nr: int, *args: int) -> int:
    ret = _libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def _cpu_limits_below_hard() -> tuple[int, int]:
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]  # infinite, or lower under mutmut
    return (3000, 3600) if hard == resource.RLIM_INFINITY else (hard - 1, hard)


def _set_limit(res: int) -> None:
    """prlimit64(0, res, current values): errno kept (Python's setrlimit turns EPERM into ValueError)."""
    values = (ctypes.c_uint64 * 2)(*[v & (2**64 - 1) for v in resource.getrlimit(res)])
    _check(_libc.syscall(ctypes.c_long(302), ctypes.c_long(0), ctypes.c_long(res), ctypes.byref(values), None))


def _check(ret: int) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


DENIED = "PermissionError:1"


def test_seccomp_allows_what_numpy_needs_and_denies_processes_files_sockets_and_other_processes():
    out = in_child(lambda: _layers(config(threads=True), ["no_new_privs", "seccomp"], _syscall_then())).result
    found = out["found"]
    for key in ("fork", "socket", "write_open", "append_open", "kill_parent", "tgkill_parent", "set_as_limit",
                "set_dumpable", "unshare", "older_thread_socket"):
        assert found[key] == DENIED, (key, found[key])
    for key in ("thread", "read_open", "kill_self", "signal_own_thread", "set_cpu_limit", "get_limit", "set_name",
                "get_dumpable", "fionread"):
        assert found[key] == "ok", (key, found[key])
    assert found["tcgets"] == "errno 25"  # ENOTTY from the kernel: the call itself is allowed
    assert found["fionbio"] == "errno 1"
    assert found["clone3"] == found["openat2"] == "OSError:38"  # ENOSYS: glibc falls back to what can be filtered
    for key in ("signal_older_thread", "raw_open_read"):
        assert found[key] == "ok", (key, found[key])
    assert found["raw_open_write"] == DENIED
    assert found["clone_thread"] == "OSError:22"  # passed the filter; the kernel refused the flags
    for key in ("clone_newuser", "clone_newnet", "clone_newtime", "clone_vfork", "clone_pidfd"):
        assert found[key] == DENIED, (key, found[key])
    control = in_child(lambda: _layers(config(), ["no_new_privs"], _syscall_then())).result["found"]
    assert all(control[k] == "ok" for k in ("fork", "socket", "write_open", "kill_parent", "set_dumpable")), control
    no_threads = in_child(lambda: _layers(config(), ["no_new_privs", "seccomp"], _syscall_then())).result
    assert no_threads["found"]["thread"].startswith("RuntimeError")


def test_seccomp_reports_how_many_syscalls_it_allows():
    def count(threads: bool, extra: tuple[str, ...]) -> dict:
        isolation._prctl(38, 1)
        layer = isolation.STEPS["seccomp"](config(threads=threads, extra_syscalls=extra), ROOT)
        return layer.to_json()

    base = in_child(count, False, ()).result
    n = int(base["detail"].split("allowlist of ")[1].split()[0])
    assert 80 <= n <= len(seccomp_policy.BASE_SYSCALLS)  # the few this architecture lacks are left out
    assert base == {"name": "seccomp", "active": True, "detail": (
        f"allowlist of {n} syscalls + read-only open, self-only signals, no clone; fork/exec/socket/ptrace/"
        "process_vm_* denied; clone3 -> ENOSYS")}
    assert in_child(count, False, ("read", "no_such_syscall_xyz")).result == base  # duplicates and unknowns: none
    after_unknown = in_child(count, False, ("no_such_syscall_xyz", "pidfd_open")).result["detail"]
    assert after_unknown.startswith(f"allowlist of {n + 1} syscalls")  # an unknown one does not end the list
    more = in_child(count, True, ("pidfd_open",)).result["detail"]
    assert more == (f"allowlist of {n + 1} syscalls + read-only open, self-only signals, threads allowed (clone with "
                    "CLONE_THREAD only); fork/exec/socket/ptrace/process_vm_* denied; clone3 -> ENOSYS")


# -- read paths and the whole sequence ---------------------------------------------------------------------------
def test_read_paths_are_the_standard_library_the_languages_packages_and_the_system_libraries():
    import sysconfig

    stdlib = os.path.dirname(os.__file__)
    system = [p for p in ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/etc/ld.so.cache") if os.path.exists(p)]
    numpy_libs = [NUMPY_DIR + ".libs"] if os.path.isdir(NUMPY_DIR + ".libs") else []
    expected = [stdlib, sysconfig.get_config_var("DESTSHARED"), NUMPY_DIR, *numpy_libs, *system]
    assert isolation.read_paths_for(["numpy", "numpy.linalg", "math", "typing", "numpy"]) == expected
    assert isolation.read_paths_for([]) == [stdlib, sysconfig.get_config_var("DESTSHARED"), *system]
    pytest_dir = os.path.dirname(importlib.util.find_spec("_pytest").origin)
    assert isolation.read_paths_for(["_pytest.python"])[2] == pytest_dir  # a package: its folder
    single = importlib.util.find_spec("six") or importlib.util.find_spec("typing_extensions")
    name = single.name
    assert isolation.read_paths_for([name])[2] == single.origin  # a single-file module: the file itself


def test_apply_runs_every_layer_in_order_after_importing_the_languages_modules(tmp_path):
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    (probe_dir / "preloaded_probe.py").write_text("VALUE = 41\n")
    (probe_dir / "late_probe.py").write_text("VALUE = 42\n")
    (tmp_path / "work").mkdir()
    tmp_path.chmod(0o755)
    probe_dir.chmod(0o755)

    cfg = config(preload=("preloaded_probe",))

    def child():
        sys.path.insert(0, str(probe_dir))
        layers = isolation.apply(cfg)
        return {"layers": [d.to_json() for d in layers], "preloaded": sys.modules["preloaded_probe"].VALUE,
                "late": attempt(lambda: __import__("late_probe")), "uid": os.getuid(), "groups": os.getgroups(),
                "user_ns": os.readlink("/proc/self/ns/user")}

    out = in_child(child, cwd=str(tmp_path / "work")).result
    assert [d["name"] for d in out["layers"]] == list(isolation.LAYERS)
    assert all(d["active"] for d in out["layers"]), out["layers"]
    assert out["preloaded"] == 41 and out["late"] != "ok"  # only what was imported before the layers
    if ROOT:  # a uid of its own: WORKER_UID_BASE + the pid of the process the host started
        assert isolation.WORKER_UID_BASE < out["uid"] < isolation.WORKER_UID_BASE + 2**22
    else:
        assert out["uid"] == os.getuid()
    if ROOT:  # a real uid drop, no supplementary groups, and no user namespace (where uid 0 would show as 65534)
        assert out["groups"] == [] and out["user_ns"] == os.readlink("/proc/self/ns/user")


def test_apply_reports_a_layer_it_could_not_apply_and_applies_the_others(tmp_path):
    (tmp_path / "left-over").write_text("x")
    cfg = config()
    out = in_child(lambda: [d.to_json() for d in isolation.apply(cfg)], cwd=str(tmp_path)).result
    assert [d["name"] for d in out] == list(isolation.LAYERS)
    assert out[3] == {"name": "empty_workdir", "active": False,
                      "detail": f"not applied: OSError: working directory {tmp_path} is not empty"}
    assert all(d["active"] for d in out if d["name"] != "empty_workdir")


def test_layers_report_as_json():
    assert isolation.Layer("x", True, "why").to_json() == {"name": "x", "active": True, "detail": "why"}


def test_a_failing_prctl_raises_with_its_errno():
    with pytest.raises(OSError, match=r"prctl\(12345\): Invalid argument") as err:
        isolation._prctl(12345, 0)
    assert err.value.errno == 22


def test_capabilities_are_read_with_capget():
    with open("/proc/self/status") as fh:
        status = dict(line.split(":", 1) for line in fh)
    assert isolation._capabilities() == (int(status["CapEff"], 16), int(status["CapPrm"], 16))

