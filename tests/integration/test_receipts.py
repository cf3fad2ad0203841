"""Receipts a third party can check: every payment's stored state and audit head signed with
Ed25519 as a compact JWS, verified here by an independent JOSE library (Debian's
python3-jwcrypto, not the project's code) with the anchor alone — the JWK Set published without
credentials. Keys: private files only, rotated by SIGHUP with the old ones still published,
shared by every instance on one PostgreSQL store."""
import json
import os
import pathlib
import re
import signal
import subprocess
import time

import pytest
from jwcrypto import jwk, jws

from conftest import BIN, request
from test_instances import SHARED_ARGS
from test_operator_api import LIMITED, MERCHANTS, OPERATORS, OTHER_AUTH, ROOT, admin, approved, bearer
from test_postgres import pg_uri  # noqa: F401 (a fixture)

ANCHOR = "/.well-known/jwks.json"


def anchor(c):
    status, raw, headers = request(c.port, "GET", ANCHOR, headers={})
    assert status == 200, raw
    assert headers["content-type"] == "application/jwk-set+json"
    return jwk.JWKSet.from_json(raw)


def receipt_of(c, pid, token=ROOT):
    status, raw, _ = admin(c, "GET", f"payments/{pid}/receipt", token=token)
    assert status == 200, raw
    return json.loads(raw)


def verified_claims(token, keys):
    """The receipt's claims if its signature verifies under the anchor's key it names."""
    signed = jws.JWS()
    signed.deserialize(token)
    header = signed.jose_header
    assert header["alg"] == "EdDSA" and header["typ"] == "idempay-receipt+jws", header
    signed.verify(keys.get_key(header["kid"]))
    return json.loads(signed.payload)


def last_audit_entry(c, pid):
    out = subprocess.run([BIN, "inspect", pid, "--json", "--data-dir", str(c.data_dir)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)["audit"][-1]


def ed25519_key_file(path):
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(path)], check=True)
    os.chmod(path, 0o600)
    return path


def connector(connector_factory, stub, *extra):
    return connector_factory(acquirer=stub.url, merchants=MERCHANTS, operators=OPERATORS, extra_args=list(extra))


def test_a_receipt_verifies_with_the_anchor_alone_and_states_the_stored_payment(connector_factory, stubs):
    c = connector(connector_factory, stubs())
    approved(c, "rcpt-1", value=10)
    assert admin(c, "POST", "payments/rcpt-1/settlements", body={"value": 10, "reason": "r"}, key="s1")[0] == 200
    got = receipt_of(c, "rcpt-1")
    keys = anchor(c)
    claims = verified_claims(got["receipt"], keys)
    assert claims == got["claims"]
    entry = last_audit_entry(c, "rcpt-1")
    assert claims["paymentId"] == "rcpt-1" and claims["merchant"] == "shop"
    assert claims["state"] == "settled" and claims["currency"] == "BRL"
    assert (claims["authorized"], claims["settled"], claims["refunded"]) == ("10.00", "10.00", "0.00")
    assert (claims["auditSeq"], claims["auditHead"]) == (entry["seq"], entry["hash"])
    assert abs(claims["iat"] - time.time()) < 60
    # The key id is RFC 7638's thumbprint, as any JOSE library computes it.
    assert keys.get_key(got["kid"]).thumbprint() == got["kid"]
    # Each audit entry's signature status names the anchor's key the instance signs with.
    trail = json.loads(subprocess.run([BIN, "inspect", "rcpt-1", "--json", "--data-dir", str(c.data_dir)],
                                      capture_output=True, text=True, check=True).stdout)["audit"]
    assert {e["signer"] for e in trail} == {got["kid"]}, trail

    # One changed byte anywhere and the signature fails.
    header, payload, signature = got["receipt"].split(".")
    forged = json.loads(jws.base64url_decode(payload))
    forged["refunded"] = "0.01"
    for token in (f"{header}.{jws.base64url_encode(json.dumps(forged))}.{signature}",
                  f"{header}.{payload}.{signature[:-2]}{'A' if signature[-2] != 'A' else 'B'}{signature[-1]}"):
        with pytest.raises(jws.InvalidJWSSignature):
            verified_claims(token, keys)


