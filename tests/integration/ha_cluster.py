"""The local HA cluster of scripts/ha-local.sh (three etcd members, three PostgreSQL nodes run by
Patroni, haproxy on Patroni's GET /primary), driven from Python: its roles as `patronictl list`
reports them, and the faults the failover tests and the soak (scripts/ha-soak.py) inflict on
it. Independent of idempay: every fact comes from Patroni, etcd or the processes themselves."""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import time

HA_LOCAL = str(pathlib.Path(__file__).resolve().parents[2] / "scripts" / "ha-local.sh")


class HaCluster:
    def __init__(self, directory, attempts=2):
        self.dir = pathlib.Path(directory)
        for attempt in range(attempts):
            out = subprocess.run([HA_LOCAL, "start", str(self.dir)], capture_output=True, text=True)
            if out.returncode == 0:
                break
            # The free ports it chose were free a moment before: another process (a test's
            # server on port 0) may have taken one since. Start again on new ports.
            self.stop()
            for child in self.dir.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        else:
            raise RuntimeError("ha-local.sh start failed: " + out.stdout + out.stderr)
        self.haproxy_uri, self.multihost_uri = out.stdout.strip().splitlines()[-2:]

    def stop(self):
        subprocess.run([HA_LOCAL, "stop", str(self.dir)], capture_output=True)

    def restart_missing(self):
        """Starts again whatever is not running (a killed node, etcd member), and waits for a
        leader with a synchronous standby."""
        out = subprocess.run([HA_LOCAL, "start", str(self.dir)], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError("ha-local.sh start failed: " + out.stdout + out.stderr)

    # -- roles, from Patroni ---------------------------------------------------------------------

    def members(self):
        """patronictl list -f json: [{Member, Role, State, TL, Lag in MB, ...}], or [] if it
        cannot say (no etcd quorum)."""
        out = subprocess.run(["patronictl", "-c", str(self.dir / "node1" / "patroni.yml"), "list", "-f", "json"],
                             capture_output=True, text=True, timeout=20)
        try:
            return json.loads(out.stdout) if out.returncode == 0 else []
        except ValueError:
            return []

    def leader(self):
        for m in self.members():
            if m["Role"] == "Leader" and m["State"] == "running":
                return m["Member"]
        return None

    def wait_for(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            members = self.members()
            if predicate(members):
                return members
            time.sleep(0.5)
        raise AssertionError(f"after {timeout} s, still not {what}: {self.members()}")

    def wait_healthy(self, timeout=120):
        """A running leader and a streaming synchronous standby."""
        def ok(members):
            roles = {m["Role"] for m in members if m["State"] in ("running", "streaming")}
            return "Leader" in roles and "Sync Standby" in roles
        return self.wait_for(ok, timeout, "a leader with a synchronous standby")

    # -- processes --------------------------------------------------------------------------------

    def pids(self, node):
        """Node `node` ("node2")'s Patroni pid and its PostgreSQL processes (postmaster first)."""
        path = self.dir / node
        patroni = int((path / "patroni.pid").read_text())
        postmaster = int((path / "data" / "postmaster.pid").read_text().splitlines()[0])
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
        return patroni, [postmaster, *map(int, children)]

    def etcd_pid(self, n):
        return int((self.dir / f"etcd{n}.pid").read_text())

    @staticmethod
    def signal_all(pids, sig):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def kill_postgres(self, node):
        _, postgres = self.pids(node)
        self.signal_all(postgres[:1], signal.SIGKILL)

    def kill_patroni(self, node):
        patroni, _ = self.pids(node)
        self.signal_all([patroni], signal.SIGKILL)

    def kill_node(self, node):
        patroni, postgres = self.pids(node)
        self.signal_all([patroni, *postgres], signal.SIGKILL)

    def freeze(self, node):
        patroni, postgres = self.pids(node)
        self.signal_all([patroni, *postgres], signal.SIGSTOP)
        return [patroni, *postgres]

    def kill_etcd(self, n):
        self.signal_all([self.etcd_pid(n)], signal.SIGKILL)

    def switchover(self, leader, candidate):
        out = subprocess.run(["patronictl", "-c", str(self.dir / "node1" / "patroni.yml"), "switchover",
                              "--leader", leader, "--candidate", candidate, "--force"],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError("switchover failed: " + out.stdout + out.stderr)

    def restart_postgres(self, node):
        """A rolling-restart step: Patroni restarts its PostgreSQL (patronictl restart)."""
        out = subprocess.run(["patronictl", "-c", str(self.dir / "node1" / "patroni.yml"), "restart", "idempay",
                              node, "--force"], capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError("restart failed: " + out.stdout + out.stderr)
