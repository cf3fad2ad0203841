"""Files and secrets: the data directory and everything in it are readable by the service's
own user only, generated secrets are 0600 from the start, and secrets given as files never
appear on the command line."""
import json
import os
import stat

from conftest import Process, create_body, request
from receiver import Receiver


def test_data_directory_and_secrets_are_private(tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)  # as an earlier version left it
    token_file = tmp_path / "callback-token"
    token_file.write_text("token-from-a-file-0123\n")
    r = Receiver()
    p = Process(["serve", "--listen", "127.0.0.1:0", "--data-dir", str(data), "--callback-allow-private",
                 "--callback-allowed-hosts", "127.0.0.1", "--callback-app-key", "connector-key",
                 "--callback-app-token-file", str(token_file), "--stub-pending-delay-ms", "300"],
                tmp_path / "connector.log")
    try:
        dev = json.loads((data / "dev-credentials.json").read_text())["merchants"][0]
        auth = {"X-VTEX-API-AppKey": dev["appKey"], "X-VTEX-API-AppToken": dev["appToken"],
                "Content-Type": "application/json"}
        body = create_body("private-1", card="4222222222222224", callbackUrl=r.url())
        assert request(p.port, "POST", "/payments", body, headers=auth)[0] == 200
        assert r.wait_for(lambda rv: rv.processed)
        assert r.requests[-1]["headers"]["x-vtex-api-apptoken"] == "token-from-a-file-0123"
        assert b"token-from-a-file" not in open(f"/proc/{p.proc.pid}/cmdline", "rb").read()
    finally:
        assert p.terminate() == 0
        r.close()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for secret in ("dev-credentials.json", "dev-callback-secret"):
        assert stat.S_IMODE((data / secret).stat().st_mode) == 0o600, secret
    exposed = [str(path) for path in data.rglob("*") if stat.S_IMODE(path.stat().st_mode) & 0o077]
    assert not exposed, "readable by group or others: " + ", ".join(exposed)
    assert not [path for path in data.iterdir() if ".tmp-" in path.name], "a temporary secret file was left"