def test_the_command_line_signs_the_same_and_shows_the_anchor(connector_factory, stubs):
    c = connector(connector_factory, stubs())
    approved(c, "rcpt-cli", value=7)
    out = subprocess.run([BIN, "receipt", "rcpt-cli", "--data-dir", str(c.data_dir)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    claims = verified_claims(out.stdout.strip(), anchor(c))
    assert claims["paymentId"] == "rcpt-cli" and claims["state"] == "approved" and claims["authorized"] == "7.00"
    shown = subprocess.run([BIN, "keys", "show", "--data-dir", str(c.data_dir)], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == json.loads(request(c.port, "GET", ANCHOR, headers={})[1])
    absent = subprocess.run([BIN, "receipt", "never-created", "--data-dir", str(c.data_dir)], capture_output=True,
                            text=True)
    assert absent.returncode == 3 and "no such payment" in absent.stderr


def test_receipts_are_for_operators_who_see_the_merchant_and_the_anchor_is_public(connector_factory, stubs):
    c = connector(connector_factory, stubs())
    approved(c, "rcpt-shop")
    approved(c, "rcpt-other", auth=OTHER_AUTH)
    assert admin(c, "GET", "payments/rcpt-shop/receipt", token=LIMITED)[0] == 404  # as if absent
    assert verified_claims(receipt_of(c, "rcpt-other", token=LIMITED)["receipt"], anchor(c))["merchant"] == "other"
    assert admin(c, "GET", "payments/rcpt-nothing/receipt")[0] == 404
    assert request(c.port, "GET", "/admin/v1/payments/rcpt-shop/receipt", headers={})[0] == 401
    assert request(c.port, "GET", "/admin/v1/payments/rcpt-shop/receipt", headers=bearer("wrong-token-000000"))[0] == 401
    status, _, headers = request(c.port, "GET", ANCHOR, headers={})
    assert status == 200 and headers["access-control-allow-origin"] == "*"
    assert request(c.port, "POST", ANCHOR, body={}, headers={})[0] in (404, 405)


def test_a_rotation_keeps_old_receipts_verifiable_and_survives_a_restart(connector_factory, stubs, tmp_path):
    key_file = ed25519_key_file(tmp_path / "signing.pem")
    c = connector(connector_factory, stubs(), "--signing-key", str(key_file))
    approved(c, "rcpt-rot")
    before = receipt_of(c, "rcpt-rot")
    new_file = ed25519_key_file(tmp_path / "next.pem")
    os.replace(new_file, key_file)
    c.process.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 20
    while b"signing key rotated" not in c.process.log_path.read_bytes():
        assert time.time() < deadline, "no rotation logged"
        time.sleep(0.1)
    after = receipt_of(c, "rcpt-rot")
    assert after["kid"] != before["kid"]
    # Entries written before the rotation name the retired key, those after it the new one.
    approved(c, "rcpt-rot-2")
    assert last_audit_entry(c, "rcpt-rot")["signer"] == before["kid"]
    assert last_audit_entry(c, "rcpt-rot-2")["signer"] == after["kid"]
    time.sleep(5.5)  # the anchor's cache (5 s)
    keys = anchor(c)
    assert {k["kid"] for k in json.loads(keys.export(private_keys=False))["keys"]} == {before["kid"], after["kid"]}
    for got in (before, after):
        assert verified_claims(got["receipt"], keys)["paymentId"] == "rcpt-rot"
    c.process.terminate()
    c.start()
    restarted = anchor(c)
    assert verified_claims(before["receipt"], restarted)["paymentId"] == "rcpt-rot"
    assert receipt_of(c, "rcpt-rot")["kid"] == after["kid"]


def test_a_key_others_can_read_or_not_ed25519_is_refused(tmp_path, stubs):
    loose = ed25519_key_file(tmp_path / "loose.pem")
    os.chmod(loose, 0o644)
    rsa = tmp_path / "rsa.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "rsa", "-pkeyopt", "rsa_keygen_bits:1024", "-out", str(rsa)],
                   check=True, capture_output=True)
    os.chmod(rsa, 0o600)
    for path, why in ((loose, "chmod 600"), (rsa, "not Ed25519"), (tmp_path / "absent.pem", "No such file")):
        out = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "data"),
                              "--signing-key", str(path)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and why in out.stderr, (path, out.returncode, out.stderr)
    # Nothing was published by a start that failed.
    assert not (tmp_path / "data" / "dev-signing-key.pem").exists()


def test_instances_on_one_postgresql_store_publish_each_others_keys(connector_factory, stubs, pg_uri):
    stub = stubs()
    nodes = [connector(connector_factory, stub, "--store", pg_uri, *SHARED_ARGS) for _ in range(2)]
    approved(nodes[0], "rcpt-pg")
    receipts = [receipt_of(node, "rcpt-pg") for node in nodes]
    assert receipts[0]["kid"] != receipts[1]["kid"]
    for node in nodes:
        keys = anchor(node)
        for got in receipts:
            assert verified_claims(got["receipt"], keys)["auditHead"] == receipts[0]["claims"]["auditHead"]


def test_the_docs_openssl_recipe_verifies_a_receipt_and_refuses_a_forged_one(connector_factory, stubs, tmp_path):
    """docs/receipts.md's shell block, run as written, with nothing but OpenSSL and the anchor."""
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "receipts.md").read_text()
    recipe = next(block for block in re.findall(r"```sh\n(.*?)```", doc, re.S) if "openssl pkeyutl" in block)
    c = connector(connector_factory, stubs())
    approved(c, "rcpt-openssl")
    good = receipt_of(c, "rcpt-openssl")["receipt"]
    (tmp_path / "anchor.json").write_bytes(request(c.port, "GET", ANCHOR, headers={})[1])
    header, payload, signature = good.split(".")
    forged = f"{header}.{jws.base64url_encode(jws.base64url_decode(payload).replace(b'approved', b'refunded'))}.{signature}"
    for token, verified in ((good, True), (forged, False)):
        (tmp_path / "receipt.txt").write_text(token + "\n")
        out = subprocess.run(["bash", "-c", recipe], cwd=tmp_path, capture_output=True, text=True)
        assert ("Signature Verified Successfully" in out.stdout) == verified, (out.stdout, out.stderr)
        assert (out.returncode == 0) == verified
