"""Each OS layer alone (bird.reward.isolation.STEPS), in a fresh process that then really tries what the layer
forbids, next to a control run without the layer where the same attempt succeeds. The corpus tests run all
layers together, where one layer can hide the loss of another; these tests fail when any single one is removed."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bird.reward import isolation

ROOT = str(Path(__file__).resolve().parents[2])
_SCRIPT = """
import json, os, sys, threading
sys.path[:0] = {paths!r}
from bird.reward import isolation, seccomp_policy
seccomp_policy.load_library()  # as apply() does: before the layers make it unreadable
config = {cfg!r}
if config["memory_mb"] == "VmSize + 256":  # an address-space limit 256 MiB above what is mapped now
    config["memory_mb"] = int([l for l in open("/proc/self/status") if l.startswith("VmSize")][0].split()[1]) // 1024 + 256
cfg = isolation.IsolationConfig(**config)
for step in {steps!r}:
    layer = isolation.STEPS[step](cfg, os.geteuid() == 0)
    assert layer.active, layer
def attempt(fn):
    try:
        fn()
        return "ok"
    except BaseException as exc:
        return type(exc).__name__ + ":" + str(getattr(exc, "errno", ""))
def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
def thread():
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
{then}
"""


def run_layers(steps: list[str], then: str, timeout: float = 60, cwd: str = "/tmp", **cfg) -> subprocess.CompletedProcess:
    """Apply `steps` in a new process (as this user, in `cwd`), then run `then` (which prints its findings as JSON)."""
    config = {"memory_mb": 4096, "call_timeout_s": 5.0, "host_pid": os.getpid(), **cfg}
    script = _SCRIPT.format(paths=[ROOT, *sys.path], cfg=config, steps=steps, then=then)
    return subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd)


def findings(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- resource limits ---------------------------------------------------------------------------------------------
ALLOCATE = 'print(json.dumps({"alloc": attempt(lambda: bytearray(1 << 30))}))  # 1 GiB'


def test_address_space_limit_stops_an_allocation_that_succeeds_without_it():
    assert findings(run_layers([], ALLOCATE))["alloc"] == "ok"  # control: this machine has the memory
    assert findings(run_layers(["resource_limits"], ALLOCATE, memory_mb="VmSize + 256"))["alloc"] == "MemoryError:"


def test_file_size_limit_stops_a_write(tmp_path):
    then = (f"def write():\n    with open({str(tmp_path / 'f')!r}, 'w') as fh:\n        fh.write('x')\n"
            "print(json.dumps({'write': attempt(write)}))")
    assert findings(run_layers([], then))["write"] == "ok"
    assert findings(run_layers(["resource_limits"], then))["write"] == "OSError:27"  # EFBIG
    assert (tmp_path / "f").stat().st_size == 0


def test_cpu_time_limit_ends_a_spinning_process():
    """A few CPU seconds; the subprocess time-out only guards against a hang (without the limit it spins on)."""
    proc = run_layers(["resource_limits"], "while True:\n    pass", timeout=300, call_timeout_s=0.5)
    assert proc.returncode == -signal.SIGXCPU


PROCESSES = 'print(json.dumps({"fork": attempt(fork), "thread": attempt(thread)}))'


def test_process_count_limit_stops_fork_and_threads():
    """task_limit for a language without threads: RLIMIT_NPROC=0 (with the uid drop when root, which ignores it)."""
    steps = ["unprivileged_user"] if os.geteuid() == 0 else []
    control = findings(run_layers(steps, PROCESSES))
    assert control == {"fork": "ok", "thread": "ok"}
    limited = findings(run_layers(["task_limit", *steps], PROCESSES, cgroup="off"))
    assert limited["fork"] == "BlockingIOError:11" and limited["thread"].startswith("RuntimeError")


# -- seccomp ---------------------------------------------------------------------------------------------------
SYSCALLS = """
import ctypes, socket, subprocess
libc = ctypes.CDLL(None, use_errno=True)
def clone3():
    args = (ctypes.c_uint64 * 11)()
    if libc.syscall(435, ctypes.byref(args), ctypes.sizeof(args)) < 0:
        raise OSError(ctypes.get_errno(), "clone3")
