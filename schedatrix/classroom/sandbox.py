"""Where a submission runs: the strongest sandbox this machine offers, and its limits.

Three kinds, tried in this order (``auto``):

``bubblewrap``
    Debian's ``bwrap``: new mount, process, network, IPC and host-name namespaces; the system,
    the Python environment and the package are mounted read-only, nothing else of the machine
    is visible (no home folders, no other submissions, no solutions); the notebook's copy sits
    alone in a small private folder, ``/tmp`` is private too, there is no network, and the
    grader's checker is reached through one socket. As root, the notebook runs as a uid of its
    own (no account uses it) with no capabilities; as another user, as that user inside a
    user namespace.
``setuid``
    No bwrap, but root: the notebook runs as a uid of its own in a private temporary folder,
    so it cannot write where that uid may not; it can still read what every user may read.
``none``
    Neither: a private temporary folder and the limits below, nothing more. Say so to the
    class; the grade output and docs/grading.md do.

Every kind applies the limits (:class:`Limits`): time per cell and per notebook, address
space per process, file size, processes (per uid, so only where the notebook has a uid of its
own or runs as a normal user).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

__all__ = ["KINDS", "Limits", "Sandbox", "Launch", "choose", "probe"]

KINDS = ("bubblewrap", "setuid", "none")
#: The first uid handed to a sandbox; each concurrent sandbox of one grader gets its own.
UID_BASE = 1_600_000_000
#: Where the grader's checker socket appears inside a bubblewrap sandbox.
SOCKET_DIR_INSIDE = "/run/schedatrix"
WORK_INSIDE = "/submission"
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group",
        "nsswitch.conf", "hosts", "fonts")
_TOP_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_RUNNER = Path(__file__).with_name("nbval_run.py")


@dataclass(frozen=True)
class Limits:
    """What one submission may use. Times in seconds, sizes in MiB."""

    cell_timeout_s: int = 60
    notebook_timeout_s: int = 300
    memory_mb: int = 2048
    file_mb: int = 64
    processes: int = 256

    def __post_init__(self) -> None:
        for name, low in (("cell_timeout_s", 1), ("notebook_timeout_s", 5), ("memory_mb", 512),
                          ("file_mb", 1), ("processes", 16)):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= low):
                raise InputError(f"{name} must be a whole number >= {low}, got {value!r}")

    def describe(self) -> str:
        return (f"{self.cell_timeout_s} s per cell, {self.notebook_timeout_s} s per notebook, "
                f"{self.memory_mb} MiB per process, {self.processes} processes")


@dataclass(frozen=True)
class Launch:
    """How to start one sandboxed run: the command, its environment and folder."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    pass_fds: tuple[int, ...]
    socket_path: str  # the checker socket, as the grader binds it


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


@functools.cache
def _read_only_paths() -> tuple[str, ...]:
    """The host folders a sandboxed Python needs: its prefixes and the packages it imports."""
    wanted = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent}
    wanted |= {Path(p).resolve() for p in list(wanted)}
    for name in ("schedatrix", "pytest", "_pytest", "nbval", "ipykernel", "jupyter_client",
                 "zmq", "numpy", "nbformat"):
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


def _env(work: str, socket_path: str) -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    return {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": work,
        "USER": "student",
        "LOGNAME": "student",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "JUPYTER_PLATFORM_DIRS": "1",
        "JUPYTER_RUNTIME_DIR": f"{work}/.jupyter-runtime",
        "IPYTHONDIR": f"{work}/.ipython",
        "MPLCONFIGDIR": f"{work}/.matplotlib",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "SCHEDATRIX_CHECKER": socket_path,
    }


