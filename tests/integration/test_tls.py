"""TLS on the listener, checked from outside with curl and openssl s_client against a
throwaway CA made here: the handshake and a payment over it, TLS 1.0 and 1.1 refused, only
forward-secret AEAD suites on 1.2, and a new certificate picked up on SIGHUP while a
connection opened before it keeps working."""
import http.client
import json
import re
import signal
import ssl
import subprocess
import time

from conftest import logged_port, AUTH, create_body


def openssl(*args, **kwargs):
    return subprocess.run(["openssl", *args], capture_output=True, text=True, **kwargs)


def make_ca(d):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"),
            "-days", "2", "-subj", "/CN=idempay test CA", check=True)


def issue(d, name, cn):
    """A server certificate for 127.0.0.1 signed by the CA, with subject CN `cn`."""
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.csr"),
            "-subj", f"/CN={cn}", check=True)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
            "-CAcreateserial", "-out", str(d / f"{name}.pem"), "-days", "2", "-extfile", str(d / "san.ext"), check=True)


def tls_port(c):
    return logged_port(c.process, rb"listening with TLS on [^:]+:(\d+)")


def s_client(port, *args):
    return openssl("s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost", *args,
                   input="", timeout=20)


def subject_of(port, ca):
    out = s_client(port, "-CAfile", str(ca), "-verify_return_error")
    match = re.search(r"subject=.*CN ?= ?([^,\n]+)", out.stdout)
    return out.returncode, match.group(1).strip() if match else None


def test_tls_listener_handshake_versions_and_reload(connector_factory, tmp_path):
    make_ca(tmp_path)
    issue(tmp_path, "server", "first")
    c = connector_factory(extra_args=["--tls-cert", str(tmp_path / "server.pem"), "--tls-key",
                                      str(tmp_path / "server.key"), "--tls-listen", "127.0.0.1:0"])
    port = tls_port(c)
    ca = tmp_path / "ca.pem"

    # curl, verifying against the CA: a payment over TLS; plain HTTP still answers locally.
    headers = sum((["-H", f"{k}: {v}"] for k, v in AUTH.items()), [])
    out = subprocess.run(["curl", "-sS", "--cacert", str(ca), "-o", "-", "-w", "\n%{http_code} %{ssl_verify_result}",
                          *headers, "--data", json.dumps(create_body("tls-1")),
                          f"https://localhost:{port}/payments", "--resolve", f"localhost:{port}:127.0.0.1"],
                         capture_output=True, text=True, timeout=30)
    body, status = out.stdout.rsplit("\n", 1)
    assert status == "200 0", out.stderr
    assert json.loads(body)["status"] == "approved"
    assert c.post("/payments", create_body("tls-1"))[1] == body.encode()  # the same payment over plain HTTP

    # Protocol versions: 1.2 and 1.3 accepted, 1.0 and 1.1 refused (the client allowed to offer them).
    for version in ("-tls1_2", "-tls1_3"):
        out = s_client(port, version, "-CAfile", str(ca))
        assert "Verify return code: 0 (ok)" in out.stdout, (version, out.stdout[-400:], out.stderr[-400:])
    for version in ("-tls1", "-tls1_1"):
        out = s_client(port, version, "-cipher", "DEFAULT@SECLEVEL=0")
        assert out.returncode != 0 and "Cipher is (NONE)" in out.stdout, (version, out.stdout[-400:])
    # TLS 1.2 negotiates forward-secret AEAD only; a client offering only CBC or static RSA gets nothing.
    out = s_client(port, "-tls1_2", "-CAfile", str(ca))
    assert re.search(r"Cipher is ECDHE-RSA-(AES\d+-GCM-SHA\d+|CHACHA20-POLY1305)", out.stdout), out.stdout[-400:]
    for weak in ("AES128-SHA", "ECDHE-RSA-AES128-SHA", "AES256-GCM-SHA384"):
        assert s_client(port, "-tls1_2", "-cipher", weak).returncode != 0, weak

    # A kept-alive connection opened before the reload.
    context = ssl.create_default_context(cafile=str(ca))
    kept = http.client.HTTPSConnection("localhost", port, context=context, timeout=20)
    kept.request("GET", "/health/live")
    assert kept.getresponse().read() and True
    assert subject_of(port, ca) == (0, "first")

    issue(tmp_path, "server", "second")  # the files replaced in place, then SIGHUP
    c.process.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    while subject_of(port, ca)[1] != "second":
        assert time.time() < deadline, "the new certificate was not picked up"
        time.sleep(0.2)
    kept.request("POST", "/payments", body=json.dumps(create_body("tls-2")), headers=AUTH)
    answer = kept.getresponse()
    assert answer.status == 200 and json.loads(answer.read())["paymentId"] == "tls-2"
    kept.close()

    # A broken replacement is refused and the serving certificate stays.
    (tmp_path / "server.key").write_text("not a key\n")
    c.process.proc.send_signal(signal.SIGHUP)
    time.sleep(1)
    assert subject_of(port, ca) == (0, "second")
    assert "TLS certificate not reloaded" in c.process.log_path.read_text()
