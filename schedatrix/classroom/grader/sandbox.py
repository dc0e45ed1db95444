"""Where a submission runs: a real sandbox on this machine, or none when asked for, and limits.

Two sandboxes, tried in this order by ``--sandbox auto``:

``bubblewrap``
    Debian's ``bwrap``: new mount, process, network, IPC and host-name namespaces; the system,
    the Python environment and the package are mounted read-only, nothing else of the machine
    is visible (no home folders, no other submissions, no solutions); each run sits alone in a
    small private folder, ``/tmp`` is private too, there is no network, and the grader is
    reached only through what it hands the run (a socket, a file descriptor). As root, the run
    is a uid of its own (no account uses it) with no capabilities; as another user, that user
    inside a user namespace.
``setuid``
    No bwrap, but root, and a Python every user can read: the run is a uid of its own in a
    private temporary folder, so it cannot write where that uid may not; it can still read
    what every user may read, and reach the network.

When neither runs here ``auto`` stops and says why (:func:`choose`). ``none`` (a private
temporary folder and the limits, nothing more) runs only when asked for by name, and the grade
table says so on every row.

Every kind applies the limits (:class:`Limits`): time per cell and per notebook, one memory
bound for the run's processes together (:mod:`.memory_bound`), address space per process,
file size, processes (per uid, so only where the run has a uid of its own
or the grader is a normal user). Where a run has a uid of its own, every process left under
that uid is killed when the run ends (:meth:`Sandbox.clean_up`), so nothing outlives it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ...errors import InputError
from .memory_bound import Bound, bound_for

__all__ = ["KINDS", "REAL", "Limits", "Sandbox", "Launch", "choose", "probe", "unreadable_for",
           "package_dir", "end", "end_all", "allow_runs", "over_memory", "leftover_prefix",
           "sweep_leftovers"]

KINDS = ("bubblewrap", "setuid", "none")
#: The kinds that are sandboxes (``auto`` picks only these).
REAL = ("bubblewrap", "setuid")
#: The first uid handed to a sandbox. Each run gets one of its own: a block of
#: :data:`UIDS_PER_GRADER` per grader process (by its process id, so two graders on one machine,
#: or two test processes, never share one), and in it one per concurrent slot.
UID_BASE = 1_600_000_000
UIDS_PER_GRADER = 1_024
#: Where the grader's checker socket appears inside a bubblewrap sandbox.
SOCKET_DIR_INSIDE = "/run/schedatrix"
WORK_INSIDE = "/submission"
#: How long one probe may take (a loaded 2-core machine starts a sandboxed Python slowly), and
#: how many times a failed probe is tried.
PROBE_TIMEOUT_S = 180
PROBE_ATTEMPTS = 2
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group",
        "nsswitch.conf", "hosts", "fonts")
_TOP_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_NO_SANDBOX_FIX = ("install bubblewrap (Debian: apt-get install bubblewrap), or grade without "
                   "a sandbox with --sandbox none (the notebooks' code can then read and write "
                   "what you can)")


@dataclass(frozen=True)
class Limits:
    """What one submission may use. Times in seconds, sizes in MiB.

    ``memory_mb`` bounds a whole sandboxed run, all its processes together
    (:mod:`.memory_bound`); each process's address space is also capped, at
    ``address_space_mb`` (0: at ``memory_mb``). ``memory_bound``: ``auto`` (a cgroup where
    the machine offers one, else the watchdog) or ``watchdog``.
    """

    cell_timeout_s: int = 60
    notebook_timeout_s: int = 300
    memory_mb: int = 2048
    file_mb: int = 64
    processes: int = 256
    address_space_mb: int = 0
    memory_bound: str = "auto"

    def __post_init__(self) -> None:
        for name, low in (("cell_timeout_s", 1), ("notebook_timeout_s", 5), ("memory_mb", 256),
                          ("file_mb", 1), ("processes", 16), ("address_space_mb", 0)):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= low):
                raise InputError(f"{name} must be a whole number >= {low}, got {value!r}")
        if 0 < self.address_space_mb < 512:
            raise InputError(f"address_space_mb must be 0 or >= 512, got {self.address_space_mb}")
        if self.memory_bound not in ("auto", "watchdog"):
            raise InputError(f"memory_bound must be auto or watchdog, got {self.memory_bound!r}")

    @property
    def address_mb(self) -> int:
        """Each process's address space, MiB."""
        return self.address_space_mb or self.memory_mb

    def describe(self) -> str:
        return (f"{self.cell_timeout_s} s per cell, {self.notebook_timeout_s} s per notebook, "
                f"{self.memory_mb} MiB per notebook (all its processes together), "
                f"{self.processes} processes")


