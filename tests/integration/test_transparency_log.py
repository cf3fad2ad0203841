"""The transparency log over every payment: each receipt's chain head is a leaf of one
append-only Merkle tree (RFC 9162), whose tree heads the instances check and co-sign. Checked
here by a test-side implementation of the RFC's algorithms (rfc9162.py, itself checked against
RFC 6962's reference vectors) and tree heads' signatures by python3-jwcrypto with the anchor:
nothing of the connector's own code verifies. Tampering with the stored log — a leaf rewritten,
the log rewound — is refused by every instance, which says why and stops signing; SIGKILLs
while appending and co-signing leave a log whose tree heads never go backwards."""
import hashlib
import json
import pathlib
import random
import shutil
import subprocess
import threading
import time

from jwcrypto import jwk, jws

import rfc9162
from conftest import BIN, create_body, request
from test_instances import SHARED_ARGS
from test_metrics import metrics_port, scrape
from test_operator_api import MERCHANTS, OPERATORS, admin, approved
from test_postgres import pg_uri, psql  # noqa: F401 (a fixture)
from test_receipts import ANCHOR, receipt_of

LOG_ARGS = ["--log-interval-ms", "100"]


def get_json(c, path):
    status, raw, _ = request(c.port, "GET", path, headers={})
    return status, (json.loads(raw) if raw else None)


def tree_head(c, size=None):
    status, head = get_json(c, "/log/v1/tree-head" + (f"?size={size}" if size is not None else ""))
    return head if status == 200 else None


def checked_tree_head(c, head, quorum=1):
    """The tree head if enough distinct keys of the anchor signed exactly its size and root."""
    keys = jwk.JWKSet.from_json(request(c.port, "GET", ANCHOR, headers={})[1])
    kids = set()
    for token in head["signatures"]:
        signed = jws.JWS()
        signed.deserialize(token)
        assert signed.jose_header["typ"] == "idempay-tree-head+jws"
        signed.verify(keys.get_key(signed.jose_header["kid"]))
        payload = json.loads(signed.payload)
        assert payload == {"log": "idempay", "size": head["size"], "root": head["root"],
                           "timestamp": head["timestamp"]}, payload
        kids.add(signed.jose_header["kid"])
    assert len(kids) >= quorum, head
    return head


def leaf_of(claims):
    return rfc9162.leaf_hash(rfc9162.receipt_leaf(claims["paymentId"], claims["auditSeq"], claims["auditHead"]))


def included(c, claims, quorum=1, timeout=20):
    """The receipt's leaf, proved included in a published tree head: (index, head)."""
    leaf = leaf_of(claims)
    deadline = time.time() + timeout
    while True:
        status, proof = get_json(c, f"/log/v1/proof/inclusion?leafHash={leaf.hex()}")
        if status == 200:
            break
        assert status == 404 and time.time() < deadline, (status, proof)
        time.sleep(0.1)
    head = checked_tree_head(c, tree_head(c, proof["treeSize"]), quorum)
    assert rfc9162.verify_inclusion(proof["leafIndex"], proof["treeSize"], leaf,
                                    [bytes.fromhex(h) for h in proof["proof"]], bytes.fromhex(head["root"]))
    return proof["leafIndex"], head


def consistent(c, old, new):
    if old["size"] == new["size"]:
        return old["root"] == new["root"]
    status, proof = get_json(c, f"/log/v1/proof/consistency?first={old['size']}&second={new['size']}")
    assert status == 200, proof
    return rfc9162.verify_consistency(old["size"], new["size"], bytes.fromhex(old["root"]), bytes.fromhex(new["root"]),
                                      [bytes.fromhex(h) for h in proof["proof"]])


def keep_creating(c, prefix, stop, answered):
    """Creates payments on `c` until `stop` is set (its process may be killed meanwhile); the
    paymentIds answered 200 go to `answered`."""
    n = 0
    while not stop.is_set():
        n += 1
        try:
            if request(c.port, "POST", "/payments", create_body(f"{prefix}-{n}"), timeout=5)[0] == 200:
                answered.append(f"{prefix}-{n}")
        except OSError:
            time.sleep(0.05)


