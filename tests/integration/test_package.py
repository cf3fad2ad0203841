"""Packaging: every option of `idempay serve` is documented (docs/configuration.md and the man
page), and — with IDEMPAY_DEB naming the package scripts/package.sh built, as .ci/run does —
the .deb holds the binary, the hardened systemd unit, a default configuration and the man
page; unpacked into a scratch root, the unit's own command line with its environment starts,
tells systemd it is ready (Type=notify, over a NOTIFY_SOCKET made here), answers /health/ready,
and stops cleanly on SIGTERM."""
import json
import os
import pathlib
import re
import shlex
import signal
import socket
import subprocess

import pytest

from conftest import BIN, SANDBOX, logged_port, request

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEB = os.environ.get("IDEMPAY_DEB", "")
SANDBOX_DEB = os.environ.get("IDEMPAY_SANDBOX_DEB", "")


def serve_options():
    help_text = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    return sorted(set(re.findall(r"^\s+(--[a-z0-9-]+)", help_text, re.M)) - {"--help"})


def test_every_serve_option_is_documented():
    options = serve_options()
    assert len(options) > 40
    configuration = (ROOT / "docs" / "configuration.md").read_text()
    man = (ROOT / "deploy" / "idempay.1").read_text().replace("\\-", "-")
    assert [o for o in options if f"`{o}" not in configuration] == []
    assert [o for o in options if o not in man] == []


def test_the_connector_links_no_acquirer_that_moves_no_money():
    """The stub server and the fakes are idempay-sandbox's: the connector's binary has none of
    their commands, nor any of their code (their routes' text)."""
    for command in ("acquirer-stub", "pix-psp", "adyen-fake"):
        refused = subprocess.run([BIN, command], capture_output=True, text=True, timeout=10)
        assert refused.returncode != 0, (command, refused.stderr)
    binary, sandbox_binary = pathlib.Path(BIN).read_bytes(), pathlib.Path(SANDBOX).read_bytes()
    for route in (b"/fake/ledger", b"/fake/pay/", b"/fake/notification-url", b"\0/ledger\0"):
        assert route in sandbox_binary and route not in binary, route
    sandbox = subprocess.run([SANDBOX, "--help"], capture_output=True, text=True)
    assert all(c in sandbox.stdout for c in ("acquirer-stub", "pix-psp", "adyen-fake")), sandbox.stdout


@pytest.mark.skipif(not SANDBOX_DEB, reason="IDEMPAY_SANDBOX_DEB is not set: .ci/run builds the packages")
def test_the_sandbox_is_a_package_of_its_own():
    contents = subprocess.run(["dpkg-deb", "-c", SANDBOX_DEB], capture_output=True, text=True, check=True).stdout
    assert "./usr/bin/idempay-sandbox" in contents and "./usr/bin/idempay\n" not in contents
    info = subprocess.run(["dpkg-deb", "-f", SANDBOX_DEB, "Package"], capture_output=True, text=True).stdout
    assert info.strip() == "idempay-sandbox"
    if DEB:
        server = subprocess.run(["dpkg-deb", "-c", DEB], capture_output=True, text=True, check=True).stdout
        assert "idempay-sandbox" not in server


def unit_settings(unit):
    settings = {}
    for line in unit.read_text().splitlines():
        if "=" in line and not line.startswith("#") and not line.startswith("["):
            key, value = line.split("=", 1)
            settings.setdefault(key, []).append(value)
    return settings


def env_file(path):
    env = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            env[key] = value
    return env


@pytest.mark.skipif(not DEB, reason="IDEMPAY_DEB is not set: .ci/run builds the package (scripts/package.sh)")
def test_the_package_installs_and_its_unit_command_line_serves(tmp_path):
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", DEB, str(root)], check=True)
    info = subprocess.run(["dpkg-deb", "-f", DEB, "Package", "Depends"], capture_output=True, text=True).stdout
    assert "Package: idempay" in info and "librocksdb" in info and "adduser" in info
    for path in ("usr/bin/idempay", "usr/lib/systemd/system/idempay.service", "etc/idempay/idempay.env",
                 "usr/share/man/man1/idempay.1", "usr/share/doc/idempay/configuration.md"):
        assert (root / path).exists(), path
    control = tmp_path / "control"
    subprocess.run(["dpkg-deb", "-e", DEB, str(control)], check=True)
    assert (control / "conffiles").read_text().split() == ["/etc/idempay/idempay.env"]
    assert "adduser --system" in (control / "postinst").read_text()
    version = subprocess.run([str(root / "usr/bin/idempay"), "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and re.search(r"\d+\.\d+\.\d+", version.stdout + version.stderr)

    unit_path = root / "usr/lib/systemd/system/idempay.service"
    unit = unit_settings(unit_path)
    assert unit["Type"] == ["notify"] and unit["User"] == ["idempay"] and unit["NoNewPrivileges"] == ["yes"]
    assert unit["ProtectSystem"] == ["strict"] and unit["StateDirectory"] == ["idempay"]
    assert "@system-service" in unit["SystemCallFilter"][0]
    # systemd's own judgement of the hardening, offline against the unpacked root.
    security = subprocess.run(["systemd-analyze", "security", "--offline=yes", f"--root={root}", "idempay.service"],
                              capture_output=True, text=True)
    exposure = re.search(r"Overall exposure level for idempay.service: ([\d.]+)", security.stdout)
    assert exposure and float(exposure.group(1)) <= 2.0, security.stdout[-2000:]

    # The unit's command line, with its environment: the env file, then the unit's own
    # Environment= lines, paths moved into the scratch root and ports made free.
    env = {"PATH": os.environ["PATH"], **env_file(root / "etc/idempay/idempay.env")}
    for assignment in unit["Environment"]:
        key, value = assignment.split("=", 1)
        env[key] = value
    state = tmp_path / "state"
    env["IDEMPAY_DATA_DIR"] = str(state)
    merchants = tmp_path / "merchants.json"
    merchants.write_text(json.dumps({"merchants": [{"name": "m", "appKey": "k", "appToken": "t" * 32}]}))
    env["IDEMPAY_CREDENTIALS"] = str(merchants)
    env["IDEMPAY_LISTEN"] = "127.0.0.1:0"
    env["IDEMPAY_TLS_LISTEN"] = "127.0.0.1:0"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify"))
    notify.settimeout(30)
    env["NOTIFY_SOCKET"] = str(tmp_path / "notify")
    command = shlex.split(unit["ExecStart"][0])
    assert command[0] == "/usr/bin/idempay"
    command[0] = str(root / "usr/bin/idempay")
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        assert notify.recv(256) == b"READY=1"

        class Started:
            log_path = log
        port = logged_port(Started, rb"idempay listening on [^:]+:(\d+)")
        status, raw, _ = request(port, "GET", "/health/ready", headers={})
        assert status == 200, raw
        proc.send_signal(signal.SIGTERM)
        assert notify.recv(256) == b"STOPPING=1"
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        notify.close()
    assert (state / "rocksdb").is_dir() and oct(state.stat().st_mode & 0o777) == "0o700"