out = {"fork": attempt(fork), "exec": attempt(lambda: subprocess.run(["/bin/true"])),
       "socket": attempt(lambda: socket.socket()), "write": attempt(lambda: open("/tmp/bird-seccomp-test", "w")),
       "read": attempt(lambda: open(os.__file__).read(10)), "kill_parent": attempt(lambda: os.kill(os.getppid(), 0)),
       "clone3": attempt(clone3), "thread": attempt(thread),
       "import": attempt(lambda: __import__("json.tool"))}
print(json.dumps(out))
"""


def test_seccomp_denies_processes_files_sockets_and_signals_but_allows_threads_when_asked():
    out = findings(run_layers(["no_new_privs", "seccomp"], SYSCALLS, threads=True))
    assert out["fork"] == out["exec"] == out["socket"] == out["write"] == out["kill_parent"] == "PermissionError:1"
    assert out["clone3"] == "OSError:38"  # ENOSYS: glibc falls back to clone, which is filtered
    assert out["read"] == out["thread"] == out["import"] == "ok"  # what importing jax needs: reads, mmap, threads
    no_threads = findings(run_layers(["no_new_privs", "seccomp"], SYSCALLS, threads=False))
    assert no_threads["thread"].startswith("RuntimeError")


def test_seccomp_control_without_the_filter():
    out = findings(run_layers([], SYSCALLS))
    assert all(v == "ok" for k, v in out.items() if k != "clone3"), out


# -- Landlock ----------------------------------------------------------------------------------------------------

def _landlock_then(port: int, path: str) -> str:
    return (f'import socket\nprint(json.dumps({{"etc": attempt(lambda: open("/etc/hostname").read()), '
            f'"numpy": attempt(lambda: open({path!r}).read(10)), '
            f'"write": attempt(lambda: open("/tmp/bird-landlock-test", "w")), '
            f'"connect": attempt(lambda: socket.create_connection(("127.0.0.1", {port}), 2)), '
            f'"signal_parent": attempt(lambda: os.kill(os.getppid(), 0)), '
            f'"proc_parent": attempt(lambda: open(f"/proc/{{os.getppid()}}/status").read())}}))')


def test_landlock_allows_only_reading_the_language_and_denies_tcp_and_signals(listener):
    numpy_init = importlib.util.find_spec("numpy").origin
    then = _landlock_then(listener, numpy_init)
    control = findings(run_layers(["no_new_privs"], then))
    assert all(v == "ok" for v in control.values()), control
    out = findings(run_layers(["no_new_privs", "landlock"], then, read_modules=("numpy",)))
    assert out["numpy"] == "ok"
    assert out["etc"] == out["write"] == out["connect"] == out["proc_parent"] == "PermissionError:13"
    assert out["signal_parent"] == "PermissionError:1"


def test_modules_can_still_be_imported_after_every_layer():
    """A language whose modules load lazily (jax) still imports after the layers: read-only opens, mmap of shared
    libraries. numpy is imported here only after Landlock and seccomp are on."""
    numpy_dir = os.path.dirname(importlib.util.find_spec("numpy").origin)
    then = ('import numpy\nprint(json.dumps({"sum": float(numpy.linalg.inv(numpy.eye(3) * 2).sum()), '
            '"fork": attempt(fork)}))')
    out = findings(run_layers(["no_new_privs", "landlock", "seccomp"], then,
                              extra_read_paths=(numpy_dir, numpy_dir + ".libs", *isolation.read_paths_for([]))))
    assert out == {"sum": 1.5, "fork": "PermissionError:1"}


# -- namespaces and identity ------------------------------------------------------------------------------------
def test_network_namespace_cuts_off_the_hosts_loopback(listener):
    then = (f'import socket\nprint(json.dumps({{"connect": attempt(lambda: socket.create_connection(("127.0.0.1", '
            f'{listener}), 2))}}))')
    assert findings(run_layers([], then))["connect"] == "ok"
    assert findings(run_layers(["network_namespace"], then))["connect"] in ("ConnectionRefusedError:111",
                                                                             "OSError:101")  # ENETUNREACH


# -- pid and mount namespaces: the metadata Landlock does not govern ---------------------------------------------
def _metadata_then(victim: str, host: int) -> str:
    return ('import numpy\n'
            f'print(json.dumps({{"stat_file": attempt(lambda: os.stat({victim!r})), '
            f'"readlink_cwd": attempt(lambda: os.readlink("/proc/{host}/cwd")), '
            f'"stat_proc": attempt(lambda: os.stat("/proc/{host}")), '
            f'"getpgid": attempt(lambda: os.getpgid({host})), '
            f'"init_root": attempt(lambda: os.stat("/proc/1/root{victim}")), '
            '"pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), '
            '"passwd": attempt(lambda: os.stat("/etc/passwd")), "root": sorted(os.listdir("/")), '
            '"write_cwd": attempt(lambda: open("new-file", "w")), '
            '"numpy": float(numpy.linalg.inv(numpy.eye(2) * 2).sum())}))')


def test_pid_and_mount_namespaces_hide_the_hosts_files_and_processes(tmp_path):
    """stat/readlink of host files and /proc entries, getpgid of the host (all allowed by seccomp, none governed by
    Landlock) see the host without the namespaces and nothing with them; numpy still imports from the tree."""
    victim = tmp_path / "victim.txt"
    victim.write_text("host file")
    workdir = tmp_path / "work"
    workdir.mkdir()
    then = _metadata_then(str(victim), os.getpid())
    control = findings(run_layers([], then))
    assert all(control[k] == "ok" for k in ("stat_file", "readlink_cwd", "stat_proc", "getpgid", "passwd"))
    assert os.getpid() in control["pids"] and control["numpy"] == 1.0
    pid_only = findings(run_layers(["pid_namespace"], then))
    assert pid_only["getpgid"] == "ProcessLookupError:3" and pid_only["stat_proc"] == "ok"  # the host's /proc
    both = findings(run_layers(["pid_namespace", "mount_namespace"], then, cwd=str(workdir), read_modules=("numpy",)))
    hidden = ("stat_file", "readlink_cwd", "stat_proc", "passwd", "init_root")  # init forked before the tree
    assert {k: both[k] for k in hidden} == dict.fromkeys(hidden, "FileNotFoundError:2")
    assert both["getpgid"] == "ProcessLookupError:3" and both["pids"] == [1, 2]  # its init and itself
    assert both["write_cwd"] == "OSError:30" and not (workdir / "new-file").exists()  # EROFS: a read-only tree
    assert both["numpy"] == 1.0 and "proc" in both["root"] and "home" not in both["root"], both["root"]


def test_the_tree_binds_writable_paths_and_devices_only_when_asked(tmp_path):
    """writable_paths (a trainer's output directory) and devices (a GPU's /dev/nvidia*; here /dev/null, which the
    tree otherwise binds read-only) are bound read-write; everything else is read-only (EROFS; a device node on a
    read-only mount still opens for writing, which seccomp refuses, so its mount flag is what is checked)."""
    out_dir, workdir = tmp_path / "out", tmp_path / "work"
    out_dir.mkdir()
    workdir.mkdir()
    then = (f'print(json.dumps({{"out": attempt(lambda: open({str(out_dir / "a.txt")!r}, "w").write("x")), '
            f'"cwd": attempt(lambda: open("b.txt", "w")), "null_ro": bool(os.statvfs("/dev/null").f_flag & 1)}}))')
    plain = findings(run_layers(["mount_namespace"], then, cwd=str(workdir)))
    assert plain == {"out": "FileNotFoundError:2", "cwd": "OSError:30", "null_ro": True}
    out = findings(run_layers(["mount_namespace"], then, cwd=str(workdir), writable_paths=(str(out_dir),),
                              devices=("/dev/null",)))
    assert out == {"out": "ok", "cwd": "OSError:30", "null_ro": False} and (out_dir / "a.txt").read_text() == "x"


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop applies when bird runs as root")
def test_root_worker_drops_to_a_uid_of_its_own_without_capabilities(tmp_path):
    secret = tmp_path / "root-only"
    secret.write_text("root only")
    secret.chmod(0o600)
    tmp_path.chmod(0o755)
    then = (f'print(json.dumps({{"uid": os.getresuid(), "read": attempt(lambda: open({str(secret)!r}).read()), '
            f'"cap": [l for l in open("/proc/self/status") if l.startswith("CapEff")][0].split()[1], '
            f'"pid": os.getpid()}}))')
    assert findings(run_layers([], then))["read"] == "ok"
    out = findings(run_layers(["unprivileged_user"], then))
    uid = isolation.WORKER_UID_BASE + out.pop("pid")
    assert out == {"uid": [uid] * 3, "read": "PermissionError:13", "cap": "0000000000000000"}


def test_worker_dies_with_its_host():
    """PR_SET_PDEATHSIG: a worker busy in module-level code (not reading its pipe) dies when its host is killed."""
    host = (f"import sys, time\nsys.path[:0] = {[ROOT, *sys.path]!r}\n"
            "from bird.reward.languages import get_language\nfrom bird.reward.sandbox import WorkerProcess\n"
            "w = WorkerProcess(get_language('numpy'), 1024, 60.0)\nprint(w.proc.pid, w.workdir, flush=True)\n"
            "w.proc.stdin.write(__import__('bird.reward.protocol', fromlist=['x']).encode({'seq': 2, 'code': "
            "'while True:\\n    pass\\n', 'entry': 'compute_reward', 'contract': 'compute_reward', 'fields': []}))\n"
            "w.proc.stdin.flush()\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-I", "-c", host], stdout=subprocess.PIPE, text=True)
    pid, workdir = proc.stdout.readline().split()
    time.sleep(1.0)  # the worker is now spinning in the program's module-level code
    tree = _descendants(int(pid))  # the process the host started, its pid namespace's init and the worker
    assert len(tree) == 3 and all(_alive(p) for p in tree)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 60  # a wait, not a speed check: SIGKILL is delivered at once
    while any(_alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in tree)
    os.rmdir(workdir)  # a host killed with SIGKILL cannot remove its worker's (empty) directory itself


def _descendants(pid: int) -> list[int]:
    try:
        children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        children = []
    return [pid] + [d for c in children for d in _descendants(c)]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_host_is_not_readable_by_a_process_of_the_same_user(test_user, canary):
    """harden_host() (PR_SET_DUMPABLE=0, called by every process that starts workers): another process of the same
    unprivileged user cannot read the host's environment. Control: without it, it can."""
    from users import as_user, user_python

    found = user_python(*test_user)
    if isinstance(found, str):
        pytest.skip(found)
    python, site_dir = found
    results = {}
    for harden in (False, True):
        host = (f"import site, sys, time\nsite.addsitedir({site_dir!r})\nfrom bird.reward.isolation import harden_host\n"
                f"{'harden_host()' if harden else ''}\nprint('ready', flush=True)\ntime.sleep(30)\n")
        proc = subprocess.Popen([*as_user(*test_user), python, "-I", "-c", host], stdout=subprocess.PIPE, text=True,
                                env={"PATH": os.defpath, "OPENAI_API_KEY": canary}, cwd="/tmp")
        try:
            assert proc.stdout.readline().strip() == "ready"
            reader = subprocess.run([*as_user(*test_user), "cat", f"/proc/{proc.pid}/environ"], capture_output=True)
            results[harden] = (reader.returncode, canary.encode() in reader.stdout)
        finally:
            proc.kill()
            proc.wait()
    assert results[False] == (0, True)  # control: same user, dumpable: the secret is readable
    assert results[True][0] != 0 and not results[True][1]