def connector(connector_factory, stub, *extra):
    return connector_factory(acquirer=stub.url, merchants=MERCHANTS, operators=OPERATORS,
                             extra_args=[*LOG_ARGS, *extra])


def test_the_test_side_rfc9162_matches_the_reference_vectors():
    """tests/data/rfc6962-merkle-vectors.json (its provenance is in it), the file the connector's
    own unit tests read too."""
    vectors = json.loads((pathlib.Path(__file__).parents[1] / "data" / "rfc6962-merkle-vectors.json").read_text())
    leaves = [bytes.fromhex(h) for h in vectors["leaves"]]
    roots = [bytes.fromhex(r) for r in vectors["roots"]]
    assert [rfc9162.mth(leaves[:n]) for n in range(1, 9)] == roots
    for case in vectors["inclusion"]:
        proof = [bytes.fromhex(h) for h in case["proof"]]
        leaf = rfc9162.leaf_hash(leaves[case["leaf"] - 1])
        assert rfc9162.verify_inclusion(case["leaf"] - 1, case["size"], leaf, proof, roots[case["size"] - 1]), case
        if proof:
            assert not rfc9162.verify_inclusion(case["leaf"] - 1, case["size"], leaf, proof[:-1], roots[case["size"] - 1])
    for case in vectors["consistency"]:
        proof = [bytes.fromhex(h) for h in case["proof"]]
        first, second = case["first"], case["second"]
        assert rfc9162.verify_consistency(first, second, roots[first - 1], roots[second - 1], proof), case
        if proof:
            assert not rfc9162.verify_consistency(first, second, roots[first - 1], roots[second - 1], proof[:-1])
            assert not rfc9162.verify_consistency(first, second, roots[second - 1], roots[first - 1], proof)


def test_every_receipt_is_in_a_signed_tree_head_and_tree_heads_only_grow(connector_factory, stubs):
    c = connector(connector_factory, stubs())
    heads, indices = [], set()
    for i in range(6):
        approved(c, f"log-{i}", value=10)
        if i % 2 == 0:
            assert admin(c, "POST", f"payments/log-{i}/settlements", body={"value": 10, "reason": "r"},
                         key=f"s{i}")[0] == 200
        claims = receipt_of(c, f"log-{i}")["claims"]
        index, head = included(c, claims)
        indices.add(index)
        heads.append(head)
    assert len(indices) == 6
    newest = checked_tree_head(c, tree_head(c))
    for old in heads:
        assert old["size"] <= newest["size"] and consistent(c, old, newest), (old, newest)
    # A receipt with anything changed names a leaf the log does not hold.
    claims = receipt_of(c, "log-0")["claims"]
    for forged in ({**claims, "auditSeq": claims["auditSeq"] + 1}, {**claims, "auditHead": "00" * 32},
                   {**claims, "paymentId": "log-x"}):
        assert get_json(c, f"/log/v1/proof/inclusion?leafHash={leaf_of(forged).hex()}")[0] == 404
    # Bad questions get the protocol's refusals, nothing else.
    for query in ("inclusion?leafHash=zz", "inclusion?leafHash=" + "00" * 32 + "&treeSize=x",
                  "consistency?first=0&second=1", "consistency?first=5", f"consistency?first=1&second={10**9}"):
        assert get_json(c, "/log/v1/proof/" + query)[0] in (400, 404), query


def signers(head):
    kids = set()
    for token in head["signatures"]:
        signed = jws.JWS()
        signed.deserialize(token)
        kids.add(signed.jose_header["kid"])
    return sorted(kids)