def _runner_args(notebook: str, limits: Limits, uid: int | None, summary_fd: int,
                 processes: bool) -> list[str]:
    args = [sys.executable, str(_RUNNER), notebook,
            f"--memory-mb={limits.memory_mb}", f"--file-mb={limits.file_mb}",
            f"--cpu-s={limits.notebook_timeout_s}", f"--cell-timeout-s={limits.cell_timeout_s}",
            f"--summary-fd={summary_fd}"]
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
        return self.kind in ("bubblewrap", "setuid") and self.as_root

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
        return ("none (no bubblewrap, not root): a private folder and limits only; the "
                "notebook's code can read and write what you can")

    def launch(self, notebook_name: str, data_fd: int, work_dir: Path, socket_path: Path,
               limits: Limits, slot: int, summary_fd: int) -> Launch:
        """How to run ``notebook_name`` (its bytes readable from ``data_fd``) in this sandbox.

        ``work_dir`` is a fresh host folder for this run (used by the fallbacks; bubblewrap
        uses a private in-memory folder instead); ``socket_path`` is the checker's socket.
        """
        uid = UID_BASE + slot if self.own_uid else None
        processes = self.own_uid or not self.as_root
        if self.kind != "bubblewrap":
            target = work_dir / notebook_name
            with open(data_fd, "rb", closefd=False) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            if uid is not None:
                for path in (work_dir, target):
                    os.chown(path, uid, uid)
            os.chmod(work_dir, 0o700)
            env = _env(str(work_dir), str(socket_path))
            env["TMPDIR"] = str(work_dir)
            argv = _runner_args(notebook_name, limits, uid, summary_fd, processes)
            return Launch(argv, env, str(work_dir), (summary_fd,), str(socket_path))
        inside_socket = f"{SOCKET_DIR_INSIDE}/{socket_path.name}"
        size = str(max(limits.file_mb, 16) * 4 * 1024 * 1024)
        argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid",
                "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox",
                "--proc", "/proc", "--dev", "/dev",
                "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
                "--perms", "0777", "--size", size, "--tmpfs", WORK_INSIDE,
                "--perms", "0666", "--file", str(data_fd), f"{WORK_INSIDE}/{notebook_name}",
                "--ro-bind", "/usr", "/usr"]
        for name in _TOP_LINKS:
            top = Path("/") / name
            if top.is_symlink():
                argv += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                argv += ["--ro-bind", str(top), str(top)]
        for name in _ETC:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        made: set[str] = set()
        for path in _read_only_paths():  # after the tmpfs mounts, so a venv under /tmp shows
            for parent in _ancestors(Path(path)):
                if parent not in made:
                    argv += ["--perms", "0755", "--dir", parent]
                    made.add(parent)
            argv += ["--ro-bind", path, path]
        argv += ["--perms", "0755", "--dir", str(Path(SOCKET_DIR_INSIDE).parent),
                 "--ro-bind", str(socket_path.parent), SOCKET_DIR_INSIDE, "--chdir", WORK_INSIDE]
        if self.as_root:
            argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            argv += ["--unshare-user"]
        argv += _runner_args(notebook_name, limits, uid, summary_fd, processes)
        env = _env(WORK_INSIDE, inside_socket)
        env_args = ["--clearenv"] + [a for k, v in env.items() for a in ("--setenv", k, v)]
        argv[1:1] = env_args
        return Launch(argv, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, "/",
                      (data_fd, summary_fd), str(socket_path))


def probe(kind: str) -> str:
    """Why ``kind`` cannot run here (``""`` when it can), by running a short Python in it."""
    sandbox = Sandbox(kind)
    if kind == "none":
        return ""
    if kind == "setuid" and not sandbox.as_root:
        return "not root"
    if kind == "bubblewrap" and shutil.which("bwrap") is None:
        return "bwrap is not installed (Debian: apt-get install bubblewrap)"
    with tempfile.TemporaryDirectory(prefix="schedatrix-probe-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        sock_dir = Path(tmp) / "checker"
        sock_dir.mkdir()
        data = Path(tmp) / "data"
        data.write_text("ok")
        os.chmod(tmp, 0o755)
        fd = os.open(data, os.O_RDONLY)
        try:
            launch = sandbox.launch("probe.txt", fd, work, sock_dir / "checker.sock", Limits(),
                                    slot=0, summary_fd=fd)
            runner_at = launch.argv.index(str(_RUNNER))
            code = ("import os, sys, pytest, ipykernel, schedatrix; "
                    "print(sys.base_prefix, open('probe.txt').read())")
            if sandbox.own_uid:  # a fresh Python started as the sandbox's uid, like the kernel
                code = (f"import os, sys; os.setgroups([]); os.setgid({UID_BASE}); "
                        f"os.setuid({UID_BASE}); "
                        f"os.execv(sys.executable, [sys.executable, '-c', {code!r}])")
            argv = launch.argv[: runner_at - 1] + [sys.executable, "-c", code]
            try:
                done = subprocess.run(argv, env=launch.env, cwd=launch.cwd, pass_fds=(fd,),
                                      capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"{kind} did not start: {exc}"
        finally:
            os.close(fd)
    want = f"{sys.base_prefix} ok"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"{kind} did not run Python: {last[:200]}"
    if done.stdout.strip() != want:
        return (f"{kind} ran another Python (prefix and notebook {done.stdout.strip()!r}, "
                f"expected {want!r}): can the sandbox's uid read this Python?")
    return ""


@functools.cache
def _probed(kind: str) -> str:
    return probe(kind)


def choose(kind: str = "auto") -> Sandbox:
    """The sandbox to grade in: ``kind``, or with ``auto`` the first of :data:`KINDS` that runs
    here. Raises :class:`InputError` when the named kind cannot run here, saying why."""
    if kind == "auto":
        for candidate in KINDS:
            if not _probed(candidate):
                return Sandbox(candidate)
    if kind not in KINDS:
        raise InputError(f"--sandbox must be auto, {', '.join(KINDS)}; got {kind!r}")
    why = _probed(kind)
    if why:
        raise InputError(f"--sandbox {kind} cannot run here: {why}")
    return Sandbox(kind)
