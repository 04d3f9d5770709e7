"""innostall's own work on CPU time the server does not want.

What innostall does before its probes attach (discovery, loading and calibrating the BPF
programs) and after they detach (writing the tables) is bulk work next to a database that
may be saturated. A nice value or SCHED_IDLE does not keep it off the server's CPU: the
kernel shares CPU between task groups first (a session's autogroup, or a systemd slice),
and only then by the tasks' own priority inside a group, so a process in another session
competes with the server as an equal whatever its nice value (a start took 30% of a
saturated server's throughput at nice 0 and SCHED_IDLE alike).

So that work runs in a cgroup of its own whose CPU class is idle (`cpu.idle`, Linux 5.15):
as a whole it yields to every other group at once. A task there may wait as long as the
machine stays saturated, so each stay is bounded (PATIENCE_S): past it the task goes back
to the cgroup it came from and shares the CPU as before. A patience of 0 (record --patience 0,
for a test box where a start's seconds count for more than the server's throughput) never
waits: the work shares the CPU from the start. The probes' own cost is paid in
the server's threads, whatever group innostall runs in; the loader leaves the idle group
once its BPF object is loaded: calibration times traps, and the governor must close
sampling windows on time.

Where the cpu controller cannot be had (a container whose cgroup tree is read-only, a
cgroup v2 root without the cpu controller enabled), nothing changes: the work runs at
SCHED_IDLE in its own group, which spares only the processes of that group.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import threading

GROUP = "innostall"
PATIENCE_S = 5.0  # longest wait for idle CPU in one stay, before sharing the CPU as before


def cpu_cgroup_root() -> tuple[str, str] | None:
    """Where the cpu controller's hierarchy is mounted, and this process's cgroup in it;
    None when no cpu controller is mounted (or, on cgroup v2, enabled below the root)."""
    v1 = v2 = None
    with contextlib.suppress(OSError):
        with open("/proc/self/cgroup") as f:
            for line in f:
                hierarchy, controllers, path = line.rstrip("\n").split(":", 2)
                if "cpu" in controllers.split(","):
                    v1 = path
                elif hierarchy == "0":
                    v2 = path
    for mount, fstype, options in cgroup_mounts():
        if fstype == "cgroup" and v1 is not None and "cpu" in options:
            return mount, v1
        if fstype == "cgroup2" and v1 is None and v2 is not None and cpu_enabled(mount):
            return mount, v2
    return None


def cgroup_mounts():
    """(mount point, file system type, super options) of each cgroup mount."""
    with contextlib.suppress(OSError):
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields, _, fs = line.partition(" - ")
                fstype, _, options = (fs.split() + ["", "", ""])[:3]
                if fstype in ("cgroup", "cgroup2"):
                    yield fields.split()[4], fstype, options.split(",")


def cpu_enabled(mount: str) -> bool:
    """cgroup v2: whether the root hands the cpu controller to its children."""
    try:
        with open(os.path.join(mount, "cgroup.subtree_control")) as f:
            return "cpu" in f.read().split()
    except OSError:
        return False


def write(path: str, value: str) -> bool:
    try:
        with open(path, "w") as f:
            f.write(value)
        return True
    except OSError:
        return False


class IdleGroup:
    """The idle cgroup, shared by every innostall on the host, and the cgroup this process
    came from (home). Moving a process between them is a write of its pid."""

    def __init__(self, idle_dir: str, home_dir: str, patience_s: float = PATIENCE_S):
        self.procs = os.path.join(idle_dir, "cgroup.procs")
        self.home_procs = os.path.join(home_dir, "cgroup.procs")
        self.dir = idle_dir
        self.patience_s = patience_s  # each stay's, unless one says its own

    @classmethod
    def create(cls, patience_s: float = PATIENCE_S) -> "IdleGroup | None":
        """The idle group, made if need be: cpu.idle where the kernel has it, else the
        smallest CPU weight. None when the cpu controller's tree cannot be written."""
        found = cpu_cgroup_root()
        if not found:
            return None
        mount, home = found
        idle_dir = os.path.join(mount, GROUP)
        try:
            os.mkdir(idle_dir)
        except FileExistsError:
            pass
        except OSError:
            return None
        if not (write(os.path.join(idle_dir, "cpu.idle"), "1")
                or write(os.path.join(idle_dir, "cpu.weight"), "1")
                or write(os.path.join(idle_dir, "cpu.shares"), "2")):
            return None
        return cls(idle_dir, os.path.join(mount, home.lstrip("/")), patience_s)

    def enter(self, pid: int | None = None) -> bool:
        return write(self.procs, str(pid or os.getpid()))

    def leave(self, pid: int | None = None) -> bool:
        return write(self.home_procs, str(pid or os.getpid()))

    def remove(self) -> None:
        """The group goes when no innostall uses it any more (another may still be)."""
        with contextlib.suppress(OSError):
            os.rmdir(self.dir)

    def stay(self, pids: list[int], patience_s: float | None = None) -> "Stay":
        """pids in the idle group until the stay ends or patience_s (the group's) is up."""
        return Stay(self, pids, self.patience_s if patience_s is None else patience_s)

    def park(self, pid: int) -> bool:
        """pid in the idle group with no patience: work done ahead that nothing waits for yet
        (the tables' writer's imports while the recording runs, store.TablesAhead), which
        may then wait as long as the machine is busy. stay_parked bounds its wait once
        something waits for it."""
        return self.enter(pid)

    def stay_parked(self, pid: int) -> "Stay":
        """A parked process that something now waits for: a stay of the group's patience
        from now, or home at once where that is 0 (it shares the CPU, as one started now would)."""
        stay = self.stay([pid])
        if not stay.pids:
            self.leave(pid)
        return stay