@dataclass(frozen=True)
class Launch:
    """How to start one sandboxed run: the command, its environment and folder, and the one
    memory bound its processes share (:mod:`.memory_bound`)."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    pass_fds: tuple[int, ...]
    bound: Bound | None = None
    uid: int | None = None
    own_fds: tuple[int, ...] = ()  # descriptors made for this run, closed once it started

    def start(self, stdout=subprocess.DEVNULL, stderr=None, text: bool = False
              ) -> subprocess.Popen:
        """Start the run in a session of its own (so :func:`end` reaches all it starts), with
        nothing on its standard input, under its memory bound."""
        argv = self.bound.wrap(self.argv) if self.bound is not None else self.argv
        try:
            process = subprocess.Popen(argv, env=self.env, cwd=self.cwd,
                                       pass_fds=self.pass_fds, stdin=subprocess.DEVNULL,
                                       stdout=stdout, stderr=stderr, text=text,
                                       start_new_session=True)
        except BaseException:
            if self.bound is not None:
                self.bound.close()
            raise
        finally:
            for fd in self.own_fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        with _LIVE_LOCK:
            _LIVE.add(process)
            stopping = _STOPPING.is_set()

        def kill() -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

        if self.bound is not None:
            self.bound.watch(process.pid, self.uid, kill)
        if stopping:     # told to stop while this run was being set up: it ends at once
            kill()
        return process


#: The sandboxed runs under way in this process (:func:`end_all` ends them at once).
_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()
#: Set by :func:`end_all`: a run started after it is ended as it starts (a stop that lands
#: between a run's folders and its process must not wait for the whole notebook); cleared
#: by :func:`allow_runs` when a grading begins.
_STOPPING = threading.Event()
#: The temporary folders a grader makes: ``schedatrix-<what>-<grader's pid>-...``.
_LEFTOVER = re.compile(r"^schedatrix-(answer-free|evaluate|grade|probe)-(\d+)-")


def leftover_prefix(what: str) -> str:
    """The prefix of a temporary folder this grader makes (its process id in it, so a later
    grader can tell a dead one's leftovers: :func:`sweep_leftovers`)."""
    return f"schedatrix-{what}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_leftovers(folder: str | None = None) -> list[Path]:
    """Remove the temporary folders of graders that are gone (one killed outright leaves its
    answer-free copies and run folders: nothing of it ran to remove them); return them."""
    folder = folder or tempfile.gettempdir()
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _LEFTOVER.match(entry.name)
        if match and int(match.group(2)) != os.getpid() and not _alive(int(match.group(2))):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def end_all() -> None:
    """End every sandboxed run of this process now (the grader is told to stop): each one's
    waits then end at once, and its folders are removed as it unwinds."""
    with _LIVE_LOCK:
        _STOPPING.set()
        live = list(_LIVE)
    for process in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def allow_runs() -> None:
    """A grading begins: runs start again after an earlier :func:`end_all`."""
    _STOPPING.clear()


def end(process: subprocess.Popen, grace_s: float = 0.0, bound: Bound | None = None) -> int:
    """Give a sandboxed run ``grace_s`` to exit, then end it and everything it started (and
    release its memory bound); return its exit status."""
    if grace_s > 0:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    code = process.wait()
    with _LIVE_LOCK:
        _LIVE.discard(process)
    if bound is not None:
        bound.close()
    return code


def over_memory(limits: Limits) -> str:
    """How a failure says a run went over its memory bound."""
    return (f"its processes went over {limits.memory_mb} MiB together (the memory one "
            "notebook may hold, all its processes): ended")


def _options_fd(options: list[str]) -> int:
    """A readable descriptor holding ``options`` NUL-separated (bwrap's ``--args``)."""
    data = b"".join(o.encode() + b"\0" for o in options)
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("bwrap-args", 0)
    else:  # pragma: no cover - Linux has memfd_create
        handle = tempfile.TemporaryFile()
        fd = os.dup(handle.fileno())
        handle.close()
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _ancestors(path: Path) -> list[str]:
    return [str(p) for p in reversed(path.parents) if str(p) != "/"]


def _module_dir(name: str) -> Path | None:
    """Where a top-level package lives, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
        return None
    return Path(spec.origin).resolve().parent


def package_dir() -> Path:
    """The folder of the installed ``schedatrix`` package."""
    return Path(__file__).resolve().parents[2]


@functools.cache
def _read_only_paths() -> tuple[str, ...]:
    """The host folders a sandboxed Python needs: its prefixes and the packages it imports."""
    wanted = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent}
    wanted |= {Path(p).resolve() for p in list(wanted)}
    wanted.add(package_dir())
    for name in ("pytest", "_pytest", "nbval", "ipykernel", "IPython", "jupyter_client", "zmq",
                 "numpy", "nbformat"):
        found = _module_dir(name)
        if found is not None:
            wanted.add(found)
    system = (Path("/usr"), Path("/etc"))
    keep = []
    for path in sorted(wanted, key=lambda p: len(p.parts)):
        if any(path == s or s in path.parents for s in system):
            continue
        if not any(k == path or k in path.parents for k in keep):
            keep.append(path)
    return tuple(str(p) for p in keep if p.exists())


def _needed_paths() -> list[str]:
    """What a sandbox's uid must be able to read for this Python to run as it does here."""
    paths = [sys.executable, os.path.dirname(os.__file__)]
    for key in ("purelib", "platlib"):
        with contextlib.suppress(KeyError):
            paths.append(sysconfig.get_paths()[key])
    paths += _read_only_paths()
    return list(dict.fromkeys(p for p in paths if os.path.exists(p)))


def unreadable_for(paths: list[str]) -> str:
    """The first of ``paths`` (or a folder on the way to one) this process cannot read, said
    in a line (``""`` when it can read them all). Run it as the uid in question."""
    for path in paths:
        for step in [*_ancestors(Path(path)), path]:
            if step != path:
                need = os.X_OK  # a folder on the way: it only has to be passed through
            else:
                need = os.R_OK | os.X_OK if os.path.isdir(path) else os.R_OK
            if not os.access(step, need):
                try:
                    info = os.stat(step)
                    how = f" (mode {stat.S_IMODE(info.st_mode):04o}, owner uid {info.st_uid})"
                except OSError:
                    how = ""
                where = "" if step == path else f", on the way to {path}"
                return f"the sandbox's uid cannot read {step}{how}{where}"
    return ""


def _env(work: str, socket_path: str | None) -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": work,
        "USER": "student",
        "LOGNAME": "student",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        # the package the grader runs, wherever the environment's own install points (a git
        # worktree shares its main checkout's environment, whose editable install names the
        # main checkout's package: the sandbox must run this one)
        "PYTHONPATH": str(package_dir().parent),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "JUPYTER_PLATFORM_DIRS": "1",
        "JUPYTER_RUNTIME_DIR": f"{work}/.jupyter-runtime",
        "IPYTHONDIR": f"{work}/.ipython",
        "MPLCONFIGDIR": f"{work}/.matplotlib",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    if socket_path:
        env["SCHEDATRIX_CHECKER"] = socket_path
    return env


def limit_args(limits: Limits, uid: int | None, processes: bool) -> list[str]:
    """The runners' limit options
    (:func:`~schedatrix.classroom.grader.nbval_run.add_limit_args`)."""
    args = [f"--memory-mb={limits.address_mb}", f"--file-mb={limits.file_mb}",
            f"--cpu-s={limits.notebook_timeout_s}"]
    if processes:
        args.append(f"--processes={limits.processes}")
    if uid is not None:
        args.append(f"--uid={uid}")
    return args


@dataclass(frozen=True)
class Sandbox:
    """One kind of sandbox on this machine (see the module's docstring)."""

    kind: str

    @property
    def as_root(self) -> bool:
        return hasattr(os, "geteuid") and os.geteuid() == 0

    @property
    def own_uid(self) -> bool:
        """Whether each run gets a uid of its own (root only)."""
        return self.kind in REAL and self.as_root

    def uid(self, slot: int) -> int | None:
        """The uid of a run in ``slot`` (``None`` where runs have no uid of their own)."""
        if not self.own_uid:
            return None
        return UID_BASE + (os.getpid() % 2_000_000) * UIDS_PER_GRADER + slot % UIDS_PER_GRADER

    def runner_args(self, limits: Limits, slot: int) -> list[str]:
        """The limit options for a runner in ``slot`` (processes are limited per uid, so only
        where the run has a uid of its own, or the grader is not root)."""
        return limit_args(limits, self.uid(slot), self.own_uid or not self.as_root)

    def describe(self) -> str:
        """One line for the grade output: what this sandbox defends."""
        if self.kind == "bubblewrap":
            who = ("as a uid of its own, no capabilities" if self.own_uid
                   else "as you, in a user namespace")
            return ("bubblewrap: private mounts (system and Python read-only, nothing else "
                    f"visible), no network, own process tree, {who}")
        if self.kind == "setuid":
            return ("setuid (no bubblewrap here): a uid of its own in a private folder; it "
                    "can still read what every user may read, and the network")
        return ("none (asked for with --sandbox none): NO SANDBOX, a private folder and limits "
                "only; the notebooks' code can read and write what you can")

    def package_inside(self, package: Path) -> Path:
        """Where a run in this sandbox sees ``package`` (a copy of the package's folder):
        under bubblewrap, in place of the package itself, which it hides."""
        return package_dir() if self.kind == "bubblewrap" else package

    def launch(self, inner: list[str], work_dir: Path, limits: Limits, slot: int, *,
               pass_fds: tuple[int, ...] = (), files: dict[str, int] | None = None,
               socket_path: Path | None = None, package: Path | None = None) -> Launch:
        """How to run the command ``inner`` in this sandbox, as its paths are seen inside.

        ``work_dir`` is a fresh host folder for this run (the fallbacks' folder; bubblewrap uses
        a private in-memory one instead); ``files`` maps names to readable descriptors whose
        bytes are put in that folder; ``socket_path`` is a checker's socket (its path inside
        is in ``SCHEDATRIX_CHECKER``); ``package`` is a copy of the package's folder to run
        with instead of the package (see :meth:`package_inside`).
        """
        uid = self.uid(slot)
        files = files or {}
        if self.kind != "bubblewrap":
            for name, fd in files.items():
                target = work_dir / name
                with open(fd, "rb", closefd=False) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                if uid is not None:
                    os.chown(target, uid, uid)
            if uid is not None:
                os.chown(work_dir, uid, uid)
            os.chmod(work_dir, 0o700)
            env = _env(str(work_dir), str(socket_path) if socket_path else None)
            env["TMPDIR"] = str(work_dir)
            return Launch(list(inner), env, str(work_dir), tuple(pass_fds),
                          bound_for(limits.memory_mb, limits.memory_bound), uid)
        size = str(max(limits.file_mb, 16) * 4 * 1024 * 1024)
        argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid",
                "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox",
                "--proc", "/proc", "--dev", "/dev",
                "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
                "--perms", "0777", "--size", size, "--tmpfs", WORK_INSIDE]
        for name, fd in files.items():
            argv += ["--perms", "0666", "--file", str(fd), f"{WORK_INSIDE}/{name}"]
        argv += ["--ro-bind", "/usr", "/usr"]
        for name in _TOP_LINKS:
            top = Path("/") / name
            if top.is_symlink():
                argv += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                argv += ["--ro-bind", str(top), str(top)]
        for name in _ETC:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        made: set[str] = set()
        hidden = str(package_dir()) if package is not None else None
        for path in _read_only_paths():  # after the tmpfs mounts, so a venv under /tmp shows
            for parent in _ancestors(Path(path)):
                if parent not in made:
                    argv += ["--perms", "0755", "--dir", parent]
                    made.add(parent)
            if path != hidden:
                argv += ["--ro-bind", path, path]
        if package is not None:  # over the package, wherever it is: the package stays hidden
            argv += ["--ro-bind", str(package), str(package_dir())]
        env = _env(WORK_INSIDE, None)
        if socket_path is not None:
            argv += ["--perms", "0755", "--dir", str(Path(SOCKET_DIR_INSIDE).parent),
                     "--ro-bind", str(socket_path.parent), SOCKET_DIR_INSIDE]
            env["SCHEDATRIX_CHECKER"] = f"{SOCKET_DIR_INSIDE}/{socket_path.name}"
        argv += ["--chdir", WORK_INSIDE]
        if self.as_root:
            argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            argv += ["--unshare-user"]
        env_args = ["--clearenv"] + [a for k, v in env.items() for a in ("--setenv", k, v)]
        argv[1:1] = env_args
        # bwrap's options (the host folders it mounts, the grader's temporary paths) reach it
        # through a file descriptor, not its command line: inside, /proc/1/cmdline is bwrap's,
        # and shows only "bwrap --args N" and the command
        options = _options_fd(argv[1:])
        argv = [argv[0], "--args", str(options), *inner]
        return Launch(argv, {"PATH": "/usr/bin:/bin"}, "/",
                      tuple(dict.fromkeys((*files.values(), *pass_fds, options))),
                      bound_for(limits.memory_mb, limits.memory_bound), uid, (options,))

    def clean_up(self, slot: int) -> None:
        """Kill every process left under the run's own uid (a process that left the run's
        process group or session, waiting for the next notebook of this slot)."""
        uid = self.uid(slot)
        if uid is None:
            return
        pid = os.fork()
        if pid == 0:  # the child: become the uid, then signal everything the uid owns
            code = 0
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                for _ in range(1_000):
                    os.kill(-1, signal.SIGKILL)  # every process of this uid but this one
            except ProcessLookupError:
                pass
            except BaseException:
                code = 1
            os._exit(code)
        os.waitpid(pid, 0)


