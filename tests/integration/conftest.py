"""Fixtures that run the real idempay binary on loopback, on ports the kernel picks."""
import json
import os
import pathlib
import re
import signal
import subprocess
import threading
import time
import http.client

import pytest

BIN = os.path.abspath(os.environ.get("IDEMPAY_BIN", "build/idempay"))
# The acquirers that move no money (the stub as a server, the fake PSP, the fake Adyen): a
# binary of their own, next to the connector's.
SANDBOX = os.path.abspath(os.environ.get("IDEMPAY_SANDBOX_BIN", os.path.join(os.path.dirname(BIN), "idempay-sandbox")))
SPEC = os.environ.get("IDEMPAY_SPEC", "tests/data/ppp-openapi.json")
# Every card number any test sends; none may ever reach a data directory or a log (G6).
TEST_CARDS = ["4444333322221111", "4444333322221112", "4222222222222224", "4222222222222225",
              "4111111111111111", "4000000000003220", "4000000000003238"]
APP_KEY, APP_TOKEN = "merchant-key", "merchant-token-0123456789"
AUTH = {"X-VTEX-API-AppKey": APP_KEY, "X-VTEX-API-AppToken": APP_TOKEN,
        "Content-Type": "application/json"}
TEST_CALLBACK_HOSTS = "gateway.example,127.0.0.1,localhost"
LISTEN_RE = re.compile(rb"listening on 127\.0\.0\.1:(\d+)")