def test_a_forked_log_shown_to_two_verifiers_is_caught_when_they_compare_tree_heads(connector_factory, stubs):
    """Whoever runs the store forks the log: a copy of the data directory, its log dropped and
    its instance's witness file removed, so that the copy's instance signs another history
    under the same published key. Verifier one kept a tree head and a receipt from the first
    log; verifier two is shown the fork. Each accepts what it is shown, alone; compared, the
    fork's consistency proof from verifier one's head fails and verifier one's receipt is in
    no tree of the fork: two heads signed by one key that cannot both be true, and the payment
    the fork dropped, each named."""
    stub = stubs()
    first_log = connector(connector_factory, stub)
    for i in range(4):
        approved(first_log, f"fork-{i}")
    kept = receipt_of(first_log, "fork-3")["claims"]
    _, kept_head = included(first_log, kept)  # verifier one
    anchor = request(first_log.port, "GET", ANCHOR, headers={})[1]
    first_log.process.terminate()

    fork = connector(connector_factory, stub)
    fork.process.terminate()
    shutil.rmtree(fork.data_dir)
    shutil.copytree(first_log.data_dir, fork.data_dir)
    ldb(fork.data_dir / "rocksdb", "log", "deleterange", "a", "z")
    (fork.data_dir / "log-witness.json").unlink()
    first_log.start()
    fork.start()
    for i in range(kept_head["size"] + 2):
        approved(fork, f"forked-{i}")
    deadline = time.time() + 20
    while (shown := tree_head(fork)) is None or shown["size"] < kept_head["size"]:
        assert time.time() < deadline, shown
        time.sleep(0.1)
    # Verifier two: the fork's head verifies under the same anchor, signed by the same key.
    assert request(fork.port, "GET", ANCHOR, headers={})[1] == anchor
    shown = checked_tree_head(fork, shown)
    assert signers(shown) == signers(kept_head)

    # Compared: no consistency proof joins them, and the kept receipt's leaf is not in the fork.
    assert not consistent(fork, kept_head, shown)
    assert get_json(fork, f"/log/v1/proof/inclusion?leafHash={leaf_of(kept).hex()}")[0] == 404
    evidence = (f"fork: tree head {kept_head['size']} (root {kept_head['root']}) and tree head {shown['size']} "
                f"(root {shown['root']}), both signed by {signers(shown)}, are not consistent; payment "
                f"{kept['paymentId']} (audit entry {kept['auditSeq']}) is in the first and not in the second")
    print(evidence)
    # The first log still proves both its receipt and its own growth from the kept head.
    assert included(first_log, kept)[1]["size"] >= kept_head["size"]
    assert consistent(first_log, kept_head, checked_tree_head(first_log, tree_head(first_log)))


def test_instances_co_sign_and_refuse_a_rewritten_log(connector_factory, stubs, pg_uri):
    """Two instances on one PostgreSQL store, a tree head published only with both signatures.
    History rewritten in the database (whoever runs it could: every stored hash replaced, and the
    tree's right edge that new leaves are hashed onto): the next tree head is refused by both,
    each says why, the metric turns 0, and the published head stays the last good one."""
    stub = stubs()
    quorum = ["--log-quorum", "2", "--metrics-listen", "127.0.0.1:0"]
    nodes = [connector(connector_factory, stub, "--store", pg_uri, *SHARED_ARGS, *quorum) for _ in range(2)]
    approved(nodes[0], "cosign-1")
    _, head = included(nodes[1], receipt_of(nodes[1], "cosign-1")["claims"], quorum=2)
    good = checked_tree_head(nodes[0], tree_head(nodes[0]), quorum=2)
    assert good["size"] >= head["size"]
    for node in nodes:
        assert scrape(metrics_port(node))["idempay_log_consistent"] == 1
        assert json.loads(request(node.port, "GET", "/health", headers={})[1])["log"] == "consistent"

    psql(pg_uri, "UPDATE idempay.kv_log SET value = sha256(value) || substring(value from 33) "
                 "WHERE key >= convert_to('n/', 'UTF8') AND key < convert_to('n0', 'UTF8')")
    psql(pg_uri, "UPDATE idempay.kv_log SET value = convert_to(regexp_replace(convert_from(value, 'UTF8'), "
                 f"'\"hash\":\"[0-9a-f]{{64}}\"', '\"hash\":\"{'ab' * 32}\"'), 'UTF8') "
                 "WHERE key = convert_to('h', 'UTF8')")
    approved(nodes[1], "cosign-2")
    deadline = time.time() + 20
    while any(scrape(metrics_port(n))["idempay_log_consistent"] != 0 for n in nodes):
        assert time.time() < deadline, "an instance signed a rewritten log"
        time.sleep(0.2)
    time.sleep(1)
    for node in nodes:
        assert json.loads(request(node.port, "GET", "/health", headers={})[1])["log"] == "inconsistent"
        assert b"refusing to sign" in node.process.log_path.read_bytes()
        assert b"the log was rewritten" in node.process.log_path.read_bytes()
    assert tree_head(nodes[0])["size"] == good["size"], "a rewritten log's tree head was published"
    newest_made = int(psql(pg_uri, "SELECT convert_from(value, 'UTF8') FROM idempay.kv_log "
                                   "WHERE key = convert_to('s', 'UTF8')").strip())
    assert newest_made > good["size"]
    assert len(tree_head(nodes[0], newest_made)["signatures"]) == 0


