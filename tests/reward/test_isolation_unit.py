"""Fast checks of the isolation layers' parts that can be seen without applying them to the test process: the
seccomp filter programs as data (built with the real libseccomp, recorded instead of loaded), the Landlock
ruleset each ABI gets (the kernel calls recorded), the task limit's choices, apply's order (its steps recorded),
IsolationConfig's JSON round trip; and, in forked children (tests/reward/forked.py), the deferred uid drop, the
readability check after a drop, and what single steps report and do on their failure paths. The real layers are
applied together and attacked in tests/reward/test_isolation_layers.py."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import shutil
import socket
import tempfile
import types

import pyseccomp
import pytest
from forked import attempt, in_child, send

from bird.reward import cgroups, isolation, landlock, namespaces, seccomp_policy

ROOT = os.geteuid() == 0
_libc = ctypes.CDLL(None, use_errno=True)


# -- seccomp: the filter programs, as data ------------------------------------------------------------------------
class _Recorded(pyseccomp.SyscallFilter):
    """The real filter (libseccomp refuses a malformed rule as it would), recording what is added; load() only
    records that it was called."""

    made: list[_Recorded] = []

    def __init__(self, defaction: int) -> None:
        super().__init__(defaction)
        self.default, self.attrs, self.rules, self.loaded = defaction, {}, [], False
        _Recorded.made.append(self)

    def set_attr(self, attr: int, value: int) -> None:
        super().set_attr(attr, value)
        self.attrs[attr] = value

    def add_rule(self, action: int, syscall, *args: pyseccomp.Arg) -> None:
        super().add_rule(action, syscall, *args)
        self.rules.append((action, syscall, *((a._arg, a._op, a._data_a, a._data_b) for a in args)))

    def load(self) -> None:
        self.loaded = True


@pytest.fixture
def recorded(monkeypatch) -> list[_Recorded]:
    fake = types.SimpleNamespace(**{k: getattr(pyseccomp, k) for k in dir(pyseccomp) if not k.startswith("__")})
    fake.SyscallFilter = _Recorded
    monkeypatch.setattr(seccomp_policy, "load_library", lambda: fake)
    _Recorded.made = []
    return _Recorded.made


sc = pyseccomp
EPERM, ENOSYS = sc.ERRNO(errno.EPERM), sc.ERRNO(errno.ENOSYS)
W = seccomp_policy._O_WRITE_FLAGS


def _unconditional(filt: _Recorded) -> list[str]:
    return [r[1] for r in filt.rules if r[0] == sc.ALLOW and len(r) == 2]


def test_the_worker_filter_allows_the_base_syscalls_read_only_opens_and_self_signals_only(recorded):
    n = seccomp_policy.install(False)
    (filt,) = recorded
    assert filt.loaded and filt.default == EPERM
    assert filt.attrs == {sc.Attr.ACT_BADARCH: sc.KILL_PROCESS, sc.Attr.CTL_TSYNC: 1}
    assert n == len(_unconditional(filt)) and set(_unconditional(filt)) <= set(seccomp_policy.BASE_SYSCALLS)
    assert {"read", "write", "mmap", "exit_group", "futex"} <= set(_unconditional(filt))
    pid = os.getpid()
    conditional = [r for r in filt.rules if not (r[0] == sc.ALLOW and len(r) == 2)]
    assert conditional == [
        (sc.ALLOW, "openat", (2, sc.MASKED_EQ, W, 0)),
        (sc.ALLOW, "open", (1, sc.MASKED_EQ, W, 0)),
        (ENOSYS, "openat2"),
        (sc.ALLOW, "kill", (0, sc.EQ, pid, 0)),
        (sc.ALLOW, "tgkill", (0, sc.EQ, pid, 0)),
        (sc.ALLOW, "prlimit64", (0, sc.EQ, 0, 0), (2, sc.EQ, 0, 0)),
        (sc.ALLOW, "prlimit64", (0, sc.EQ, 0, 0), (1, sc.EQ, resource.RLIMIT_CPU, 0)),
        (sc.ALLOW, "prctl", (0, sc.EQ, 15, 0)),
        (sc.ALLOW, "prctl", (0, sc.EQ, 16, 0)),
        (sc.ALLOW, "prctl", (0, sc.EQ, 3, 0)),
        (sc.ALLOW, "ioctl", (1, sc.EQ, 0x5401, 0)),
        (sc.ALLOW, "ioctl", (1, sc.EQ, 0x541B, 0)),
        (ENOSYS, "clone3"),
    ]
    assert W & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND) == \
        os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def test_a_gpu_trainer_filter_adds_threads_device_opens_driver_ioctls_and_the_deferred_drop(recorded):
    n = seccomp_policy.install(True, ("no_such_syscall", "setresuid", "read"), ((0xFF00, 0x4600), (0xFFFF, 0x1234)),
                               device_opens=True, deferred_drop=True)
    (filt,) = recorded
    allowed = _unconditional(filt)
    assert allowed.count("read") == 1 and "setresuid" in allowed and "no_such_syscall" not in allowed
    assert n == len(allowed) == len(_unconditional_of_base()) + 1
    rules = filt.rules
    assert (sc.ALLOW, "openat", (2, sc.MASKED_EQ, W & ~os.O_RDWR, 0)) in rules
    assert (sc.ALLOW, "openat", (2, sc.MASKED_EQ, W, 0)) in rules
    assert [r for r in rules if r[1] == "prctl"] == [(sc.ALLOW, "prctl", (0, sc.EQ, o, 0)) for o in (15, 16, 3, 1, 4)]
    assert [r for r in rules if r[1] == "ioctl"][2:] == [(sc.ALLOW, "ioctl", (1, sc.MASKED_EQ, 0xFF00, 0x4600)),
                                                         (sc.ALLOW, "ioctl", (1, sc.MASKED_EQ, 0xFFFF, 0x1234))]
    mask = seccomp_policy._CLONE_THREAD | seccomp_policy._CLONE_NS_FLAGS | seccomp_policy._CLONE_PROCESS_FLAGS
    assert rules[-1] == (sc.ALLOW, "clone", (0, sc.MASKED_EQ, mask, 0x00010000))
    assert filt.loaded


def _unconditional_of_base() -> list[str]:
    return [s for s in seccomp_policy.BASE_SYSCALLS if _resolves(s)]


def _resolves(name: str) -> bool:
    try:
        sc.resolve_syscall(sc.Arch.NATIVE, name)
        return True
    except (OSError, ValueError):
        return False


def test_the_seal_refuses_every_set_id_call_and_the_two_prctls_and_allows_the_rest(recorded, monkeypatch):
    monkeypatch.setattr(seccomp_policy, "_SETID", ("no_such_syscall", *seccomp_policy._SETID))
    seccomp_policy.seal()
    (filt,) = recorded
    assert filt.loaded and filt.default == sc.ALLOW
    assert filt.attrs == {sc.Attr.CTL_TSYNC: 1, sc.Attr.CTL_NNP: 0}
    assert filt.rules == [(EPERM, name) for name in ("setresuid", "setresgid", "setgroups", "setuid", "setgid",
                                                     "setreuid", "setregid", "setfsuid", "setfsgid", "capset",
                                                     "seccomp")] + [
        (EPERM, "prctl", (0, sc.EQ, 4, 0)), (EPERM, "prctl", (0, sc.EQ, 1, 0))]


# -- Landlock: the ruleset each ABI gets ---------------------------------------------------------------------------
def _record_landlock(monkeypatch, abi: int) -> list[tuple]:
    """Record landlock's kernel calls (create_ruleset answers with a real descriptor, closed by restrict)."""
    calls: list[tuple] = []

    def fake(nr: int, *args):
        vals = [getattr(a, "value", a) for a in args]
        if nr == landlock._SYS_CREATE_RULESET:
            attr = ctypes.cast(args[0], ctypes.POINTER(landlock._RulesetAttr)).contents
            calls.append(("create", attr.handled_access_fs, attr.handled_access_net, attr.scoped, *vals[1:]))
            return os.open("/dev/null", os.O_RDONLY)
        if nr == landlock._SYS_ADD_RULE:
            rule = ctypes.cast(args[2], ctypes.POINTER(landlock._PathBeneathAttr)).contents
            calls.append(("add", vals[1], os.readlink(f"/proc/self/fd/{rule.parent_fd}"), rule.allowed_access,
                          vals[3]))
            return 0
        calls.append(("restrict", *vals[1:]))
        return 0

    monkeypatch.setattr(landlock, "abi_version", lambda: abi)
    monkeypatch.setattr(landlock, "_syscall", fake)
    return calls


