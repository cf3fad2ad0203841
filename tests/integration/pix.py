"""What the Pix tests share: a throwaway PKI made with the openssl CLI, the fake PSP
(`idempay-sandbox pix-psp`), Stoplight Prism validating against the published API Pix document, and a
merchant whose Pix goes to that PSP."""
import hashlib
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import time

from conftest import APP_KEY, APP_TOKEN, SANDBOX, Process, free_port, logged_port, request

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPEC = ROOT / "tests" / "data" / "bcb-pix" / "openapi.yaml"
SPEC_SHA256 = "4047ae07a639dea4c13cdb60f79e2b849b4825aa6ebebbe96938b9a22d9f1ca8"
PRISM = pathlib.Path(os.environ.get("IDEMPAY_PRISM", ROOT / "tests" / "tools" / "node_modules" / ".bin" / "prism"))
PIX_KEY = "7d9f0335-8dcc-4054-9bf9-0dbd61d36906"
CLIENT_ID, CLIENT_SECRET = "idempay", "psp-client-secret-0123456789"


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


class Pki:
    """A CA; a server certificate for 127.0.0.1 (the PSP's and the connector's listeners); the
    connector's client certificate (mutual TLS towards the PSP); the PSP's (its notifications);
    and a stranger's, signed by the same CA but pinned nowhere."""

    def __init__(self, d):
        self.d = d
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "ca.key"), "-out",
                str(d / "ca.pem"), "-days", "2", "-subj", "/CN=idempay pix test CA")
        (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
        for name, ext in [("server", "server.ext"), ("connector", "client.ext"), ("psp", "client.ext"),
                          ("stranger", "client.ext")]:
            openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / f"{name}.key"), "-out",
                    str(d / f"{name}.csr"), "-subj", f"/CN={name}")
            openssl("x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / "ca.pem"), "-CAkey",
                    str(d / "ca.key"), "-CAcreateserial", "-out", str(d / f"{name}.pem"), "-days", "2",
                    "-extfile", str(d / ext))

    def path(self, name):
        return str(self.d / name)

    def fingerprint(self, name):
        """SHA-256 of the certificate's DER, as `openssl x509 -fingerprint -sha256` shows it."""
        out = subprocess.run(["openssl", "x509", "-in", self.path(f"{name}.pem"), "-noout", "-fingerprint",
                              "-sha256"], check=True, capture_output=True, text=True).stdout
        return out.strip().split("=", 1)[1]


def start_psp(base_dir, name, pki=None, mtls=True, *args):
    """The fake PSP: plain HTTP always (Prism's upstream), TLS with `pki` (mutual with `mtls`),
    notifications sent with the PSP's client certificate."""
    secret = base_dir / f"{name}-psp-secret"
    secret.write_text(CLIENT_SECRET + "\n")
    argv = ["pix-psp", "--plain-listen", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--client-id", CLIENT_ID,
            "--client-secret-file", str(secret), "--pix-key", PIX_KEY, *args]
    if pki:
        argv += ["--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"),
                 "--webhook-cert", pki.path("psp.pem"), "--webhook-key", pki.path("psp.key"),
                 "--webhook-ca", pki.path("ca.pem")]
        if mtls:
            argv += ["--client-ca", pki.path("ca.pem")]
    psp = Process(argv, base_dir / f"{name}-psp.log", program=SANDBOX)
    psp.url = f"http://127.0.0.1:{psp.port}"
    if pki:
        tls_port = logged_port(psp, rb"pix-psp listening with TLS on [^:]+:(\d+)")
        psp.tls_url = f"https://127.0.0.1:{tls_port}"
    return psp


def psp_ledger(psp):
    status, raw, _ = request(psp.port, "GET", "/fake/ledger", headers={})
    assert status == 200
    return json.loads(raw)


def charge(psp, txid):
    found = [c for c in psp_ledger(psp)["charges"] if c["txid"] == txid]
    assert len(found) <= 1
    return found[0] if found else None


def pay(psp, txid):
    return request(psp.port, "POST", f"/fake/pay/{txid}", b"{}", headers={})