def _probe_once(sandbox: Sandbox, timeout_s: float) -> str:
    kind = sandbox.kind
    with tempfile.TemporaryDirectory(prefix=leftover_prefix("probe")) as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        data = Path(tmp) / "data"
        data.write_text("ok")
        os.chmod(tmp, 0o755)
        fd = os.open(data, os.O_RDONLY)
        try:
            code = ("import os, sys, pytest, ipykernel, IPython, numpy, schedatrix; "
                    "print(sys.base_prefix, open('probe.txt').read())")
            if sandbox.own_uid:  # a fresh Python started as the sandbox's uid, like the kernel
                uid = sandbox.uid(0)
                code = ("import os, sys\n"
                        f"from schedatrix.classroom.grader.sandbox import unreadable_for\n"
                        f"os.setgroups([]); os.setgid({uid}); os.setuid({uid})\n"
                        f"why = unreadable_for({_needed_paths()!r})\n"
                        "if why:\n"
                        "    print(why, file=sys.stderr)\n"
                        "    sys.exit(3)\n"
                        f"os.execv(sys.executable, [sys.executable, '-c', {code!r}])")
            launch = sandbox.launch([sys.executable, "-c", code], work, Limits(), slot=0,
                                    files={"probe.txt": fd})
            try:
                process = launch.start(stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True)
            except OSError as exc:
                return f"{kind} did not start: {exc}"
            try:
                out, err = process.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                end(process)
                return f"{kind} started no Python within {timeout_s:g} s"
            finally:
                end(process, bound=launch.bound)
                sandbox.clean_up(0)
        finally:
            os.close(fd)
    want = f"{sys.base_prefix} ok"
    if process.returncode != 0:
        last = (err.strip().splitlines() or ["no message"])[-1]
        if process.returncode == 3 and last.startswith("the sandbox's uid"):
            return last[:300]
        return f"{kind} did not run Python: {last[:200]}"
    if out.strip() != want:
        return (f"{kind} ran another Python (prefix and notebook {out.strip()!r}, "
                f"expected {want!r})")
    return ""