@pytest.fixture
def files(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file.txt").write_text("x")
    sock = socket.socket(socket.AF_UNIX)  # a path only O_PATH opens (a read open fails with ENXIO)
    sock.bind(str(tmp_path / "sock"))
    yield tmp_path
    sock.close()


@pytest.mark.parametrize(("abi", "net", "scoped", "size", "ioctl"), [
    (1, 0, 0, 8, 0), (3, 0, 0, 8, 0), (4, 3, 0, 16, 0), (5, 3, 0, 16, 1 << 15), (6, 3, 3, 24, 1 << 15),
    (7, 3, 3, 24, 1 << 15)])
def test_landlock_handles_what_each_abi_offers_and_adds_a_rule_per_existing_path(monkeypatch, files, abi, net, scoped,
                                                                                 size, ioctl):
    calls = _record_landlock(monkeypatch, abi)
    fds = len(os.listdir("/proc/self/fd"))
    res = landlock.restrict([str(files / "dir"), str(files / "file.txt"), str(files / "missing"), str(files / "sock")],
                            [str(files / "nodev"), str(files / "file.txt"), "/dev/null", str(files / "dir"), "/dev/zero"])
    assert len(os.listdir("/proc/self/fd")) == fds
    assert calls == [
        ("create", landlock._fs_rights(abi), net, scoped, size, 0),
        ("add", 1, str(files / "dir"), 0b1101, 0),  # READ_FILE | EXECUTE | READ_DIR
        ("add", 1, str(files / "file.txt"), 0b0101, 0),  # READ_FILE | EXECUTE
        ("add", 1, str(files / "sock"), 0b0101, 0),
        ("add", 1, "/dev/null", 0b0110 | ioctl, 0),  # READ_FILE | WRITE_FILE (| IOCTL_DEV)
        ("add", 1, "/dev/zero", 0b0110 | ioctl, 0),
        ("restrict", 0)]
    assert (res.abi, res.filesystem, res.network, res.scoped) == (abi, True, abi >= 4, abi >= 6)
    assert res.read_paths == [str(files / "dir"), str(files / "file.txt"), str(files / "sock")] and res.device_paths == ["/dev/null", "/dev/zero"]


def test_landlock_refuses_without_an_abi(monkeypatch):
    _record_landlock(monkeypatch, 0)
    with pytest.raises(OSError, match="Landlock is not available in this kernel"):
        landlock.restrict(["/usr"])


def test_landlock_reports_its_abi_from_the_kernel():
    assert landlock.abi_version() >= 1


# -- the task limit's choices --------------------------------------------------------------------------------------
class _Limits:
    def __init__(self, monkeypatch, euid: int = 0, user_ns: bool = False, enter=None) -> None:
        self.set: list[tuple] = []
        self.entered: list[tuple] = []
        monkeypatch.setattr(isolation.resource, "setrlimit", lambda res, v: self.set.append((res, v)))
        monkeypatch.setattr(isolation.os, "geteuid", lambda: euid)
        monkeypatch.setattr(namespaces.STATE, "user", user_ns)
        monkeypatch.setattr(namespaces.STATE, "outer_pid", 4321)

        def fake_enter(name, max_tasks, memory_bytes, v1=False):
            self.entered.append((name, max_tasks, memory_bytes, v1))
            return enter(v1) if enter else f"cgroup {name}"
        monkeypatch.setattr(isolation.cgroups, "enter", fake_enter)


def test_task_limit_of_a_root_worker_uses_a_v2_cgroup_and_its_own_uids_nproc(monkeypatch):
    lim = _Limits(monkeypatch)
    layer = isolation.limit_tasks(5, 3)
    assert lim.entered == [(cgroups.PREFIX + "4321", 5, 3 * 2**20, False)]
    assert lim.set == [(resource.RLIMIT_NPROC, (5, 5))]
    assert layer == isolation.Layer("task_limit", True, f"at most 5 task(s): cgroup {cgroups.PREFIX}4321; "
                                    f"RLIMIT_NPROC=5 counted for uid {isolation.WORKER_UID_BASE + 4321} "
                                    "(this worker's own)")
    lim.entered.clear()
    assert isolation.limit_tasks(1).detail.startswith("at most 1 task(s)")
    assert lim.entered == [(cgroups.PREFIX + "4321", 1, None, False)] and lim.set[-1] == (resource.RLIMIT_NPROC, (0, 0))


def test_task_limit_without_a_cgroup_or_user_namespace_leaves_nproc_alone_unless_no_task_is_allowed(monkeypatch):
    lim = _Limits(monkeypatch, euid=1000)
    layer = isolation.limit_tasks(5, 3, cgroup="off")
    assert lim.entered == [] and lim.set == []
    assert layer == isolation.Layer("task_limit", False, "at most 5 task(s): RLIMIT_NPROC not set: without a user "
                                    "namespace of its own it would count all of this user's processes")
    assert not isolation.limit_tasks(2, cgroup="off").active and lim.set == []
    one = isolation.limit_tasks(1, cgroup="off")
    assert one == isolation.Layer("task_limit", True, "at most 1 task(s): RLIMIT_NPROC=0 counted for this user")
    assert isolation.limit_tasks(0, cgroup="off").detail.startswith("at most 1 task(s): RLIMIT_NPROC=0")
    assert lim.set == [(resource.RLIMIT_NPROC, (0, 0))] * 2


def test_task_limit_in_a_user_namespace_counts_nproc_there_and_reports_a_cgroup_it_could_not_make(monkeypatch):
    def refuse(v1):
        raise OSError(f"no cgroup here (v1={v1})")
    lim = _Limits(monkeypatch, euid=1000, user_ns=True, enter=refuse)
    layer = isolation.limit_tasks(7, None, cgroup="any")
    assert lim.entered == [(cgroups.PREFIX + "4321", 7, None, True)]
    assert layer == isolation.Layer("task_limit", True, "at most 7 task(s): no cgroup (no cgroup here (v1=True)); "
                                    "RLIMIT_NPROC=7 counted for this worker's own user namespace")


def test_task_limit_is_active_through_a_cgroup_alone(monkeypatch):
    lim = _Limits(monkeypatch, euid=1000)
    layer = isolation.limit_tasks(5)
    assert lim.set == [] and layer.active and layer.detail.startswith(f"at most 5 task(s): cgroup {cgroups.PREFIX}")


# -- IsolationConfig as JSON ---------------------------------------------------------------------------------------
def test_isolation_config_survives_a_json_round_trip_with_its_tuples():
    cfg = isolation.IsolationConfig(memory_mb=512, call_timeout_s=2.5, host_pid=77, threads=True,
                                    read_modules=("numpy", "jax"), extra_syscalls=("sched_setaffinity",),
                                    ioctls=((0xFF00, 0x4600), (1, 2)), devices=("/dev/nvidia0",), max_tasks=9)
    data = json.loads(json.dumps(cfg.to_json()))
    assert data["read_modules"] == ["numpy", "jax"] and data["ioctls"] == [[0xFF00, 0x4600], [1, 2]]
    back = isolation.IsolationConfig.from_json(data)
    assert back == cfg and back.read_modules == ("numpy", "jax") and back.ioctls == ((0xFF00, 0x4600), (1, 2))


def test_isolation_config_from_json_names_unknown_keys_and_the_known_ones():
    data = {"memory_mb": 1, "call_timeout_s": 1.0, "host_pid": 1, "zebra": 1, "apple": 2}
    with pytest.raises(ValueError) as exc:
        isolation.IsolationConfig.from_json(data)
    known = sorted(f.name for f in __import__("dataclasses").fields(isolation.IsolationConfig))
    assert str(exc.value) == f"unknown isolation settings ['apple', 'zebra'] (known: {known})"


# -- the deferred uid drop, in a forked child ----------------------------------------------------------------------
def _pr_get(option: int) -> int:
    value = ctypes.c_int(-1)
    _libc.prctl(option, ctypes.byref(value), 0, 0, 0)
    return value.value


def _deferred_drop(cfg: isolation.IsolationConfig):
    isolation._prctl(38, 1)  # no_new_privs, set by the earlier layers (the seal needs it once root is gone)
    layer = isolation.drop_identity(cfg).to_json()
    uid = isolation.worker_uid()
    return {"layer": layer, "uid": uid, "resuid": list(os.getresuid()), "resgid": list(os.getresgid()),
            "groups": os.getgroups(), "caps": list(isolation._capabilities()),
            "dumpable": _libc.prctl(3, 0, 0, 0, 0), "pdeathsig": _pr_get(2),
            "setresuid": attempt(lambda: os.setresuid(uid, uid, uid)),
            "set_dumpable": attempt(lambda: isolation._prctl(4, 0)),
            "set_pdeathsig": attempt(lambda: isolation._prctl(1, 9)),
            "no_new_privs": attempt(lambda: isolation._prctl(38, 1)),
            "again": attempt(lambda: isolation.drop_identity(cfg))}


def _config(**kw) -> isolation.IsolationConfig:
    return isolation.IsolationConfig(**{"memory_mb": 0, "call_timeout_s": 1.0, "host_pid": os.getpid(), **kw})


@pytest.mark.skipif(not ROOT, reason="the deferred drop is for a root process")
def test_the_deferred_drop_moves_to_the_workers_uid_and_seals_set_id_and_the_prctls():
    out = in_child(_deferred_drop, _config(defer_uid_drop=True)).result
    uid = out["uid"]
    assert out["layer"] == {"name": "unprivileged_user", "active": True, "detail": (
        f"dropped from root to uid/gid {uid} (this worker's own), no supplementary groups (after loading its trusted "
        "code); no capabilities; set*id, PR_SET_DUMPABLE and PR_SET_PDEATHSIG sealed by a second filter")}
    assert out["resuid"] == out["resgid"] == [uid] * 3 and out["groups"] == [] and out["caps"] == [0, 0]
    assert (out["dumpable"], out["pdeathsig"]) == (0, 9)
    assert out["setresuid"] == out["set_dumpable"] == out["set_pdeathsig"] == "PermissionError:1"
    assert out["no_new_privs"] == "ok" and out["again"] == "OSError:"


def _refused_drop(cfg: isolation.IsolationConfig):
    try:
        isolation.drop_identity(cfg)
    except OSError as exc:
        return [str(exc), list(os.getresuid())]
    return ["dropped", list(os.getresuid())]


@pytest.mark.skipif(not ROOT, reason="run as root")
def test_the_deferred_drop_refuses_a_process_that_did_not_defer_it():
    assert in_child(_refused_drop, _config()).result == [
        "drop_identity is for a root process that deferred its uid drop", [0, 0, 0]]


def _as_root_drop(defer):
    """Child: the uid-drop step of a root process, with the default or the given deferral."""
    layer = isolation._unprivileged_user(True) if defer is None else isolation._unprivileged_user(True, defer)
    return [layer.to_json(), list(os.getresuid())]


@pytest.mark.skipif(not ROOT, reason="run as root")
def test_a_root_process_drops_at_once_unless_it_defers():
    deferred = in_child(_as_root_drop, True).result
    assert deferred == [{"name": "unprivileged_user", "active": False, "detail": (
        "deferred: root inside the other layers until its trusted code is loaded, then dropped before it receives "
        "any artefact")}, [0, 0, 0]]
    layer, resuid = in_child(_as_root_drop, None).result
    assert layer["active"] and resuid != [0, 0, 0] and layer["detail"].endswith("; no capabilities")


# -- readable after the drop, in a forked child --------------------------------------------------------------------
@pytest.fixture
def tree(test_user):
    """A world-traversable tree under /tmp (pytest's tmp_path is root's only), with what a user can and cannot read."""
    base = tempfile.mkdtemp(prefix="bird-readable-", dir="/tmp")
    os.chmod(base, 0o755)
    for name, mode in (("pkg", 0o755), ("private_pkg", 0o755), ("listed_only", 0o744), ("traverse_only", 0o711), ("locked", 0o700),
                       ("many", 0o755)):
        os.mkdir(os.path.join(base, name))
        os.chmod(os.path.join(base, name), mode)
    os.mkdir(os.path.join(base, "locked", "inner"))
    with open(os.path.join(base, "pkg", "a.py"), "w") as fh:
        fh.write("x")
    os.chmod(os.path.join(base, "pkg", "a.py"), 0o644)
    os.symlink(os.path.join(base, "locked"), os.path.join(base, "pkg", "link"))
    with open(os.path.join(base, "pkg", "run"), "w") as fh:  # a readable, executable file: checked, not scanned
        fh.write("#!/bin/sh\n")
    os.chmod(os.path.join(base, "pkg", "run"), 0o755)
    for name, mode in (("a.py", 0o644), ("b.py", 0o600)):
        path = os.path.join(base, "private_pkg", name)
        open(path, "w").close()
        os.chmod(path, mode)
    for i in range(501):  # the 501st entry (sorted) is past what is checked
        path = os.path.join(base, "many", f"f{i:03d}")
        open(path, "w").close()
        os.chmod(path, 0o600 if i == 500 else 0o644)
    yield base
    shutil.rmtree(base)


def _refusals(user: tuple[int, int], paths_list: list[list[str]]):
    os.setgroups([])
    os.setresgid(user[1], user[1], user[1])
    os.setresuid(user[0], user[0], user[0])
    out = []
    for paths in paths_list:
        try:
            isolation.refuse_unreadable(paths)
            out.append("ok")
        except isolation.SetupRefused as exc:
            out.append(str(exc))
    return out


def test_the_readability_check_names_what_the_dropped_user_cannot_read_and_where_it_is_blocked(tree, test_user):
    def j(*parts: str) -> str:
        return os.path.join(tree, *parts)
    uid = test_user[0]
    out = in_child(_refusals, test_user, [[j("pkg"), j("pkg", "a.py"), j("pkg", "run")], [j("many")], [j("private_pkg")],
                                          [j("listed_only")], [j("traverse_only")], [j("locked", "inner")]]).result

    def refused(entry: str, blocker: str) -> str:
        return (f"the isolated process runs as uid {uid} and cannot read {entry} (blocked at {blocker}). Make the "
                "Python installation and the packages readable by other users (e.g. chmod o+rX on the directories "
                "above them and chmod -R o+rX on the install), or run bird as a normal user; a kernel that allows "
                "mount namespaces avoids this for directories above them (python -m bird.reward check --explain)")
    assert out == ["ok", "ok", refused(j("private_pkg", "b.py"), j("private_pkg", "b.py")),
                   refused(j("listed_only"), j("listed_only")), refused(j("traverse_only"), j("traverse_only")),
                   refused(j("locked", "inner"), j("locked"))]


# -- the seccomp step: what it asks of the filter, and what it reports ---------------------------------------------
def _record_install(monkeypatch) -> list[tuple]:
    calls: list[tuple] = []

    def fake(threads, extra_syscalls=(), ioctls=(), device_opens=False, deferred_drop=False):
        calls.append((threads, extra_syscalls, ioctls, device_opens, deferred_drop))
        return 90
    monkeypatch.setattr(seccomp_policy, "install", fake)
    return calls


def test_the_seccomp_step_of_a_gpu_trainer_asks_for_devices_ioctls_and_the_deferred_drop(monkeypatch):
    calls = _record_install(monkeypatch)
    cfg = _config(threads=True, extra_syscalls=("sched_setaffinity",), ioctls=((1, 2), (3, 4)),
                  devices=("/dev/nvidia0",), defer_uid_drop=True)
    layer = isolation._seccomp(cfg, True)
    assert calls == [(True, ("sched_setaffinity", *isolation._DEFERRED_DROP_SYSCALLS), ((1, 2), (3, 4)), True, True)]
    assert layer == isolation.Layer("seccomp", True, (
        "allowlist of 90 syscalls + read-only open (read-write without create/truncate/append: device nodes), "
        "self-only signals, threads allowed (clone with CLONE_THREAD only), 2 ioctl request patterns of the device "
        "driver; fork/exec/socket/ptrace/process_vm_* denied; clone3 -> ENOSYS; set*id until the deferred uid drop"))


def test_the_seccomp_step_defers_nothing_for_a_process_that_was_not_root(monkeypatch):
    calls = _record_install(monkeypatch)
    layer = isolation._seccomp(_config(defer_uid_drop=True))
    assert calls == [(False, (), (), False, False)]
    assert layer.detail == ("allowlist of 90 syscalls + read-only open, self-only signals, no clone; "
                            "fork/exec/socket/ptrace/process_vm_* denied; clone3 -> ENOSYS")


# -- apply: the order, the readability check, device opens only under Landlock ------------------------------------
def _record_apply(monkeypatch, landlock_active: bool, failing: str = "") -> list[tuple]:
    events: list[tuple] = []
    for name in isolation.LAYERS:
        def step(cfg, root, name=name):
            events.append((name, cfg.devices))
            if name == failing:
                raise OSError(f"{name} refused")
            return isolation.Layer(name, name != "landlock" or landlock_active, "")
        monkeypatch.setitem(isolation.STEPS, name, step)
    monkeypatch.setattr(isolation, "import_modules", lambda cfg: events.append(("import",)))
    monkeypatch.setattr(isolation, "refuse_unreadable", lambda paths: events.append(("refuse_unreadable", paths)))
    monkeypatch.setattr(namespaces.STATE, "outer_pid", 0)
    return events


def test_apply_imports_after_the_namespaces_checks_readability_after_the_drop_and_reports_each_layer(
        monkeypatch, tmp_path):
    events = _record_apply(monkeypatch, landlock_active=True, failing="landlock")
    cfg = _config(devices=("/dev/null",), extra_read_paths=(str(tmp_path), str(tmp_path / "missing")))
    layers = isolation.apply(cfg)
    assert namespaces.STATE.outer_pid == os.getpid()
    needed = [p for p in isolation.read_paths_for(()) if os.path.exists(p)] + [str(tmp_path)]
    names = [e[0] for e in events]
    assert names == ["network_namespace", "pid_namespace", "import", "task_limit", "empty_workdir", "mount_namespace",
                     "resource_limits", "unprivileged_user", "refuse_unreadable", "non_dumpable",
                     "parent_death_signal", "no_new_privs", "landlock", "seccomp"]
    assert events[names.index("refuse_unreadable")] == ("refuse_unreadable", needed)
    assert events[-1] == ("seccomp", ())  # Landlock failed: no read-write opens
    assert [x.name for x in layers] == list(isolation.LAYERS)
    assert [x.to_json() for x in layers if not x.active] == [
        {"name": "landlock", "active": False, "detail": "not applied: OSError: landlock refused"}]


def test_apply_keeps_device_opens_only_where_landlock_is_active(monkeypatch):
    events = _record_apply(monkeypatch, landlock_active=True)
    isolation.apply(_config(devices=("/dev/null",)))
    assert events[-1] == ("seccomp", ("/dev/null",))
    events = _record_apply(monkeypatch, landlock_active=False)
    isolation.apply(_config(devices=("/dev/null",)))
    assert events[-1] == ("seccomp", ()) and events[-2] == ("landlock", ("/dev/null",))


# -- small choices -------------------------------------------------------------------------------------------------
def test_thread_task_limit_grows_with_the_cpu_count(monkeypatch):
    monkeypatch.setattr(isolation.os, "cpu_count", lambda: 3)
    assert isolation.thread_task_limit() == 76
    monkeypatch.setattr(isolation.os, "cpu_count", lambda: None)
    assert isolation.thread_task_limit() == 68


def test_the_cgroup_memory_is_its_own_setting_else_memory_mb_else_none():
    assert isolation._cgroup_memory(_config(cgroup_memory_mb=300)) == 300
    assert isolation._cgroup_memory(isolation.IsolationConfig(512, 1.0, 1)) == 512
    assert isolation._cgroup_memory(isolation.IsolationConfig(512, 1.0, 1, cgroup_memory_mb=0)) == 0
    assert isolation._cgroup_memory(_config()) is None


def test_a_status_field_that_is_missing_reads_empty():
    assert isolation._status_field("NoSuchField") == ""
    assert isolation._status_field("Uid") == "\t".join([str(os.getuid()), str(os.geteuid())] * 2)


# -- layers whose failure paths need a forked child ----------------------------------------------------------------
def _unchanged_network():
    namespaces.unshare = lambda flags: ""  # the kernel said yes and changed nothing
    try:
        isolation._network_namespace()
    except OSError as exc:
        return str(exc)
    return "applied"


def test_a_network_namespace_that_did_not_change_is_an_error():
    assert in_child(_unchanged_network).result == "unshare returned but the network namespace did not change"


def _pid_namespace_parent(alive: bool):
    namespaces.STATE.pid = True
    namespaces.parent_alive = lambda: alive
    return isolation._parent_death_signal(os.getppid()).to_json()


def test_a_worker_in_a_pid_namespace_lives_while_its_init_does_and_exits_70_when_it_is_gone():
    assert in_child(_pid_namespace_parent, True).result == {
        "name": "parent_death_signal", "active": True,
        "detail": "SIGKILL when the host dies (through the waiters in between)"}
    gone = in_child(_pid_namespace_parent, False)
    assert gone.status == 70 and not gone.messages


def _no_limits():
    return [isolation._resource_limits(_config(cpu_budget_s=0)).to_json(),
            list(resource.getrlimit(resource.RLIMIT_CPU)), list(resource.getrlimit(resource.RLIMIT_AS))]


def test_a_gpu_process_without_memory_or_cpu_limits_says_what_bounds_it_instead():
    cpu, address = resource.getrlimit(resource.RLIMIT_CPU), resource.getrlimit(resource.RLIMIT_AS)
    layer, cpu_after, as_after = in_child(_no_limits).result
    assert layer == {"name": "resource_limits", "active": False, "detail": (
        "no RLIMIT_AS (a GPU process: the cgroup's memory.max), RLIMIT_FSIZE=0, no RLIMIT_CPU (the host's "
        "wall-clock watchdog), RLIMIT_NOFILE=64, RLIMIT_CORE=0 (processes and threads: task_limit)")}
    assert cpu_after == list(cpu) and as_after == list(address)


def _landlock_with_devices(tmp: str):
    isolation._prctl(38, 1)
    return isolation._landlock([tmp, tmp], ["/dev/null", "/dev/zero"]).to_json()


def test_the_landlock_step_names_the_device_nodes_it_opened_read_write(tmp_path):
    layer = in_child(_landlock_with_devices, str(tmp_path)).result
    abi = landlock.abi_version()
    assert layer == {"name": "landlock", "active": True, "detail": (
        f"ABI {abi}; read-only: {tmp_path}; read-write and ioctl: /dev/null, /dev/zero; TCP bind/connect denied; "
        "signals and abstract unix sockets scoped")}


def _tree(cfg: isolation.IsolationConfig):
    return isolation._mount_namespace(cfg).to_json()


@pytest.mark.skipif(not ROOT, reason="a mount namespace without a user namespace needs root")
def test_the_mount_namespace_step_binds_the_devices_and_writable_paths_asked_for(tmp_path):
    (tmp_path / "cwd").mkdir()
    (tmp_path / "out").mkdir()
    cfg = _config(devices=("/dev/zero",), writable_paths=(str(tmp_path / "out"),))
    layer = in_child(_tree, cfg, cwd=str(tmp_path / "cwd")).result
    assert layer["name"] == "mount_namespace" and layer["active"]
    assert layer["detail"].startswith("new mount namespace; root is a read-only tmpfs with ")
    assert f", {tmp_path / 'out'}" in layer["detail"] and ", /usr/lib" in layer["detail"]
    assert ("), devices /dev/null, /dev/full, /dev/random, /dev/urandom, /dev/zero, no /proc (no pid namespace of "
            "its own: it would show the host's); the host's other files do not exist here (stat/readlink see "
            "nothing)") in layer["detail"]


# -- small parts -------------------------------------------------------------------------------------------------
def test_a_failing_landlock_syscall_raises_with_its_errno_and_message():
    with pytest.raises(OSError) as exc:
        landlock._syscall(landlock._SYS_ADD_RULE, ctypes.c_int(-1), ctypes.c_int(1), None, ctypes.c_uint32(0))
    assert (exc.value.errno, exc.value.strerror) == (errno.EBADF, os.strerror(errno.EBADF))


def test_read_paths_skip_built_in_modules_and_go_on_to_the_next():
    paths = isolation.read_paths_for(["sys", "numpy.linalg"])
    numpy_dir = os.path.dirname(__import__("numpy").__file__)
    assert numpy_dir in paths and paths[:len(isolation._STDLIB_DIRS)] == [p for p in isolation._STDLIB_DIRS if p]


def test_the_cpu_budget_is_the_asked_one_under_no_hard_limit_and_the_hard_limit_below_it(monkeypatch):
    monkeypatch.setattr(isolation.resource, "getrlimit", lambda res: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert isolation.cpu_budget(100) == 100
    monkeypatch.setattr(isolation.resource, "getrlimit", lambda res: (50, 60))
    assert isolation.cpu_budget(100) == 60 and isolation.cpu_budget(30) == 30


def _pid_namespace(cfg: isolation.IsolationConfig):
    real_exit = os._exit

    def reported_exit(code: int) -> None:  # say so first: the report carries the calls made (for mutmut)
        # only a process that still holds the report pipe: not init nor the outer waiter, which closed it. Writing
        # there raised, the exit never happened, and init went back into the forked test process (under xdist it
        # hung on a lock another thread held at the fork, and the suite with it). Whatever happens, it exits.
        try:
            if namespaces.STATE.pid or not namespaces.STATE.outer_pid:
                send({"exit": code})
        finally:
            real_exit(code)
    os._exit = reported_exit
    return [isolation._pid_namespace(cfg).to_json(), os.getpid()]


@pytest.mark.skipif(not ROOT, reason="a pid namespace without a user namespace needs root")
def test_the_pid_namespace_step_reports_the_workers_pid_inside_it():
    layer, pid = in_child(_pid_namespace, _config()).result
    assert pid == 2 and layer == {"name": "pid_namespace", "active": True, "detail": (
        "pid 2 of a new pid namespace under a waiting init: no host process can be seen, signalled or probed by pid; "
        "whatever it starts dies with it; the process the host started waits outside and exits as it does")}


@pytest.mark.skipif(not ROOT, reason="a pid namespace without a user namespace needs root")
def test_a_pid_namespace_is_not_entered_for_a_host_that_is_already_gone():
    gone = in_child(_pid_namespace, _config(host_pid=1))
    assert gone.status == 70 and [m["exit"] for m in gone.messages] == [70]


# -- the checks after a drop, against a drop that did not happen (forked: each child stays or becomes root) ------
def test_without_landlock_the_abi_is_zero(monkeypatch):
    def refuse(nr: int, *args):
        raise OSError(errno.EOPNOTSUPP, "Landlock is disabled")
    monkeypatch.setattr(landlock, "_syscall", refuse)
    assert landlock.abi_version() == 0


def _uid_unchanged():
    os.setresuid = lambda *ids: None  # a uid change that "succeeded" and changed nothing (the gid changes)
    try:
        isolation._to_worker_uid()
    except OSError as exc:
        return [str(exc), os.getresuid()[0] == 0, os.getresgid()[0] == isolation.worker_uid()]
    return ["dropped"]


@pytest.mark.skipif(not ROOT, reason="run as root")
def test_a_uid_drop_that_leaves_the_uid_is_an_error():
    assert in_child(_uid_unchanged).result == ["uid/gid did not change", True, True]


def _caps_remain(clear_effective: bool):
    if clear_effective:  # permitted capabilities kept, effective ones cleared: still not dropped
        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

        class Data(ctypes.Structure):
            _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
        _, permitted = isolation._capabilities()
        data = (Data * 2)(Data(0, permitted & 0xFFFFFFFF, 0), Data(0, permitted >> 32, 0))
        assert _libc.capset(ctypes.byref(Header(0x20080522, 0)), data) == 0
    isolation._to_worker_uid = lambda: "pretended"
    try:
        isolation._unprivileged_user(True)
    except OSError as exc:
        return [str(exc), isolation._capabilities()[0] == 0]
    return ["dropped"]


@pytest.mark.skipif(not ROOT, reason="run as root")
def test_a_drop_that_leaves_effective_or_permitted_capabilities_is_an_error():
    assert in_child(_caps_remain, False).result == ["capabilities remain after the drop", False]
    assert in_child(_caps_remain, True).result == ["capabilities remain after the drop", True]


def _deferred_caps_remain(cfg: isolation.IsolationConfig):
    isolation._capabilities = lambda: (0, 1)  # as if CAP_CHOWN stayed permitted after the drop
    try:
        isolation.drop_identity(cfg)
    except OSError as exc:
        return str(exc)
    return "dropped"


@pytest.mark.skipif(not ROOT, reason="the deferred drop is for a root process")
def test_a_deferred_drop_that_leaves_capabilities_is_an_error():
    assert in_child(_deferred_caps_remain, _config(defer_uid_drop=True)).result == "capabilities remain after the drop"
