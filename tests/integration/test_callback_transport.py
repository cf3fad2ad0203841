"""Callback transport: HTTPS with certificate and host-name verification, and the
per-destination concurrency limit."""
import subprocess
import time

from conftest import CALLBACK_ARGS, create_body
from receiver import callback_body


def make_ca_and_cert(tmp_path, san):
    """A throwaway CA and a server certificate for `san`, made with the openssl CLI."""
    run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True)
    ca_key, ca_crt = tmp_path / "ca.key", tmp_path / "ca.crt"
    key, csr, crt = tmp_path / "srv.key", tmp_path / "srv.csr", tmp_path / "srv.crt"
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca_crt),
        "-days", "2", "-subj", "/CN=idempay test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=receiver")
    ext = tmp_path / "ext.cnf"
    ext.write_text(f"subjectAltName={san}\n")
    run("x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key), "-CAcreateserial",
        "-out", str(crt), "-days", "2", "-extfile", str(ext))
    return ca_crt, (str(crt), str(key))


def test_https_callbacks_verify_chain_and_host(connector_factory, receiver, tmp_path):
    ca, cert = make_ca_and_cert(tmp_path, "IP:127.0.0.1")
    good = receiver(tls=cert)
    c = connector_factory(extra_args=CALLBACK_ARGS + ["--callback-ca-file", str(ca)])
    c.post("/payments", create_body("tls-ok", card="4222222222222224", callbackUrl=good.url()))
    assert good.wait_for(lambda rv: rv.processed), "a trusted certificate for the right host is accepted"
    assert callback_body(good.requests[-1])["status"] == "approved"

    (tmp_path / "other").mkdir()
    other_ca, other_cert = make_ca_and_cert(tmp_path / "other", "DNS:elsewhere.example")
    wrong_host = receiver(tls=other_cert)
    c = connector_factory(extra_args=CALLBACK_ARGS + ["--callback-ca-file", str(other_ca)])
    c.post("/payments", create_body("tls-host", card="4222222222222224", callbackUrl=wrong_host.url()))
    untrusted = receiver(tls=cert)
    c2 = connector_factory(extra_args=CALLBACK_ARGS)  # no --callback-ca-file: chain not trusted
    c2.post("/payments", create_body("tls-untrusted", card="4222222222222224", callbackUrl=untrusted.url()))
    time.sleep(2.5)
    assert not wrong_host.processed, "a certificate for another host name must be refused"
    assert not untrusted.processed, "an untrusted certificate must be refused"


def test_per_destination_concurrency_limit(connector_factory, receiver):
    r = receiver(default="slow", slow_seconds=0.5)
    # A timed-out attempt is over for the connector while the receiver still works on it:
    # a timeout well above the receiver's delay keeps the count about the limit alone.
    args = list(CALLBACK_ARGS)
    args[args.index("--callback-timeout-ms") + 1] = "5000"
    c = connector_factory(extra_args=args + ["--callback-max-per-destination", "2"])
    for i in range(6):
        c.post("/payments", create_body(f"limit-{i}", card="4222222222222224", callbackUrl=r.url()))
    assert r.wait_for(lambda rv: len(rv.processed) == 6, timeout=30)
    assert len(r.requests) == 6, "each callback delivered in one attempt"
    assert r.max_active <= 2
    assert r.max_active == 2, "the limit should still allow parallel deliveries"