class Prism:
    """`prism proxy` in front of `upstream`, on the document with its one erratum (PROVENANCE.md):
    every request and answer checked against the schemas, a violation answered as an error."""

    def __init__(self, base_dir, name, upstream, spec=None):
        """`spec`: another document than API Pix's, used as it stands."""
        assert PRISM.exists(), f"Stoplight Prism is not installed at {PRISM} (scripts/install-deps.sh test)"
        if spec is None:
            assert hashlib.sha256(SPEC.read_bytes()).hexdigest() == SPEC_SHA256
            spec = base_dir / f"{name}-api-pix.yaml"
            spec.write_text(SPEC.read_text().replace('pattern: "/^\\\\d{11}$/"', 'pattern: "^\\\\d{11}$"'))
        self.spec = spec
        self.log_path = base_dir / f"{name}-prism.log"
        # Prism takes no port 0: the free port chosen may be taken by another test's server
        # before Prism binds it (EADDRINUSE); then it starts again on another.
        for _ in range(3):
            if self._start(upstream):
                break
        else:
            raise AssertionError("Prism did not start: " + self.log_path.read_text())
        self.url = f"http://127.0.0.1:{self.port}"

    def _start(self, upstream):
        self.port = free_port()
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([str(PRISM), "proxy", str(self.spec), upstream, "--errors", "-h", "127.0.0.1",
                                      "-p", str(self.port)], stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.time() + 60
        while b"Prism is listening" not in self.log_path.read_bytes():
            if self.proc.poll() is not None:
                assert b"EADDRINUSE" in self.log_path.read_bytes(), self.log_path.read_text()
                self.log.close()
                return False
            assert time.time() < deadline, "Prism did not start"
            time.sleep(0.2)
        return True

    def violations(self):
        """Every request or answer Prism found against the document."""
        text = self.log_path.read_text(errors="replace")
        return [line for line in text.splitlines() if re.search(r"Violation|✖|error\s", line)]

    def stop(self):
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=20)


def pix_acquirer(api_url, token_url, pki=None, **extra):
    entry = {"name": "psp", "kind": "bcb-pix", "methods": ["Pix"], "baseUrl": api_url, "tokenUrl": token_url,
             "clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET, "pixKey": PIX_KEY, "timeoutMs": 5000}
    if pki:
        entry.update({"certificateFile": pki.path("connector.pem"), "keyFile": pki.path("connector.key"),
                      "caFile": pki.path("ca.pem"), "webhookCertificateSha256": [pki.fingerprint("psp")]})
    entry.update(extra)
    return entry


def pix_merchant(acquirer):
    return [{"name": "shop", "appKey": APP_KEY, "appToken": APP_TOKEN, "acquirers": [acquirer]}]


def tls_args(pki):
    return ["--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"), "--tls-listen", "127.0.0.1:0",
            "--tls-client-certificates"]


def pix_body(payment_id, value=31.9, **extra):
    from conftest import create_body
    body = create_body(payment_id, value=value, paymentMethod="Pix", card=None, **extra)
    body.pop("card")
    body["miniCart"]["buyer"] = {"firstName": "Ana", "lastName": "Silva", "document": "12345678909",
                                 "documentType": "CPF", "email": "ana@example.com", "phone": "+5511999999999"}
    return body


def notify(connector_tls_port, pki, body, cert="psp"):
    """POST a notification to the connector's TLS listener as a PSP would (curl, mutual TLS)."""
    args = ["curl", "-sS", "--cacert", pki.path("ca.pem"), "-o", "-", "-w", "\n%{http_code}",
            "-H", "content-type: application/json", "--data-binary", json.dumps(body)]
    if cert:
        args += ["--cert", pki.path(f"{cert}.pem"), "--key", pki.path(f"{cert}.key")]
    out = subprocess.run(args + [f"https://127.0.0.1:{connector_tls_port}/webhooks/bcb-pix/shop/psp/pix"],
                         capture_output=True, text=True, timeout=30)
    lines = out.stdout.rsplit("\n", 1)
    return int(lines[-1]) if lines[-1].isdigit() else 0, lines[0]


def wait_for(predicate, timeout=20, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def bin_path():
    from conftest import BIN
    return BIN


def have_prism():
    return PRISM.exists() and shutil.which("node") is not None
