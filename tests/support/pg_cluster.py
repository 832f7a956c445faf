"""A PostgreSQL cluster of a test's own: its own data folder and port, so that restarting it (`pg_ctl restart
-m fast` or `-m immediate`, the database going away under a running bot) disturbs no other test.

Made with the server binaries of the machine's PostgreSQL (Debian's `/usr/lib/postgresql/<version>/bin`);
a test that needs one is skipped where there are none. As root (CI), the server runs as the `postgres`
user, since PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import asyncio
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest


def unused_port() -> int:
    """A loopback port the kernel says is free now (from its ephemeral range): unlike `free_port`'s blocks,
    which the tests of every checkout on this machine share, no other test run picks the same one."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _server_binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


class PostgresCluster:
    """One PostgreSQL server in `folder` on a free port; `url` reaches its `postgres` database."""

    def __init__(self, folder: Path):
        binaries = _server_binaries()
        if binaries is None:
            pytest.skip("no PostgreSQL server binaries (pg_ctl) on this machine")
        self.bin = binaries
        self.folder = folder
        self.data = folder / "data"
        self.log = folder / "server.log"
        self.port = unused_port()
        self._user = "postgres" if os.geteuid() == 0 else None

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin / args[0]), *args[1:]]
        if self._user:
            command = ["runuser", "-u", self._user, "--", *command]
        return subprocess.run(command, check=check, capture_output=True, text=True, timeout=60)

    def _own(self, *paths: Path) -> None:
        if self._user:
            entry = pwd.getpwnam(self._user)
            for path in paths:
                os.chown(path, entry.pw_uid, entry.pw_gid)

    def init(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._own(self.folder)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        with (self.data / "postgresql.conf").open("a") as conf:
            # no fsync (only the machine's crash could lose a commit, never the server's), but commits wait
            # for their WAL write: an `immediate` stop (a crash of the server) must lose no commit; no
            # socket folder that another cluster uses; few connections
            conf.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n"
                "fsync = off\nfull_page_writes = off\nmax_connections = 60\nshared_buffers = 16MB\n"
            )

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def restart(self, mode: str = "fast") -> None:
        """Restart the server (`fast`: connections are told and closed; `immediate`: a crash and recovery)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")
        self.start()

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop", check=False)

    async def restart_async(self, mode: str = "fast", down_for: float = 0.0) -> None:
        """Stop the server, keep it down for `down_for` seconds, start it again (off the event loop)."""
        await asyncio.to_thread(self.stop, mode)
        await asyncio.sleep(down_for)
        await asyncio.to_thread(self.start)

    def ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._run("pg_isready", "-h", "127.0.0.1", "-p", str(self.port), check=False).returncode == 0:
                return
            time.sleep(0.1)
        raise AssertionError(f"the test's PostgreSQL did not come up:\n{self.log.read_text()[-2000:]}")


@pytest.fixture
def postgres_cluster():
    """A started PostgreSQL cluster of this test's own (see the module docstring); stopped and removed at the
    end. Its folder is under the system's temporary folder, not pytest's (which only root may enter)."""
    cluster = PostgresCluster(Path(tempfile.mkdtemp(prefix="bot-test-pg-")))
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.stop("immediate")
        shutil.rmtree(cluster.folder, ignore_errors=True)
