"""Start and stop a real PostgreSQL server for tests and benchmarks (standard library only).

Debian's server binaries live in ``/usr/lib/postgresql/<version>/bin`` (``apt-get install postgresql``). The
server refuses to run as root, so as root ``initdb``/``pg_ctl`` run through ``runuser -u postgres --``. Each
server gets its own temporary directory under /tmp holding the data directory, the Unix-socket directory and the
log; it listens on no TCP address, the port only names the socket file.

    server = start_server()
    url = server.create_database("t1")   # postgresql://postgres@/t1?host=SOCKDIR&port=PORT
    server.restart()                     # same data, socket and port; new postmaster PID
    server.stop()                        # by PID; removes the temporary directory (also run at exit)

``python tests/pgserver.py`` starts a server, prints its URL and stops it on Enter, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

__all__ = ["PgServer", "find_bindir", "start_server"]

START_TIMEOUT = 60  # seconds pg_ctl waits for the server to accept connections
STOP_TIMEOUT = 30.0  # seconds stop() waits after SIGINT before SIGKILL
COMMAND_TIMEOUT = 120  # seconds any initdb / pg_ctl / psql call may take
SERVICE_USER = "postgres"


def find_bindir() -> str:
    """The folder holding ``initdb`` and ``pg_ctl``: the newest Debian version, else ``pg_config --bindir``."""

    def version(path: str) -> tuple[int, ...]:
        name = os.path.basename(os.path.dirname(path))
        return tuple(int(part) for part in re.findall(r"\d+", name)) or (0,)

    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=30, check=True
            ).stdout.strip()
            if out:
                candidates.append(out)
    for bindir in candidates:
        if all(os.access(os.path.join(bindir, tool), os.X_OK) for tool in ("initdb", "pg_ctl", "postgres")):
            return bindir
    raise RuntimeError(
        "No PostgreSQL server binaries found (looked in /usr/lib/postgresql/*/bin and `pg_config --bindir`). "
        "Install them with `apt-get install postgresql`."
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _clean_env() -> dict[str, str]:
    """The environment without PG* variables (PGHOST, PGDATA, ... would redirect the tools)."""
    return {key: value for key, value in os.environ.items() if not key.startswith("PG")}


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)  # reaps it if it happens to be our child
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def _children(pid: int) -> list[int]:
    """PIDs whose parent is ``pid`` (the postmaster's backends), from /proc; empty where there is no /proc."""
    found = []
    for entry in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(entry, encoding="utf-8", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(entry.split("/")[2]))
        except (OSError, IndexError, ValueError):
            continue
    return found


class PgServer:
    """One running PostgreSQL server on a private Unix socket; see :func:`start_server`."""

    url: str
    sockdir: str
    port: int
    datadir: str
    pid: int

    def __init__(self, bindir: str | None = None) -> None:
        self.bindir = bindir or find_bindir()
        self.as_root = os.geteuid() == 0
        self.tmpdir = tempfile.mkdtemp(prefix="scratchpad-pg-", dir="/tmp")
        os.chmod(self.tmpdir, 0o755)
        self.datadir = os.path.join(self.tmpdir, "data")
        self.sockdir = os.path.join(self.tmpdir, "socket")
        self.logdir = os.path.join(self.tmpdir, "log")
        self.logfile = os.path.join(self.logdir, "postgresql.log")
        self.port = _free_port()
        self.url = self.url_for("postgres")
        self.pid = 0
        self._stopped = False
        atexit.register(self.stop)
        try:
            for path in (self.datadir, self.sockdir, self.logdir):
                os.mkdir(path, 0o755)
                if self.as_root:
                    shutil.chown(path, SERVICE_USER, SERVICE_USER)
            self._run(
                [
                    os.path.join(self.bindir, "initdb"),
                    "-D",
                    self.datadir,
                    "--auth=trust",
                    "-U",
                    "postgres",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-instructions",
                ],
                "initdb",
            )
            self._start()
        except BaseException:
            self.stop()
            raise

    # -- URLs and SQL ---------------------------------------------------------------------------------------------

    def url_for(self, dbname: str, user: str = "postgres") -> str:
        """A libpq URL for ``dbname`` as ``user`` over this server's Unix socket."""
        quote = urllib.parse.quote
        return f"postgresql://{quote(user, safe='')}@/{quote(dbname, safe='')}?host={self.sockdir}&port={self.port}"

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        """Run ``sql`` with ``psql`` as the superuser and return its unaligned, tuples-only output."""
        here = os.path.join(self.bindir, "psql")
        psql = here if os.access(here, os.X_OK) else (shutil.which("psql") or "/usr/bin/psql")
        cmd = [psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.sockdir, "-p", str(self.port)]
        cmd += ["-U", "postgres", "-d", dbname, "-c", sql]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, env=_clean_env(), stdin=subprocess.DEVNULL
        )
        if proc.returncode != 0:
            raise RuntimeError(f"psql failed ({proc.returncode}) running {sql!r}: {proc.stderr.strip()}")
        return proc.stdout

    def create_database(self, name: str) -> str:
        """Create database ``name`` and return its URL."""
        quoted = name.replace('"', '""')
        self.psql(f'CREATE DATABASE "{quoted}"')
        return self.url_for(name)

    # -- lifecycle ------------------------------------------------------------------------------------------------

    def restart(self) -> None:
        """Stop the postmaster by PID (keeping the data) and start it again on the same socket and port."""
        if self._stopped:
            raise RuntimeError("this PostgreSQL server was stopped for good")
        self._kill_postmaster()
        self._start()

    def stop(self) -> None:
        """Stop the postmaster by PID (SIGINT, then SIGKILL after 30 s) and remove the temporary directory."""
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        try:
            self._kill_postmaster()
        finally:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def log(self) -> str:
        """The server log so far (empty once stopped)."""
        try:
            with open(self.logfile, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""

    def __enter__(self) -> PgServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<PgServer pid={self.pid} url={self.url!r}>"

    # -- internals ------------------------------------------------------------------------------------------------

    def _run(self, cmd: list[str], what: str) -> None:
        if self.as_root:
            cmd = ["runuser", "-u", SERVICE_USER, "--", *cmd]
        # Output goes to a file, not a pipe: the daemonised postmaster must not hold our pipe open.
        with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as out:
            try:
                proc = subprocess.run(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=self.tmpdir,
                    env=_clean_env(),
                    timeout=COMMAND_TIMEOUT,
                )
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"{what} timed out after {COMMAND_TIMEOUT} s\n{self.log()}") from None
            if proc.returncode != 0:
                out.seek(0)
                raise RuntimeError(f"{what} failed ({proc.returncode}): {out.read().strip()}\n{self.log()}")

    def _start(self) -> None:
        options = f"-k {self.sockdir} -p {self.port} -c listen_addresses='' -c fsync=on -c max_connections=200"
        pg_ctl = os.path.join(self.bindir, "pg_ctl")
        cmd = [pg_ctl, "-D", self.datadir, "-l", self.logfile, "-w", "-t", str(START_TIMEOUT), "start", "-o", options]
        self._run(cmd, "pg_ctl start")
        self.pid = self._read_pid()

    def _read_pid(self) -> int:
        with open(os.path.join(self.datadir, "postmaster.pid"), encoding="utf-8") as fh:
            return int(fh.readline().strip())

    def freeze(self) -> list[int]:
        """SIGSTOP the postmaster and its backends (a hung server: connections stay open, nothing
        answers); returns the PIDs for ``thaw``."""
        pids = [self.pid, *_children(self.pid)]
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        return pids

    @staticmethod
    def thaw(pids: list[int]) -> None:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)

    def _kill_postmaster(self) -> None:
        pid = self.pid
        if not pid:
            with contextlib.suppress(OSError, ValueError):
                pid = self._read_pid()
        if not pid or not _alive(pid):
            self.pid = 0
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)  # fast shutdown: roll back open transactions, checkpoint, exit
        deadline = time.monotonic() + STOP_TIMEOUT
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            backends = _children(pid)
            for victim in [pid, *backends]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(victim, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while any(_alive(p) for p in [pid, *backends]) and time.monotonic() < deadline:
                time.sleep(0.05)
            # A killed postmaster leaves its lock files behind, and while its zombie lingers (a PID 1 that reaps
            # slowly) the next postmaster would take the lock as held; the processes are gone, so drop them.
            for leftover in (
                os.path.join(self.datadir, "postmaster.pid"),
                os.path.join(self.sockdir, f".s.PGSQL.{self.port}"),
                os.path.join(self.sockdir, f".s.PGSQL.{self.port}.lock"),
            ):
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
        self.pid = 0


def start_server(bindir: str | None = None) -> PgServer:
    """Initialise and start a fresh PostgreSQL server; raises RuntimeError if the binaries are missing."""
    return PgServer(bindir)


def main() -> int:
    server = start_server()

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        print(server.url, flush=True)
        print(f"postmaster pid {server.pid}; press Enter (or send SIGTERM) to stop", file=sys.stderr, flush=True)
        try:
            input()
        except EOFError:  # no terminal: wait for a signal instead
            while True:
                signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
