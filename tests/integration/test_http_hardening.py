"""The HTTP boundary attacked with raw sockets: credentials judged before the body is read,
strict framing, throttling of wrong credentials per source, slow senders cut, connection caps,
and descriptor exhaustion that neither spins a core nor stops the server for good."""
import json
import os
import socket
import time

from conftest import APP_KEY, APP_TOKEN, concurrently, create_body, ledger, request

MANIFEST = b"GET /manifest HTTP/1.1\r\nHost: x\r\n\r\n"


def raw(port, data, source="127.0.0.1", timeout=5):
    """Sends `data` from `source`, returns every byte until the server closes or goes quiet."""
    s = socket.socket()
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.settimeout(timeout)
    s.sendall(data)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        pass
    s.close()
    return out


def post_headers(token, length, extra=b""):
    return (b"POST /payments HTTP/1.1\r\nHost: x\r\nX-VTEX-API-AppKey: " + APP_KEY.encode() +
            b"\r\nX-VTEX-API-AppToken: " + token.encode() + b"\r\nContent-Type: application/json\r\n" +
            extra + b"Content-Length: " + str(length).encode() + b"\r\n\r\n")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_wrong_credentials_are_refused_before_the_body(connector):
    started = time.time()
    answer = raw(connector.port, post_headers("wrong-token", 200_000), timeout=10)
    assert answer.startswith(b"HTTP/1.1 401"), answer
    assert time.time() - started < 3, "the 401 waited for a body that never came"
    error = json.loads(answer.split(b"\r\n\r\n", 1)[1])  # the protocol's error shape
    assert error["status"] == "error" and error["code"] == "unauthorized", error
    assert b"wrong-token" not in connector.process.log_path.read_bytes(), "a token reached the log"