class Process:
    """A child process of `program` (the connector's binary, or SANDBOX) whose stderr goes to a
    log file; `port` is read from that log."""

    def __init__(self, args, log_path, env=None, nofile=None, cwd=None, program=BIN):
        self.args, self.log_path = args, log_path
        self.log = open(log_path, "ab")
        self.log_offset = self.log.tell()  # a restart appends: look only at what follows

        def limit_descriptors():  # `ulimit -n nofile` for the child only
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen([program] + args, stdout=self.log, stderr=self.log,
                                     env=dict(os.environ, **(env or {})),
                                     preexec_fn=limit_descriptors if nofile else None, cwd=cwd)
        self.port = self._wait_for_port()

    def _wait_for_port(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = LISTEN_RE.findall(pathlib.Path(self.log_path).read_bytes()[self.log_offset:])
            if found:
                return int(found[-1])
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.args[0]} exited: {pathlib.Path(self.log_path).read_text()}")
            time.sleep(0.02)
        raise RuntimeError("server did not start")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def terminate(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            return self.proc.wait(timeout=timeout)
        return self.proc.returncode


def request(port, method, path, body=None, headers=None, timeout=30):
    """One request on a fresh connection; returns (status, raw body bytes, headers)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    conn.request(method, path, body=data, headers=headers if headers is not None else AUTH)
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    return resp.status, raw, {k.lower(): v for k, v in resp.getheaders()}


def sent_before_a_kill(send):
    """Starts `send` (a request) on a thread of its own and returns the thread: the test kills
    the connector under it, so the connection's end is expected and not an error."""
    def run():
        try:
            send()
        except OSError:  # the connection closed by the kill (RemoteDisconnected is one)
            pass
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def concurrently(n, fn):
    """Runs fn(i) on n threads released together by a barrier; returns the results in order."""
    barrier = threading.Barrier(n)
    results = [None] * n

    def run(i):
        barrier.wait()
        results[i] = fn(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def create_body(payment_id, card="4444333322221111", value=31.9, **extra):
    body = {
        "reference": "ref-" + payment_id, "orderId": "order-" + payment_id,
        "shopperInteraction": "ecommerce", "transactionId": "tx-" + payment_id,
        "paymentId": payment_id, "paymentMethod": "Visa", "paymentMethodCustomCode": None,
        "merchantName": "mystore", "value": value, "currency": "BRL", "installments": 1,
        "deviceFingerprint": "df", "ipAddress": "127.0.0.1",
        "card": {"holder": "John Doe", "number": card, "csc": "123",
                 "expiration": {"month": "12", "year": "2030"}},
        "miniCart": {"shippingValue": 0, "taxValue": 0, "buyer": {}, "shippingAddress": {},
                     "billingAddress": {}, "items": []},
        "url": "https://admin.example/orders/" + payment_id,
        "callbackUrl": "https://gateway.example/api/pvt/payment-provider/transactions/t/payments/"
                       + payment_id + "/callback?accountName=mystore&X-VTEX-signature=abc",
        "returnUrl": "https://shop.example/checkout",
    }
    body.update(extra)
    return body


class Connector:
    """`idempay serve` on a data directory of its own; can be killed and restarted on it."""

    def __init__(self, base, name, acquirer="stub", extra_args=(), listen="127.0.0.1:0", nofile=None, env=None,
                 merchants=None, operators=None):
        self.nofile, self.env = nofile, env or {}
        self.dir = base / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.data_dir = self.dir / "data"
        self.creds = self.dir / "credentials.json"
        listed = {"merchants": merchants or [{"name": "shop", "appKey": APP_KEY, "appToken": APP_TOKEN}]}
        if operators:
            listed["operators"] = operators
        self.creds.write_text(json.dumps(listed))
        self.args = ["serve", "--listen", listen, "--data-dir", str(self.data_dir),
                     "--credentials", str(self.creds), "--acquirer", acquirer,
                     "--idle-timeout-ms", "200", *extra_args]
        self.start()

    def start(self, env=None):
        # Callbacks may go to the tests' own hosts; a test's --callback-allowed-hosts overrides.
        env = dict({"IDEMPAY_CALLBACK_ALLOWED_HOSTS": TEST_CALLBACK_HOSTS}, **self.env, **(env or {}))
        self.process = Process(self.args, self.dir / "connector.log", env, self.nofile)  # appends on restart
        self.port = self.process.port

    def post(self, path, body, headers=None):
        return request(self.port, "POST", path, body, headers)

    def get(self, path, headers=None):
        return request(self.port, "GET", path, None, headers)


@pytest.fixture(scope="session")
def base_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("idempay")
    yield base
    # After the whole suite: raw bytes of every data file and log, card numbers nowhere (G6).
    leaks = []
    for path in base.rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            leaks += [f"{path}: {card}" for card in TEST_CARDS if card.encode() in raw]
    assert not leaks, "card numbers found at rest: " + ", ".join(leaks)


@pytest.fixture
def connector_factory(base_dir, request):
    made = []

    def make(acquirer="stub", extra_args=(), listen="127.0.0.1:0", nofile=None, env=None, merchants=None,
             operators=None):
        c = Connector(base_dir, f"{request.node.name}-{len(made)}", acquirer, extra_args, listen, nofile, env,
                      merchants, operators)
        made.append(c)
        return c

    yield make
    for c in made:
        c.process.terminate()


@pytest.fixture
def connector(connector_factory):
    return connector_factory()


@pytest.fixture
def stub_server(base_dir, request):
    name = request.node.name
    process = Process(["acquirer-stub", "--listen", "127.0.0.1:0", "--pending-delay-ms", "1000"],
                      base_dir / f"{name}-stub.log", program=SANDBOX)
    process.url = f"http://127.0.0.1:{process.port}"
    yield process
    process.terminate()


@pytest.fixture
def stubs(base_dir, request):
    """Out-of-process acquirer stubs, each started with the arguments given."""
    made = []

    def make(*args):
        p = Process(["acquirer-stub", "--listen", "127.0.0.1:0", *args],
                    base_dir / f"{request.node.name}-stub{len(made)}.log", program=SANDBOX)
        p.url = f"http://127.0.0.1:{p.port}"
        made.append(p)
        return p

    yield make
    for p in made:
        p.terminate()


def logged_port(process, pattern, timeout=20):
    """The port a log line matching `pattern` (one group: the port) names, once it is written."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = re.findall(pattern, pathlib.Path(process.log_path).read_bytes())
        if found:
            return int(found[-1])
        time.sleep(0.05)
    raise AssertionError(f"no log line {pattern!r}")


def free_port():
    """A port that was free a moment ago (for two processes that must know each other)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ledger(stub):
    status, raw, _ = request(stub.port, "GET", "/ledger", headers={})
    assert status == 200
    return json.loads(raw)


CALLBACK_SECRET = "whsec_" + __import__("base64").b64encode(b"k" * 32).decode()
ACQUIRER_SECRET = "whsec_" + __import__("base64").b64encode(b"a" * 32).decode()
CALLBACK_ARGS = ["--callback-allow-private", "--callback-app-key", "connector-key",
                 "--callback-app-token", "connector-token", "--callback-signing-secret", CALLBACK_SECRET,
                 "--callback-retry-base-ms", "100", "--callback-timeout-ms", "1000",
                 "--stub-pending-delay-ms", "300"]


@pytest.fixture
def receiver():
    from receiver import Receiver
    made = []

    def make(*args, **kwargs):
        r = Receiver(*args, **kwargs)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def deliveries(connector):
    """`idempay deliveries list --json` on the (stopped) connector's data directory."""
    out = subprocess.run([BIN, "deliveries", "list", "--json", "--data-dir", str(connector.data_dir)],
                         capture_output=True, check=True)
    return json.loads(out.stdout)


@pytest.fixture
def webhook_stub_pair(connector_factory, base_dir, request):
    """An out-of-process stub that reports through signed webhooks (only on /trigger), and a
    connector listening where the stub sends them. Returns (stub, connector)."""
    port = free_port()
    stub = Process(["acquirer-stub", "--listen", "127.0.0.1:0", "--pending-delay-ms", "600000",
                    "--webhook-url", f"http://127.0.0.1:{port}/webhooks/acquirer",
                    "--webhook-secret", ACQUIRER_SECRET], base_dir / f"{request.node.name}-stub.log", program=SANDBOX)
    c = connector_factory(acquirer=f"http://127.0.0.1:{stub.port}", listen=f"127.0.0.1:{port}",
                          extra_args=CALLBACK_ARGS + ["--acquirer-webhook-secret", ACQUIRER_SECRET])
    yield stub, c
    stub.terminate()


def pay_and_settle(connector, prefix, count):
    """Creates `count` payments of 10.00 and settles every other one; returns every answer by
    (path, paymentId), each asserted 200."""
    answers = {}
    for i in range(count):
        pid = f"{prefix}-{i}"
        answers[("/payments", pid)] = connector.post("/payments", create_body(pid, value=10))
        if i % 2 == 0:
            path = f"/payments/{pid}/settlements"
            answers[(path, pid)] = connector.post(path, {"paymentId": pid, "requestId": f"s-{pid}", "value": 10})
    assert all(status == 200 for status, _, _ in answers.values())
    return answers


def assert_same_answers_one_charge(connector, answers, stub, prefix, count):
    """Every request of pay_and_settle asked again: the same status and bytes, and the
    acquirer's ledger shows one authorization and one capture each."""
    for (path, pid), (status, raw, _) in answers.items():
        body = create_body(pid, value=10) if path == "/payments" else \
            {"paymentId": pid, "requestId": f"s-{pid}", "value": 10}
        again = connector.post(path, body)
        assert again[0] == status
        assert again[1] == raw, f"{path} for {pid} changed after the crash"
    book = ledger(stub)
    assert all(book["authorizations"][f"{prefix}-{i}"]["calls"] == 1 for i in range(count))
    assert all(book["captures"][f"{prefix}-{i}/s-{prefix}-{i}"]["calls"] == 1 for i in range(0, count, 2))


def audit_trail(connector, payment_id):
    """The payment's audit trail, read from the stopped connector's store (`idempay inspect
    --json`), after `idempay audit verify` has passed on it."""
    connector.process.terminate()
    out = subprocess.run([BIN, "inspect", payment_id, "--json", "--data-dir", str(connector.data_dir)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    verified = subprocess.run([BIN, "audit", "verify", "--data-dir", str(connector.data_dir)], capture_output=True,
                              text=True, timeout=60)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return json.loads(out.stdout)["audit"]