class Stay:
    """Processes in the idle group for a while: they go home when end() is called or the
    patience is up, whichever comes first. More may join (add) while it lasts."""

    def __init__(self, group: IdleGroup, pids: list[int], patience_s: float):
        self.group, self.pids = group, []
        self.waits = patience_s > 0  # a patience of 0: nobody enters (the timer may not have fired yet)
        self.lock = threading.Lock()  # the timer ends the stay on a thread of its own
        self.timer = threading.Timer(patience_s, self.end)
        self.timer.daemon = True
        self.timer.start()
        for pid in pids:
            self.add(pid)

    def add(self, pid: int) -> None:
        with self.lock:
            if self.waits and self.timer.is_alive() and self.group.enter(pid):
                self.pids.append(pid)

    def end(self) -> None:
        with self.lock:
            self.timer.cancel()
            for pid in self.pids:
                self.group.leave(pid)  # one that has exited has left the group already
            self.pids = []


class Start:
    """innostall's start on idle CPU: this process in the idle group from now until the probes
    attach (the recorder ends the stay then; the loader joins it, and leaves by itself once
    its object is loaded), and the group kept for the tables at the end. Opened before the
    server's executable is read, which is most of a start's own CPU. patience_s: each
    stay's longest wait (0: none, no stay for the start, and the loader is not sent home)."""

    def __init__(self, patience_s: float = PATIENCE_S):
        self.group = IdleGroup.create(patience_s)
        self.stay = self.group.stay([os.getpid()]) if self.group and patience_s > 0 else None

    def close(self) -> None:
        if self.stay:
            self.stay.end()
        if self.group:
            self.group.remove()

    def __enter__(self) -> "Start":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def sched_idle() -> None:
    """SCHED_IDLE for this process: the fallback where no idle cgroup can be had."""
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def start_idle(cmd: list[str], group: IdleGroup | None, **popen) -> tuple[subprocess.Popen, Stay | None]:
    """A command of our own bulk work, started on CPU time nothing else wants: in the idle
    group, for its patience at most (end the stay when it is done); at SCHED_IDLE where
    there is no group. Its output is piped, as text."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=None if group else sched_idle, **popen)
    return proc, (group.stay([proc.pid]) if group else None)


def run_idle(cmd: list[str]) -> tuple[int, str]:
    """A command of our own bulk work run to its end on idle CPU (start_idle, no group), in
    a session of its own (a Ctrl-C at the terminal is the recorder's to handle, not its):
    its exit status and output."""
    proc, _ = start_idle(cmd, None, start_new_session=True)
    out, _ = proc.communicate()
    return proc.returncode, out