def test_framing_is_strict(connector):
    assert raw(connector.port, b"GET /manifest HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
    body = create_body("smuggle-1")
    import json
    payload = json.dumps(body).encode()
    # A coding the server skipped would run the smuggled Create Payment as a second request.
    smuggled = post_headers(APP_TOKEN, len(payload)) + payload
    for coding in (b"xchunked", b"chunked, gzip", b"identity"):
        answer = raw(connector.port, post_headers(APP_TOKEN, 0)[:-len(b"Content-Length: 0\r\n\r\n")] +
                     b"Transfer-Encoding: " + coding + b"\r\n\r\n" + smuggled)
        assert answer.count(b"HTTP/1.1 ") == 1 and answer.startswith(b"HTTP/1.1 501"), (coding, answer)
    both = raw(connector.port, post_headers(APP_TOKEN, 5, b"Transfer-Encoding: chunked\r\n") + b"0\r\n\r\n" + smuggled)
    assert both.count(b"HTTP/1.1 ") == 1 and both.startswith(b"HTTP/1.1 400"), both
    status, answer, _ = connector.post("/payments/smuggle-1/settlements", {"requestId": "r1", "value": 1})
    assert (status, json.loads(answer)["code"]) == (500, "not-found"), "the smuggled request must never have been processed"


def test_wrong_credentials_are_throttled_per_source_and_valid_ones_never(connector):
    attacker, bystander = "127.0.0.2", "127.0.0.3"
    answers = [raw(connector.port, post_headers(f"guess-{i}", 2) + b"{}", source=attacker) for i in range(30)]
    statuses = [a[9:12] for a in answers]
    assert statuses.count(b"401") <= 20 and statuses[-1] == b"429", statuses
    assert b"retry-after: " in answers[-1].lower()
    # The right token is never refused, even from the throttled address (a merchant behind the
    # same NAT as a stranger, or the gateway behind the same balancer); the guesses still are.
    good = post_headers(APP_TOKEN, 2) + b"{}"
    assert raw(connector.port, good, source=attacker).startswith(b"HTTP/1.1 400")  # through auth: body invalid
    # (The source earns one more try a second: of six quick guesses, the last is refused.)
    again = [raw(connector.port, post_headers(f"guess-x{i}", 2) + b"{}", source=attacker)[9:12] for i in range(6)]
    assert again[-1] == b"429", again
    assert raw(connector.port, good, source=bystander).startswith(b"HTTP/1.1 400")
    log = connector.process.log_path.read_bytes()
    assert b"throttled" in log and b"127.0.0.2" in log
    assert b"guess-" not in log, "a token reached the log"


def test_slow_senders_are_cut_by_the_header_timeout(connector_factory):
    c = connector_factory(extra_args=["--header-timeout-ms", "500"])
    s = socket.create_connection(("127.0.0.1", c.port))
    s.settimeout(5)
    started = time.time()
    try:
        for byte in b"GET /manifest HTTP/1.1\r\nHost: x\r\n":  # one byte at a time, never finished
            s.send(bytes([byte]))
            time.sleep(0.05)
        assert s.recv(1) == b""
    except (BrokenPipeError, ConnectionResetError):
        pass
    s.close()
    assert time.time() - started < 3, "a slow sender kept its connection past the header timeout"


def hold_connections(port, n, source="127.0.0.1"):
    held = []
    for _ in range(n):
        s = socket.socket()
        s.bind((source, 0))
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        held.append(s)
    return held


def closed_by_server(sockets):
    closed = 0
    for s in sockets:
        s.settimeout(0.2)
        try:
            closed += s.recv(1) == b""
        except socket.timeout:
            pass
        except OSError:
            closed += 1
    return closed


def test_connection_caps(connector_factory):
    c = connector_factory(extra_args=["--max-connections", "40", "--max-connections-per-source", "10"])
    held = hold_connections(c.port, 15, source="127.0.0.2")
    time.sleep(0.3)
    assert closed_by_server(held) == 5, "connections over the per-source cap are closed at once"
    assert request(c.port, "GET", "/manifest", headers={})[0] == 200, "other sources are still served"
    for s in held:
        s.close()


# UBSan checks the object of a virtual call by probing its memory through a pipe: with no
# descriptor left the probe fails, and any valid object (an error category, an actor's
# message) is reported as having an invalid vptr, its memory unprintable. In the sanitized
# build those reports may continue (see CMakeLists.txt); here they must be the only ones.
def only_descriptor_probe_reports(log):
    lines = log.splitlines()
    reports = [i for i, line in enumerate(lines) if b"runtime error" in line]
    def failed_probe(i):
        return (b"which does not point to an object of type" in lines[i] and i + 2 < len(lines)
                and b"object has invalid vptr" in lines[i + 1] and lines[i + 2] == b"<memory cannot be printed>")
    return all(failed_probe(i) for i in reports), [lines[i] for i in reports if not failed_probe(i)]


def test_descriptor_exhaustion_neither_spins_nor_stops_serving(connector_factory):
    # Caps above the descriptor limit, so that accept() itself runs out of descriptors.
    ubsan = os.environ.get("UBSAN_OPTIONS", "").replace("halt_on_error=1", "halt_on_error=0")
    c = connector_factory(extra_args=["--max-connections", "100000", "--max-connections-per-source", "100000"],
                          nofile=128, env={"UBSAN_OPTIONS": ubsan})
    held = hold_connections(c.port, 300)
    time.sleep(0.5)
    before = cpu_seconds(c.process.proc.pid)
    time.sleep(3)
    used = cpu_seconds(c.process.proc.pid) - before
    assert used < 0.6, f"the server used {used:.2f} s of CPU in 3 s while out of descriptors"
    assert b"accept failed" in c.process.log_path.read_bytes()
    for s in held:
        s.close()
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            if request(c.port, "GET", "/manifest", headers={}, timeout=2)[0] == 200:
                break
        except OSError:
            time.sleep(0.2)
    else:
        raise AssertionError("the server did not serve again once descriptors were free")
    assert c.post("/payments", create_body("after-exhaustion"))[0] == 200
    ok, reports = only_descriptor_probe_reports(c.process.log_path.read_bytes())
    assert ok, reports


def test_default_cap_keeps_descriptors_for_the_store(connector_factory):
    c = connector_factory(nofile=128)  # default cap: half the descriptor limit; never exhausted
    held = hold_connections(c.port, 200)
    time.sleep(0.5)
    assert closed_by_server(held) >= 100
    before = cpu_seconds(c.process.proc.pid)
    time.sleep(2)
    assert cpu_seconds(c.process.proc.pid) - before < 0.4
    for s in held:
        s.close()
    time.sleep(0.3)
    assert c.post("/payments", create_body("after-cap"))[0] == 200


def proxy_v2_header(client, port=40000):
    """haproxy's send-proxy-v2 header naming `client` (IPv4) as the connection's source."""
    import ipaddress
    import struct
    block = ipaddress.IPv4Address(client).packed + ipaddress.IPv4Address("127.0.0.1").packed + \
        struct.pack("!HH", port, 8080)
    return b"\r\n\r\n\x00\r\nQUIT\n" + b"\x21\x11" + struct.pack("!H", len(block)) + block


def test_behind_haproxy_a_strangers_guesses_never_keep_the_gateway_out(connector_factory, base_dir):
    """deploy/haproxy.cfg as shipped in front of a connector that trusts it: each client is
    throttled under its own address (the PROXY v2 header), so a stranger's loop of wrong tokens
    through the balancer ends in 429s for the stranger while the gateway, through the same
    balancer, keeps being served."""
    import pathlib
    import subprocess
    from conftest import free_port
    c = connector_factory(extra_args=["--trusted-proxies", "127.0.0.1/32"])
    lb_port = free_port()
    config = pathlib.Path(__file__).resolve().parents[2] / "deploy" / "haproxy.cfg"
    env = dict(os.environ, IDEMPAY_LB_BIND=f"127.0.0.1:{lb_port}",
               **{f"IDEMPAY_INSTANCE_{i}": f"127.0.0.1:{c.port}" for i in (1, 2, 3)})
    log = open(base_dir / "haproxy-throttle.log", "wb")
    lb = subprocess.Popen(["haproxy", "-f", str(config), "-db"], env=env, stdout=log, stderr=subprocess.STDOUT)
    stranger, gateway = "127.0.0.3", "127.0.0.4"
    close = b"Connection: close\r\n"
    body = json.dumps(create_body("lb-0")).encode()
    try:
        deadline = time.time() + 15  # until the health checks (PROXY headers too) see it up
        while True:
            try:
                if raw(lb_port, b"GET /health/ready HTTP/1.1\r\nHost: x\r\n" + close + b"\r\n",
                       source=gateway).startswith(b"HTTP/1.1 200"):
                    break
            except OSError:
                pass  # not listening yet
            assert time.time() < deadline, "haproxy never saw the instance up"
            time.sleep(0.2)
        guesses, served = [], []
        for i in range(60):
            guesses.append(raw(lb_port, post_headers(f"guess-{i}", 2, close) + b"{}", source=stranger)[9:12])
            if i % 10 == 0:
                pid = f"lb-{i}"
                answer = raw(lb_port, post_headers(APP_TOKEN, len(json.dumps(create_body(pid))), close) +
                             json.dumps(create_body(pid)).encode(), source=gateway)
                served.append(answer[9:12])
        assert guesses[-1] == b"429" and guesses.count(b"401") <= 20, guesses
        assert served == [b"200"] * 6, served
        # Even the stranger's address is served with valid credentials: only guessing is throttled.
        assert raw(lb_port, post_headers(APP_TOKEN, len(body), close) + body, source=stranger).startswith(b"HTTP/1.1 200")
        connector_log = c.process.log_path.read_bytes()
        assert b"source 127.0.0.3 throttled" in connector_log, "the log names the client, not the balancer"
        # The header is accepted from the trusted balancer only: from anyone else it is refused
        # and nothing behind it is served; and the balancer's address must always send it.
        spoofed = raw(c.port, proxy_v2_header("10.9.8.7") + post_headers(APP_TOKEN, len(body)) + body,
                      source="127.0.0.2")
        assert not spoofed.startswith(b"HTTP/1.1 200"), spoofed
        assert raw(c.port, post_headers(APP_TOKEN, len(body)) + body, source="127.0.0.1") == b""
        assert b"10.9.8.7" not in c.process.log_path.read_bytes()
    finally:
        lb.terminate()
        lb.wait(timeout=10)
        log.close()


def test_head_is_get_without_a_body_and_a_second_host_header_is_refused(connector):
    """HTTP/1.1 as RFC 9110 and 9112 require: HEAD answers GET's status and headers, its
    Content-Length included, with no body (the next response on the connection is read
    right); a request with two Host headers is a 400 and the connection closes."""
    get = raw(connector.port, MANIFEST.replace(b"HTTP/1.1\r\n", b"HTTP/1.1\r\nConnection: close\r\n"))
    get_head, get_body = get.split(b"\r\n\r\n", 1)
    length = int(next(line.split(b":")[1] for line in get_head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    assert length == len(get_body) > 0
    both = raw(connector.port, b"HEAD /manifest HTTP/1.1\r\nHost: x\r\n\r\n" + MANIFEST.replace(
        b"HTTP/1.1\r\n", b"HTTP/1.1\r\nConnection: close\r\n"))
    head, rest = both.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200") and f"Content-Length: {length}".encode() in head
    assert rest.startswith(b"HTTP/1.1 200"), "the HEAD answer carried no body: the GET's answer follows at once"
    assert rest.endswith(get_body)
    wrong = raw(connector.port, b"POST /manifest HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    assert wrong.startswith(b"HTTP/1.1 405") and b"allow: GET, HEAD" in wrong.lower().replace(b"get, head", b"GET, HEAD")
    twice = raw(connector.port, b"GET /manifest HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n" + MANIFEST)
    assert twice.startswith(b"HTTP/1.1 400") and twice.count(b"HTTP/1.1 ") == 1


def test_calls_in_flight_on_a_slow_acquirer_leave_descriptors_for_the_store(connector_factory, stubs):
    """More calls in flight on a slow acquirer than the process has descriptors to spare for
    them: outbound connections stay within their share (a quarter of the limit) and the calls
    beyond it wait their turn, so the store always opens its next write-ahead log and tables.
    Without the share each call opened a connection of its own and RocksDB, out of descriptors,
    stopped writing until restarted (every create after it a 503)."""
    stub = stubs("--latency-ms", "1500")
    c = connector_factory(acquirer=stub.url, extra_args=["--acquirer-timeout-ms", "20000", "--answer-deadline-ms", "0"],
                          nofile=200)
    count = 96  # under the inbound cap (half of 200), twice the outbound share (50)
    answers = concurrently(count, lambda i: c.post("/payments", create_body(f"slow-{i}")))
    statuses = [a[0] for a in answers]
    assert statuses == [200] * count, statuses
    assert [json.loads(a[1])["status"] for a in answers] == ["approved"] * count
    log = c.process.log_path.read_bytes()
    assert b"storage unhealthy" not in log and b"Too many open files" not in log
    assert c.post("/payments", create_body("slow-after"))[0] == 200
    book = ledger(stub)["authorizations"]
    assert all(book[f"slow-{i}"]["charges"] == 1 for i in range(count))


def test_pipelined_requests_are_each_answered_in_order(connector):
    """Requests sent back to back on one connection, before any answer: a create that waits
    on its payment, another, a retry of the first (answered at once from its stored answer)
    and a GET. The session gives its read buffer back while a request waits for its answer
    unless the next request's bytes are already in it: none may be lost or answered twice."""
    def create(pid):
        body = json.dumps(create_body(pid)).encode()
        return (f"POST /payments HTTP/1.1\r\nHost: x\r\nX-VTEX-API-AppKey: {APP_KEY}\r\n"
                f"X-VTEX-API-AppToken: {APP_TOKEN}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    manifest = b"GET /manifest HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(("127.0.0.1", connector.port), timeout=30) as s:
        s.sendall(create("pipe-1") + create("pipe-2") + create("pipe-1") + manifest)
        data = b""
        while data.count(b"HTTP/1.1 ") < 4 or not data.endswith(b"}"):
            chunk = s.recv(65536)
            assert chunk, f"connection closed after {data.count(b'HTTP/1.1 ')} answers"
            data += chunk
    answers = data.split(b"HTTP/1.1 ")[1:]
    assert [a[:3] for a in answers] == [b"200"] * 4
    ids = [json.loads(a.split(b"\r\n\r\n", 1)[1]).get("paymentId") for a in answers[:3]]
    assert ids == ["pipe-1", "pipe-2", "pipe-1"]
    assert answers[0].split(b"\r\n\r\n", 1)[1] == answers[2].split(b"\r\n\r\n", 1)[1]
    assert b"paymentMethods" in answers[3]