def probe(kind: str, attempts: int = PROBE_ATTEMPTS, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """Why ``kind`` cannot run here (``""`` when it can), by running a short Python in it.

    A failed probe is tried again (``attempts`` in all, each given ``timeout_s``): on a loaded
    machine a sandbox may start slowly, once."""
    sandbox = Sandbox(kind)
    if kind == "none":
        return ""
    if kind == "setuid" and not sandbox.as_root:
        return "not root (setuid needs root)"
    if kind == "bubblewrap" and shutil.which("bwrap") is None:
        return "bwrap is not installed"
    why = ""
    for _ in range(max(1, attempts)):
        why = _probe_once(sandbox, timeout_s)
        if not why:
            return ""
    return why


@functools.cache
def _probed(kind: str) -> str:
    return probe(kind)


def choose(kind: str = "auto") -> Sandbox:
    """The sandbox to grade in: ``kind``, or with ``auto`` the first of :data:`REAL` that runs
    here. Raises :class:`InputError` saying why when none does (``auto``) or the named kind
    cannot run here; ``none`` is never chosen but by name."""
    if kind == "auto":
        reasons = []
        for candidate in REAL:
            why = _probed(candidate)
            if not why:
                return Sandbox(candidate)
            reasons.append(f"{candidate}: {why}")
        raise InputError(f"--sandbox auto found no sandbox here ({'; '.join(reasons)}): "
                         f"{_NO_SANDBOX_FIX}")
    if kind not in KINDS:
        raise InputError(f"--sandbox must be auto, {', '.join(KINDS)}; got {kind!r}")
    why = _probed(kind)
    if why:
        raise InputError(f"--sandbox {kind} cannot run here: {why}")
    return Sandbox(kind)