def test_a_rewound_log_is_refused(connector_factory, stubs, pg_uri):
    c = connector(connector_factory, stubs(), "--store", pg_uri, "--metrics-listen", "127.0.0.1:0")
    approved(c, "rewind-1")
    _, first = included(c, receipt_of(c, "rewind-1")["claims"])
    approved(c, "rewind-2")
    _, second = included(c, receipt_of(c, "rewind-2")["claims"])
    assert second["size"] > first["size"]
    # The newest tree head pointed back at an older one: the log seems to have lost leaves.
    psql(pg_uri, f"UPDATE idempay.kv_log SET value = convert_to('{first['size']}', 'UTF8') "
                 "WHERE key IN (convert_to('s', 'UTF8'), convert_to('q', 'UTF8'))")
    deadline = time.time() + 20
    while scrape(metrics_port(c))["idempay_log_consistent"] != 0:
        assert time.time() < deadline, "a rewound log went unnoticed"
        time.sleep(0.2)
    assert b"the log went backwards" in c.process.log_path.read_bytes()


def test_sigkill_while_appending_and_signing_leaves_a_log_that_verifies(connector_factory, stubs):
    c = connector_factory(acquirer=stubs().url, merchants=MERCHANTS, operators=OPERATORS,
                          extra_args=["--log-interval-ms", "20"])
    answered, stop = [], threading.Event()
    seen = []
    for round_ in range(4):
        stop.clear()
        worker = threading.Thread(target=keep_creating, args=(c, f"kill{round_}", stop, answered))
        worker.start()
        time.sleep(random.uniform(0.5, 1.5))
        if (head := tree_head(c)) is not None:
            seen.append(head)
        c.process.kill()
        stop.set()
        worker.join()
        c.start()
    for i in range(1, len(seen)):
        assert seen[i]["size"] >= seen[i - 1]["size"], "a published tree head went backwards"
    # Every payment answered before a kill is in the log, and every head seen extends the last.
    deadline = time.time() + 30
    while (newest := tree_head(c)) is None or any(
            get_json(c, f"/log/v1/proof/inclusion?leafHash={leaf_of(receipt_of(c, pid)['claims']).hex()}")[0] != 200
            for pid in answered[-3:]):
        assert time.time() < deadline
        time.sleep(0.2)
    newest = checked_tree_head(c, tree_head(c))
    for head in seen:
        assert consistent(c, head, newest), (head, newest)
    for pid in answered:
        included(c, receipt_of(c, pid)["claims"])


def ldb(db, family, *args):
    return subprocess.run(["ldb", f"--db={db}", f"--column_family={family}", *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def audit_verify(data_dir):
    return subprocess.run([BIN, "audit", "verify", "--data-dir", str(data_dir)], capture_output=True, text=True)


def test_audit_verify_replays_the_log_and_names_each_break(connector_factory, stubs, tmp_path):
    """The log checked offline against the chains, its nodes, tree heads and signatures: a
    removed payment, a log cut back and a tree head signed by an unknown key are each found,
    with their place."""
    c = connector(connector_factory, stubs())
    for i in range(5):
        approved(c, f"audit-{i}")
    for i in range(5):
        included(c, receipt_of(c, f"audit-{i}")["claims"])
    head = tree_head(c)
    c.process.terminate()
    verified = audit_verify(c.data_dir)
    assert verified.returncode == 0 and "the transparency log holds them" in verified.stdout, verified.stdout

    def copy(name):
        target = tmp_path / name
        shutil.copytree(c.data_dir, target)
        return target, target / "rocksdb"

    # A payment removed, its record and its whole chain: the log still names it.
    removed, db = copy("removed")
    for key in ldb(db, "audit", "scan", "--from=audit-2/", "--to=audit-20").splitlines():
        ldb(db, "audit", "delete", key.split(" : ")[0])
    ldb(db, "payments", "delete", "audit-2")
    out = audit_verify(removed)
    assert out.returncode == 2, out.stdout
    assert "INCONSISTENT log, leaf" in out.stdout and "payment audit-2" in out.stdout and "removed" in out.stdout

    # A payment's newest batch of entries removed (approved: its outcome). No copy of the head
    # is stored beside the chain; the log holds the head it had, and the payment's stored
    # state no longer matches its trail.
    truncated, db = copy("truncated")
    keys = [line.split(" : ")[0] for line in ldb(db, "audit", "scan", "--from=audit-1/", "--to=audit-1/~").splitlines()]
    ldb(db, "audit", "delete", keys[-1])
    out = audit_verify(truncated)
    assert out.returncode == 2, out.stdout
    assert "INCONSISTENT log, leaf" in out.stdout and "payment audit-1" in out.stdout and "removed" in out.stdout
    assert "INCONSISTENT payment audit-1: stored state approved disagrees" in out.stdout, out.stdout

    # The log cut back: its last leaf gone.
    cut, db = copy("cut")
    last = f"n/00/{head['size'] - 1:016x}"
    ldb(db, "log", "delete", last)
    out = audit_verify(cut)
    assert out.returncode == 2 and "the right edge" in out.stdout and f"tree head {head['size']}" in out.stdout, out.stdout

    # A tree head carrying a signature by a key nobody published.
    foreign, db = copy("foreign")
    key = jwk.JWK.generate(kty="OKP", crv="Ed25519")
    raw = bytes.fromhex(ldb(db, "log", "--value_hex", "get", f"t/{head['size']:016x}")[2:])
    etag, stored = raw[:8], json.loads(raw[8:])  # RocksDB values: 8 bytes of etag, then the value
    payload = json.dumps({"log": "idempay", "size": stored["size"], "root": stored["root"],
                          "timestamp": stored["timestamp"]}, separators=(",", ":"))
    token = jws.JWS(payload.encode())
    token.add_signature(key, alg="EdDSA", protected=json.dumps({"alg": "EdDSA", "kid": key.thumbprint(),
                                                                "typ": "idempay-tree-head+jws"}))
    stored["signatures"].append(token.serialize(compact=True))
    ldb(db, "log", "--value_hex", "put", f"t/{head['size']:016x}",
        "0x" + (etag + json.dumps(stored, separators=(",", ":")).encode()).hex())
    out = audit_verify(foreign)
    assert out.returncode == 2 and f"tree head {head['size']}: signed by key {key.thumbprint()}" in out.stdout, out.stdout
    assert "not published" in out.stdout

    # A payment's chain rebuilt so that its first entry names a key nobody published: every
    # hash recomputed, as whoever runs the database could. The key is named, and the log,
    # which holds the chain's real head, disagrees with the rebuilt one.
    resigned, db = copy("resigned")
    rebuild_chain(db, "audit-3", signer=key.thumbprint())
    out = audit_verify(resigned)
    assert out.returncode == 2, out.stdout
    assert (f"INCONSISTENT payment audit-3: audit entry 1 names signing key {key.thumbprint()}, "
            "which the store has not published") in out.stdout, out.stdout
    assert "INCONSISTENT log, leaf" in out.stdout and "payment audit-3" in out.stdout, out.stdout


def rebuild_chain(db, pid, signer):
    """Rewrites `pid`'s audit chain with its first entry naming `signer`, every hash and link
    recomputed over the stored form (the hashed form followed by the hash). Each key holds one
    batch's entries, a JSON array."""
    prev = ""
    for line in ldb(db, "audit", "--value_hex", "scan", f"--from={pid}/", f"--to={pid}/9").splitlines():
        key, value = line.split(" : ")
        raw = bytes.fromhex(value[2:])
        etag, stored = raw[:8], raw[8:].decode()
        rewritten = []
        for entry in json.loads(stored):
            del entry["hash"]
            entry["prev"] = prev
            if entry["seq"] == 1:
                entry["signer"] = signer
            hashed = json.dumps(entry, separators=(",", ":"), ensure_ascii=False)
            prev = hashlib.sha256(hashed.encode()).hexdigest()
            rewritten.append(hashed[:-1] + f',"hash":"{prev}"}}')
        ldb(db, "audit", "--value_hex", "put", key, "0x" + (etag + ("[" + ",".join(rewritten) + "]").encode()).hex())


def test_sigkill_while_co_signing_on_postgresql_never_publishes_a_head_backwards(connector_factory, stubs, pg_uri):
    """Two instances, a quorum of two, one of them SIGKILLed again and again while payments
    arrive: the published tree head only grows, each one carries both instances' signatures,
    and once the load stops both sign the newest head."""
    stub = stubs()
    args = ["--store", pg_uri, *SHARED_ARGS, "--log-quorum", "2", "--log-interval-ms", "50"]
    nodes = [connector_factory(acquirer=stub.url, merchants=MERCHANTS, operators=OPERATORS, extra_args=args)
             for _ in range(2)]
    published, stop = [], threading.Event()
    worker = threading.Thread(target=keep_creating, args=(nodes[0], "cokill", stop, []))
    worker.start()
    try:
        for _ in range(4):
            time.sleep(random.uniform(0.3, 1.0))
            if (head := tree_head(nodes[0])) is not None:
                published.append(head)
            nodes[1].process.kill()
            time.sleep(0.2)
            nodes[1].start()
    finally:
        stop.set()
        worker.join()
    approved(nodes[0], "cokill-last")
    _, last = included(nodes[0], receipt_of(nodes[0], "cokill-last")["claims"], quorum=2, timeout=30)
    published.append(checked_tree_head(nodes[0], tree_head(nodes[0]), quorum=2))
    for before, after in zip(published, published[1:]):
        assert after["size"] >= before["size"] and consistent(nodes[0], before, after), (before, after)
    for head in published:
        checked_tree_head(nodes[0], head, quorum=2)
    assert last["size"] <= published[-1]["size"]


def test_audit_verify_on_a_store_being_appended_to_finds_nothing_wrong(connector_factory, stubs, pg_uri):
    """`audit verify` while an instance keeps appending (a shared store, checked live): the
    leaves appended after the log's check began are not a break. (Found by a CI run that verified right after
    a failover, while the sequencer worked off its backlog.)"""
    c = connector_factory(acquirer=stubs().url, merchants=MERCHANTS, operators=OPERATORS,
                          extra_args=["--store", pg_uri, "--log-interval-ms", "10"])
    stop = threading.Event()
    workers = [threading.Thread(target=keep_creating, args=(c, f"live{w}", stop, [])) for w in range(3)]
    for w in workers:
        w.start()
    try:
        time.sleep(0.5)
        for _ in range(3):
            out = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True, text=True)
            # (The payments' own checks read no snapshot either: a payment written between two of
            # their reads can look half-done. Only the log's part is asked about here.)
            assert "INCONSISTENT log" not in out.stdout, out.stdout
            assert out.returncode in (0, 2), out.stderr
    finally:
        stop.set()
        for w in workers:
            w.join()
