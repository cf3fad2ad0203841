#!/usr/bin/env python3
"""idempay benchmark harness: idempay against this machine's own ceilings, in one run.

Ceilings, measured in the same run with the same load generator (wrk):
  * HTTP: nginx (Debian) answering a fixed JSON body as large as a Create Payment answer;
  * durable writes: RocksDB's own db_bench fillrandom --sync=1 --threads=32.
Scenarios (idempay with RocksDB, synced writes, in-process stub unless noted):
  create     Create Payment, a new paymentId per request
  replay     Create Payment replays of one paymentId
  settle     settlements with new requestIds over 1,000 approved payments
  half       Create Payment paced at half the create rate: the latency a loaded service shows
  latency    Create Payment with the stub at 100 ms latency and 1,000 connections
  acquirers  Pix Create Payment through the API Pix adapter against the fake PSP
             (idempay-sandbox pix-psp), card and boleto Create Payment through the Adyen adapter
             against the fake Adyen (idempay-sandbox adyen-fake, its notifications taken too), next
             to the in-process stub
  webhooks   signed acquirer webhooks approving pending payments, each verified and applied
  callbacks  the callbacks those webhooks cause, delivered to a local receiver (nginx)
  tracing    Create Payment with tracing off, on at 100% and at 1% (spans sent over OTLP to nginx
             as the collector), and on at 100% with the collector refusing connections and with
             one that never answers: CPU per create next to nginx's and to tracing off's
  memory     RSS and bytes on disk after a million payments (out-of-process stub, so that the
             stub's own ledger is not counted)
  postgresql Create Payment with the PostgreSQL store (one instance; a throwaway cluster from
             scripts/pg-local.sh), next to pgbench's rate for a put-if-absent per synchronous commit
  growth     create throughput on a store preloaded with 10 thousand .. 10 million payments
  sustained  minutes of load on one process with no idle waits, reported per 10 s window:
             Create Payment alone, then a gateway-like mix (each payment created with the
             2.3 KB storefront body, retried 1-3 times, settled, one in five refunded), each
             over distinct payments and each next to nginx for the same windows
Each create/replay/settle round alternates with nginx, and each idempay run starts once the
server is idle again (the previous run's flushes, compactions and passivations done, or 20 s
passed); with --baseline OLD_BINARY, OLD_BINARY's creates and replays are alternated with them
and the targets table shows both builds; the table shows medians with min-max, p50/p99 latency, the ratios to the ceilings and the
server's CPU per request next to nginx's (the sustained windows also give each window's p99
over the mean latency Little's law gives for its rate). Writes results.csv, results.json and
results.png (gnuplot). A benchmark, not a test: nothing here asserts on a number.
"""
import argparse
import base64
import collections
import hashlib
import hmac
import json
import os
import pathlib
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
LUA = ROOT / "bench" / "lua"
KEY, TOKEN = "bench", "bench-token"
OPERATOR_TOKEN = "bench-operator-token-0001"  # reads receipts
ACQUIRER_SECRET = "whsec_" + base64.b64encode(b"bench-acquirer-secret-0123456789").decode()
CALLBACK_SECRET = "whsec_" + base64.b64encode(b"bench-callback-secret-0123456789").decode()
PENDING_CARD = "4222222222222224"
# The callback hosts the scenarios use (an environment variable, which binaries from before
# the allowlist ignore, so that old and new binaries run alike in alternation).
os.environ.setdefault("IDEMPAY_CALLBACK_ALLOWED_HOSTS", "gateway.example,127.0.0.1")
# All load comes from one address (loopback); the latency scenario opens 1,000 connections.
os.environ.setdefault("IDEMPAY_MAX_CONNECTIONS_PER_SOURCE", "100000")


def sandbox_of(binary):
    """idempay-sandbox (the stub as a server, the fakes), built next to the connector's binary."""
    return pathlib.Path(binary).parent / "idempay-sandbox"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def parse_latency(text):
    for unit, scale in (("us", 0.001), ("ms", 1.0), ("s", 1000.0), ("m", 60000.0)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    return float(text)


def wrk(url, duration, connections, script, args=(), threads=1, timeout="10s"):
    cmd = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{duration}s", "--latency",
           "--timeout", timeout, "-s", str(LUA / script), url]
    if args:
        cmd += ["--", *args]
    env = dict(os.environ, IDEMPAY_APP_KEY=KEY, IDEMPAY_APP_TOKEN=TOKEN, LUA_PATH=f"{LUA}/?.lua;;")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = {p: parse_latency(re.search(rf"^\s+{p}%\s+(\S+)", out, re.M).group(1)) for p in ("50", "99")}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    window = re.search(r"^window ([\d.]+) (\d+) (\d+)$", out, re.M)
    statuses = re.findall(r"^non-2xx statuses: (.*)$", out, re.M)
    first_body = re.search(r"^first non-2xx body: (.*)$", out, re.M)
    mean = re.search(r"^\s+Latency\s+(\S+)", out, re.M)
    return {"rps": rps, "p50_ms": lat["50"], "p99_ms": lat["99"], "mean_ms": parse_latency(mean.group(1)) if mean else None,
            "non2xx": int(errors.group(1)) if errors else 0,
            "requests": int(re.search(r"(\d+) requests in", out).group(1)),
            "window": (float(window.group(1)), int(window.group(2)), int(window.group(3))) if window else None,
            "non2xx_statuses": " ".join(statuses), "first_non2xx": first_body.group(1) if first_body else ""}


class Nginx:
    """nginx answering every request with a fixed body; with `log`, one line per request
    with its arrival time ($msec), which makes it a callback receiver."""

    def __init__(self, work, name, body, log=False):
        self.dir = work / name
        self.dir.mkdir()
        self.port = free_port()
        self.log = self.dir / "access.log"
        access = f"log_format t '$msec'; access_log {self.log} t;" if log else "access_log off;"
        (self.dir / "nginx.conf").write_text(f"""
worker_processes 1;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  {access}
  default_type application/json;
  client_body_buffer_size 64k;
  server {{
    listen 127.0.0.1:{self.port};
    location / {{ return 200 '{body}'; }}
  }}
}}
""")
        self.proc = subprocess.Popen(["nginx", "-p", str(self.dir), "-c", str(self.dir / "nginx.conf"),
                                      "-g", "daemon off;"], stderr=subprocess.DEVNULL)
        wait_port(self.port)

    def arrivals(self):
        return [float(line) for line in self.log.read_text().split()] if self.log.exists() else []

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def cpu_seconds_in_stat(text):
    """CPU time (user + system) from the text of a /proc/.../stat file."""
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds_of(pid):
    """CPU time (user + system) of one process so far; 0 once it is gone."""
    try:
        return cpu_seconds_in_stat(open(f"/proc/{pid}/stat").read())
    except OSError:
        return 0.0


# A server's threads by part, from their names: the HTTP I/O threads, the payment actors'
# workers, the store (its committer, RocksDB's own flush and compaction threads, the readers),
# the transparency log, the outbound clients (acquirer adapters, callbacks).
THREAD_PARTS = (("http", ("idempay-http",)), ("actors", ("caf.",)),
                ("store", ("idempay-commit", "rocksdb:", "store-reader")), ("log", ("idempay-log",)),
                ("client", ("idempay-client",)))


def cpu_seconds_by_part(pid):
    """CPU time of each part of a process so far (THREAD_PARTS, the rest as "other")."""
    parts = dict.fromkeys([name for name, _ in THREAD_PARTS] + ["other"], 0.0)
    for stat in pathlib.Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # a thread that just ended
        comm = text[text.index("(") + 1:text.rindex(")")]
        part = next((name for name, prefixes in THREAD_PARTS if comm.startswith(prefixes)), "other")
        parts[part] += cpu_seconds_in_stat(text)
    return parts


def tree_cpu_seconds(pid):
    """CPU time of a process and of its live children (nginx's worker)."""
    children = []
    for task in pathlib.Path(f"/proc/{pid}/task").glob("*/children"):
        children += task.read_text().split()
    return cpu_seconds_of(pid) + sum(cpu_seconds_of(c) for c in children)


def tree_context_switches(pid):
    """Context switches (voluntary, involuntary) of every thread of a process and of its live
    children so far: each wake-up of a sleeping thread is one voluntary switch."""
    voluntary = involuntary = 0
    pids = [str(pid)]
    for task in pathlib.Path(f"/proc/{pid}/task").glob("*/children"):
        pids += task.read_text().split()
    for p in pids:
        for status in pathlib.Path(f"/proc/{p}/task").glob("*/status"):
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("voluntary_ctxt_switches:"):
                        voluntary += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        involuntary += int(line.split()[1])
            except OSError:
                pass  # a thread that just ended
    return voluntary, involuntary


def stop_together(*processes):
    """Stops servers at once: with --metrics-listen, idempay takes one to two seconds to stop
    (measured: the metrics endpoint's web server winding down), and one after another those add up."""
    for p in processes:
        p.proc.terminate()
    for p in processes:
        p.proc.wait(timeout=600)


class Process:
    def __init__(self, cmd, log_path, port):
        self.port = port
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        wait_port(self.port)

    def cpu_seconds(self):
        return cpu_seconds_of(self.proc.pid)

    def wait_idle(self, limit_s=20.0, window_s=0.5, busy_share=0.05):
        """Waits until the process uses less than `busy_share` of a core (the previous
        scenario's flushes, compactions and passivations are done), at most `limit_s`."""
        started = time.time()
        before = self.cpu_seconds()
        while time.time() - started < limit_s:
            time.sleep(window_s)
            now = self.cpu_seconds()
            if now - before < busy_share * window_s:
                break
            before = now
        return time.time() - started

    def stop(self):
        self.proc.terminate()
        started = time.time()
        self.proc.wait(timeout=600)
        return time.time() - started


METHODS = ["Visa", "Mastercard", "American Express", "Diners", "Elo", "Hipercard", "Discover", "JCB", "Pix",
           "BankInvoice", "Promissories", "Venda Direta Credito", "Venda Direta Debito"]


def manifest_supported(binary):
    """Binaries from before --manifest (A/B runs against an older build) take none."""
    out = subprocess.run([str(binary), "serve", "--help"], capture_output=True, text=True).stdout
    return "--manifest" in out


class Idempay(Process):
    def __init__(self, binary, work, name, extra=(), data_dir=None, acquirers=None):
        self.dir = work / name
        self.dir.mkdir(exist_ok=True)
        self.data_dir = data_dir or self.dir / "data"
        merchant = {"name": "bench", "appKey": KEY, "appToken": TOKEN}
        if acquirers:
            merchant["acquirers"] = acquirers
        operator = {"name": "bench", "token": OPERATOR_TOKEN, "role": "read", "merchants": ["*"]}
        (self.dir / "credentials.json").write_text(json.dumps({"merchants": [merchant], "operators": [operator]}))
        # The storefront body is a marketplace order: its recipients split Visa on authorization.
        (self.dir / "manifest.json").write_text(json.dumps({"paymentMethods": [
            {"name": name, "allowsSplit": "onAuthorize" if name == "Visa" else "disabled"} for name in METHODS]}))
        port = free_port()
        super().__init__([str(binary), "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(self.data_dir),
                          "--credentials", str(self.dir / "credentials.json"),
                          *(["--manifest", str(self.dir / "manifest.json")] if manifest_supported(binary) else []),
                          *extra],
                         self.dir / "server.log", port)
        self.url = f"http://127.0.0.1:{port}"

    def post(self, path, body):
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("POST", path, body=json.dumps(body), headers={
            "X-VTEX-API-AppKey": KEY, "X-VTEX-API-AppToken": TOKEN, "Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, data

    def get_receipt(self, conn, payment_id):
        conn.request("GET", f"/admin/v1/payments/{payment_id}/receipt",
                     headers={"Authorization": "Bearer " + OPERATOR_TOKEN})
        resp = conn.getresponse()
        resp.read()
        return resp.status

    def rss_mb(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def disk_bytes(self):
        return sum(f.stat().st_size for f in pathlib.Path(self.data_dir).rglob("*") if f.is_file())


def create_body(payment_id, value=31.9):
    return {"paymentId": payment_id, "transactionId": "tx", "reference": "ref", "orderId": "order",
            "paymentMethod": "Visa", "value": value, "currency": "BRL", "installments": 1,
            "callbackUrl": "https://gateway.example/callback?X-VTEX-signature=x",
            "card": {"holder": "Bench", "number": "4444333322221111", "csc": "123",
                     "expiration": {"month": "12", "year": "2030"}}}


def db_bench(work, threads, num):
    out = subprocess.run(["db_bench", "--benchmarks=fillrandom", "--sync=1", f"--threads={threads}",
                          f"--num={num}", f"--db={work / 'db_bench'}", "--value_size=400",
                          "--compression_type=none"], capture_output=True, text=True).stdout
    match = re.search(r"fillrandom\s*:\s*[\d.]+ micros/op (\d+) ops/sec", out)
    shutil.rmtree(work / "db_bench", ignore_errors=True)
    return float(match.group(1)) if match else 0.0


def summarize(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def with_cpu(cpu_seconds, run, pid_by_part=None):
    """`run()`'s wrk result with the server's CPU per request during it (`cpu_us`) and, given
    the server's pid, that CPU by part of the server (`cpu_parts_us`)."""
    before = cpu_seconds()
    parts_before = cpu_seconds_by_part(pid_by_part) if pid_by_part else None
    result = run()
    per_request = 1e6 / max(result["requests"], 1)
    result["cpu_us"] = round((cpu_seconds() - before) * per_request, 1)
    if parts_before is not None:
        parts_after = cpu_seconds_by_part(pid_by_part)
        result["cpu_parts_us"] = {k: round((parts_after[k] - parts_before[k]) * per_request, 1) for k in parts_after}
    return result


def throughput_rounds(binary, work, opts, runs):
    """create / replay / settle, alternating with nginx; returns the main server's numbers."""
    probe = Idempay(binary, work, "probe")
    answer = probe.post("/payments", create_body("size-probe"))[1].decode()
    probe.stop()
    nginx = Nginx(work, "nginx", answer.replace("'", ""))
    server = Idempay(binary, work, "main")
    # Retried as a gateway would (the same request again); the settlements would otherwise
    # measure refusals of payments that do not exist. Printed, so that a refusal is seen.
    for i in range(1000):
        for attempt in range(5):
            status, answer = server.post("/payments", create_body(f"settle-base-{i}", value=1_000_000))
            if status == 200 and json.loads(answer).get("status") == "approved":
                break
            print(f"settle-base-{i}, attempt {attempt + 1}: {status} {answer[:300].decode(errors='replace')}")
            time.sleep(1)
    server.post("/payments", create_body("replay-1"))
    # A previous build (--baseline), its creates and replays alternated with this one's.
    baseline = Idempay(opts.baseline, work, "baseline") if opts.baseline else None
    if baseline:
        baseline.post("/payments", create_body("replay-1"))
    c = opts.connections
    # Each idempay run starts from an idle server, as nginx's do: otherwise a scenario pays for
    # the flushes, compactions and passivations the one before it left behind (the other
    # build's too, when two are alternated).
    def measured(scenario, script, args, on=server):
        for s in (server, baseline):
            if s:
                s.wait_idle()
        runs[scenario].append(with_cpu(lambda: cpu_seconds_of(on.proc.pid),
                                       lambda: wrk(f"{on.url}/payments", opts.duration, c, script, args),
                                       pid_by_part=on.proc.pid))

    for r in range(opts.rounds):
        runs["nginx"].append(with_cpu(lambda: tree_cpu_seconds(nginx.proc.pid),
                                      lambda: wrk(f"http://127.0.0.1:{nginx.port}/payments", opts.duration, c,
                                                  "create_distinct.lua", [f"n{r}"])))
        measured("create", "create_distinct.lua", [f"r{r}"])
        if baseline:
            measured("baseline_create", "create_distinct.lua", [f"b{r}"], on=baseline)
        measured("replay", "create_replay.lua", ["replay-1"])
        if baseline:
            measured("baseline_replay", "create_replay.lua", ["replay-1"], on=baseline)
        measured("settle", "settle.lua", [f"s{r}"])
    # Paced at half the measured create rate: wrk's delay() pauses each connection between
    # requests, so the rate is connections / (pause + latency); the achieved rate is reported.
    create = runs["create"]
    target = statistics.median(r["rps"] for r in create) / 2
    pause_ms = max(0, int(1000 * c / target - statistics.median(r["p50_ms"] for r in create) / 2))
    for r in range(opts.rounds):
        measured("half", "create_distinct.lua", [f"run=h{r}", f"delay={pause_ms}"])
    nginx.stop()
    if baseline:
        baseline.stop()
    receipts = receipt_cost(server, [f"settle-base-{i}" for i in range(1000)], 200 if opts.quick else 3000)
    payments = 1001 + sum(run["requests"] for run in runs["create"] + runs["half"])
    return {"payments_stored": payments, "rss_mb": round(server.rss_mb(), 1), "receipts": receipts,
            "shutdown_s": round(server.stop(), 2),
            "disk_bytes_per_payment": round(server.disk_bytes() / payments, 1)}


def receipt_cost(server, payment_ids, count):
    """The server's CPU per receipt (authentication, the payment's reads, the Ed25519 signature,
    the answer), asked one after another on one connection from an idle server; next to it,
    Ed25519's own cost on this machine (openssl speed), the signature's share of either."""
    import http.client
    server.wait_idle()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    before = cpu_seconds_of(server.proc.pid)
    started = time.time()
    statuses = collections.Counter(server.get_receipt(conn, payment_ids[i % len(payment_ids)]) for i in range(count))
    elapsed = time.time() - started
    cpu = cpu_seconds_of(server.proc.pid) - before
    conn.close()
    if statuses[200] != count:
        print(f"receipts: answers {dict(statuses)}")  # an older binary has no receipts
    return {"receipts": count, "ok": statuses[200], "per_s": round(count / elapsed, 1),
            "cpu_us": round(1e6 * cpu / count, 1), **ed25519_speed()}


def ed25519_speed():
    """Ed25519 signatures and verifications per second on one core (OpenSSL, as idempay signs)."""
    out = subprocess.run(["openssl", "speed", "-seconds", "2", "ed25519"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if "(Ed25519)" in line and len(fields) >= 4:
            sign_s, verify_s = float(fields[-2]), float(fields[-1])
            return {"sign_us": round(1e6 / sign_s, 1), "verify_us": round(1e6 / verify_s, 1)}
    return {"sign_us": float("nan"), "verify_us": float("nan")}


def observability_rounds(binary, work, opts, extra):
    """The cost of metrics, the access log and the event log together: Create Payment and
    replay rates on a server with all three on and one with none, in alternation, each
    scenario from an idle server."""
    plain = Idempay(binary, work, "observe-off")
    observed = Idempay(binary, work, "observe-on", ["--metrics-listen", "127.0.0.1:0",
                                                     "--access-log", str(work / "access.log"),
                                                     "--event-log", str(work / "events.log")])
    rates = {f"{scenario}_{mode}": [] for scenario in ("create", "replay") for mode in ("off", "on")}
    for server in (plain, observed):
        server.post("/payments", create_body("replay-obs"))
    for r in range(opts.rounds):
        order = [("off", plain), ("on", observed)] if r % 2 == 0 else [("on", observed), ("off", plain)]
        for mode, server in order:
            server.wait_idle()
            rates[f"create_{mode}"].append(round(wrk(f"{server.url}/payments", opts.duration, opts.connections,
                                                     "create_distinct.lua", [f"o{mode}{r}"])["rps"]))
            server.wait_idle()
            rates[f"replay_{mode}"].append(round(wrk(f"{server.url}/payments", opts.duration, opts.connections,
                                                     "create_replay.lua", ["replay-obs"])["rps"]))
    stop_together(plain, observed)
    extra["observability"] = rates
    print("  " + ", ".join(f"{k} {v}" for k, v in rates.items()), flush=True)


class BlackHole:
    """A collector that takes connections and never answers: the kernel completes each
    handshake into the listen backlog, nobody reads. The exporter waits out its timeout."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self):
        self.sock.close()


TRACING_MODES = ("off", "on 100%", "on 1%", "collector down", "collector silent")
BASELINE_MODE = "--baseline build"


def tracing_rounds(binary, work, opts, extra):
    """Create Payment with tracing off, on at 100% and at 1% (spans to nginx as the collector,
    answering 200 to every export), and at 100% with the collector down (connection refused)
    and silent (never answers): each server's CPU per create and rate, in alternation, each
    run from an idle server, with nginx's own CPU per request in the same rounds. With
    --baseline, the older build (before tracing, say) takes part too, as one more mode."""
    collector = Nginx(work, "collector", "")
    refused = f"http://127.0.0.1:{free_port()}"
    silent = BlackHole()
    nginx = Nginx(work, "nginx-tracing", "{}")
    metrics = ["--metrics-listen", "127.0.0.1:0"]
    servers = {"off": Idempay(binary, work, "trace-off", metrics),
               "on 100%": Idempay(binary, work, "trace-100", metrics + ["--otlp-endpoint", collector_url(collector)]),
               "on 1%": Idempay(binary, work, "trace-1", metrics + ["--otlp-endpoint", collector_url(collector),
                                                                    "--trace-sample-ratio", "0.01"]),
               "collector down": Idempay(binary, work, "trace-down", metrics + ["--otlp-endpoint", refused]),
               "collector silent": Idempay(binary, work, "trace-silent", metrics + ["--otlp-endpoint", silent.url])}
    modes = list(TRACING_MODES)
    if opts.baseline:
        servers[BASELINE_MODE] = Idempay(opts.baseline, work, "trace-baseline", metrics)
        modes.append(BASELINE_MODE)
    runs = {mode: [] for mode in modes}
    runs["nginx"] = []
    for r in range(opts.rounds):
        runs["nginx"].append(with_cpu(lambda: tree_cpu_seconds(nginx.proc.pid),
                                      lambda: wrk(f"http://127.0.0.1:{nginx.port}/payments", opts.duration,
                                                  opts.connections, "create_distinct.lua", [f"tn{r}"])))
        order = modes if r % 2 == 0 else list(reversed(modes))
        for mode in order:
            server = servers[mode]
            server.wait_idle()
            runs[mode].append(with_cpu(lambda: cpu_seconds_of(server.proc.pid),
                                       lambda: wrk(f"{server.url}/payments", opts.duration, opts.connections,
                                                   "create_distinct.lua", [f"t{r}{modes.index(mode)}"])))
            runs[mode][-1]["rss_mb"] = round(server.rss_mb(), 1)  # after each round: bounded, or growing?
    time.sleep(2)  # the last batch (a second's wait at most) reaches the collector
    spans = {mode: span_counts(s) for mode, s in servers.items()}
    stop_together(*servers.values(), nginx, collector)
    silent.close()
    extra["tracing"] = {mode: {"rps": [round(x["rps"]) for x in results], "cpu_us": [x["cpu_us"] for x in results],
                               "non2xx": sum(x["non2xx"] for x in results), "rss_mb": [x.get("rss_mb") for x in results],
                               "creates": sum(x["requests"] for x in results), **spans.get(mode, {})}
                        for mode, results in runs.items()}
    tracing_report(extra["tracing"])


def span_counts(server):
    """Spans the server exported and dropped so far (its metrics): what the collector was sent."""
    log = (server.dir / "server.log").read_text(errors="replace")
    port = re.search(r"metrics on port (\d+)", log).group(1)
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    def read(name):  # 0 for a build without traces (--baseline)
        found = re.search(rf"^{name} (\S+)$", text, re.M)
        return float(found.group(1)) if found else 0.0
    return {"spans_exported": read("idempay_trace_spans_exported"), "spans_dropped": read("idempay_trace_spans_dropped")}


def collector_url(nginx):
    return f"http://127.0.0.1:{nginx.port}"


def tracing_report(t):
    nginx_cpu = statistics.median(t["nginx"]["cpu_us"])
    off = statistics.median(t["off"]["cpu_us"])
    print("tracing, Create Payment (median of the rounds): CPU per create, ÷ nginx's, ÷ tracing off's; rate")
    for mode in [m for m in (*TRACING_MODES, BASELINE_MODE) if m in t]:
        cpu = statistics.median(t[mode]["cpu_us"])
        print(f"  {mode:18} {cpu:>7} us  {cpu / nginx_cpu:>5.1f}x nginx  {cpu / off:>5.2f}x off  "
              f"{statistics.median(t[mode]['rps']):>7} req/s (rounds {t[mode]['rps']})  RSS by round {t[mode]['rss_mb']} MB  "
              f"spans exported {t[mode]['spans_exported']:.0f}, dropped {t[mode]['spans_dropped']:.0f} "
              f"for {t[mode]['creates']} creates"
              + (f"  ({t[mode]['non2xx']} not 2xx)" if t[mode]["non2xx"] else ""))


def pgbench(uri, work, duration, clients):
    """pgbench's rate for the statement a payment's intent is made of: a put-if-absent of a new
    400-byte row, committed synchronously, one per transaction."""
    subprocess.run(["psql", "-X", "-q", uri, "-c",
                    "CREATE TABLE IF NOT EXISTS bench_kv (key bigint PRIMARY KEY, value bytea NOT NULL, etag bigint)"],
                   check=True, capture_output=True)
    script = work / "put_if_absent.sql"
    script.write_text("\\set k random(1, 9000000000000)\n"
                      "INSERT INTO bench_kv VALUES (:k, convert_to(repeat('x', 400), 'UTF8'), 1) ON CONFLICT DO NOTHING;\n")
    out = subprocess.run(["pgbench", "-n", "-c", str(clients), "-j", "2", "-T", str(duration), "-f", str(script), uri],
                         capture_output=True, text=True).stdout
    match = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
    return float(match.group(1)) if match else 0.0


def wrk_across(urls, duration, connections, script, args):
    """One wrk per URL at once, the connections split between them: their rates summed, the
    worst p99 (as a balancer spreading the load would see it)."""
    share = max(1, connections // len(urls))
    results = [None] * len(urls)

    def run(i):
        results[i] = wrk(urls[i], duration, share, script, [f"{args[0]}i{i}", *args[1:]])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(urls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"rps": sum(r["rps"] for r in results), "p50_ms": max(r["p50_ms"] for r in results),
            "p99_ms": max(r["p99_ms"] for r in results), "non2xx": sum(r["non2xx"] for r in results),
            "requests": sum(r["requests"] for r in results), "window": None}


def postgres_rounds(binary, work, opts, runs, extra):
    """Create Payment with the PostgreSQL store (a throwaway cluster from scripts/pg-local.sh on
    this machine) with 1, 2 and 3 instances sharing it, each with its in-process stub, wrk's
    connections split between them; replays on one instance; pgbench in the same run."""
    pg_dir = work / "pg"
    pg_dir.mkdir()
    os.chmod(work, 0o755)
    os.chmod(pg_dir, 0o755)
    pg_local = str(ROOT / "scripts" / "pg-local.sh")
    uri = subprocess.run([pg_local, "start", str(pg_dir)], capture_output=True, text=True, check=True).stdout.strip()
    try:
        baseline = None
        if opts.baseline:  # the older build on a database of its own in the same cluster
            subprocess.run(["psql", "-X", "-q", uri, "-c", "CREATE DATABASE baseline"], check=True)
            baseline = Idempay(opts.baseline, work, "postgresql-baseline",
                               ["--store", urllib.parse.urlunsplit(urllib.parse.urlsplit(uri)._replace(path="/baseline"))])
        for count in (1, 2, 3):
            servers = [Idempay(binary, work, f"postgresql{count}-{i}", ["--store", uri]) for i in range(count)]
            if count == 1:
                servers[0].post("/payments", create_body("pg-replay-1"))
            for r in range(opts.rounds):
                for server in servers + ([baseline] if baseline and count == 1 else []):
                    server.wait_idle()
                scenario = "pg_create" if count == 1 else f"pg_create_{count}"
                runs[scenario].append(wrk_across([f"{s.url}/payments" for s in servers], opts.duration,
                                                 opts.connections, "create_distinct.lua", [f"pg{count}r{r}"]))
                if count == 1 and baseline:
                    baseline.wait_idle()
                    runs["baseline_pg_create"].append(wrk(f"{baseline.url}/payments", opts.duration, opts.connections,
                                                          "create_distinct.lua", [f"pgbr{r}"]))
                    extra.setdefault("baseline_pg_create_rps", []).append(runs["baseline_pg_create"][-1]["rps"])
                if count == 1:
                    runs["pg_replay"].append(wrk(f"{servers[0].url}/payments", opts.duration, opts.connections,
                                                 "create_replay.lua", ["pg-replay-1"]))
                    # pgbench alternated with the creates: each round's ratio is to its own ceiling.
                    extra.setdefault("pg_create_rps", []).append(runs["pg_create"][-1]["rps"])
                    extra.setdefault("pgbench_rounds", []).append(pgbench(uri, work, opts.duration, opts.connections))
            for server in servers:
                server.stop()
            if baseline and count == 1:
                baseline.stop()
        extra["pgbench_tps"] = statistics.median(extra["pgbench_rounds"])
    finally:
        subprocess.run([pg_local, "stop", str(pg_dir)], capture_output=True)


def latency_rounds(binary, work, opts, runs):
    slow = Idempay(binary, work, "latency", ["--stub-latency-ms", "100"])
    for r in range(opts.rounds):
        runs["latency"].append(wrk(f"{slow.url}/payments", opts.duration, 1000, "create_distinct.lua",
                                   [f"l{r}"], threads=2))
    slow.stop()


class RssSampler:
    """A process's RSS and thread count every `every_s` seconds, on a thread of its own."""

    def __init__(self, server, every_s=0.5):
        self.server, self.every_s, self.samples, self.threads = server, every_s, [], []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping.wait(self.every_s):
            self.samples.append(self.server.rss_mb())
            self.threads.append(thread_count(self.server.proc.pid))

    def stop(self):
        self.stopping.set()
        self.thread.join()
        return self.samples


def thread_count(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def slow_acquirer_rounds(binary, work, opts, extra):
    """Thousands of payments in flight on a slow acquirer: the out-of-process stub answers each
    call after `latency_ms`, and `connections` gateway connections send Create Payment with no
    pause, so that about that many payments wait on it at once. Next to it, in the same run,
    the create rate the machine allows through the same stub answering at once (the CPU-bound
    rate), and the same connections paced to half of that rate (where the latency seen is the
    acquirer's plus the connector's, not a queue's). Memory per payment in flight: RSS at the
    plateau (median of the load's second half) minus idle, over the payments in flight
    (Little's law: rate x mean latency)."""
    latency_ms = 500
    connections = 500 if opts.quick else 5000
    duration = 2 if opts.quick else opts.slow_duration
    fast_stub_port, slow_stub_port = free_port(), free_port()
    stub = [str(sandbox_of(binary)), "acquirer-stub", "--listen"]
    fast_stub = Process(stub + [f"127.0.0.1:{fast_stub_port}"], work / "fast-stub.log", fast_stub_port)
    slow_stub = Process(stub + [f"127.0.0.1:{slow_stub_port}", "--latency-ms", str(latency_ms)], work / "slow-stub.log",
                        slow_stub_port)
    fast = Idempay(binary, work, "acquirer-at-once", ["--acquirer", f"http://127.0.0.1:{fast_stub_port}"])
    bound = with_cpu(lambda: cpu_seconds_of(fast.proc.pid),
                     lambda: wrk(f"{fast.url}/payments", opts.duration, opts.connections, "create_distinct.lua",
                                 ["run=sa"], threads=2))
    fast.stop()
    out = {"latency_ms": latency_ms, "connections": connections, "cpu_bound_rps": round(bound["rps"]),
           "cpu_bound_cpu_us": bound["cpu_us"]}
    for name, rate in (("saturated", None), ("paced", bound["rps"] / 2)):
        server = Idempay(binary, work, f"slow-acquirer-{name}", ["--acquirer", f"http://127.0.0.1:{slow_stub_port}"])
        server.wait_idle()
        idle = server.rss_mb()
        # Each connection's mean pause so that all of them together offer `rate`.
        pause_ms = 0 if rate is None else max(0, round(1000 * connections / rate - latency_ms))
        sampler = RssSampler(server)
        r = with_cpu(lambda: cpu_seconds_of(server.proc.pid),
                     lambda: wrk(f"{server.url}/payments", duration, connections, "create_distinct.lua",
                                 [f"run=sl{name[0]}", f"delay={pause_ms}"], threads=2, timeout="10s"))
        samples = sampler.stop()
        plateau = statistics.median(samples[len(samples) // 2:]) if samples else server.rss_mb()
        in_flight = r["rps"] * (r["mean_ms"] or 0) / 1000  # Little's law
        out[name] = {"rps": round(r["rps"]), "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"], "non2xx": r["non2xx"],
                     "cpu_us": r["cpu_us"], "pause_ms": pause_ms, "in_flight": round(in_flight),
                     "rss_idle_mb": round(idle, 1), "rss_plateau_mb": round(plateau, 1),
                     "kb_per_in_flight": round((plateau - idle) * 1024 / in_flight, 1) if in_flight else None,
                     "threads_max": max(sampler.threads, default=0)}
        server.stop()
    holding_port = free_port()
    holding_stub = Process(stub + [f"127.0.0.1:{holding_port}", "--latency-ms", "60000"], work / "holding-stub.log",
                           holding_port)
    out["held"] = held_in_flight(binary, work, f"http://127.0.0.1:{holding_port}", connections)
    holding_stub.proc.kill()
    holding_stub.proc.wait(timeout=30)
    for fake in (fast_stub, slow_stub):
        fake.stop()
    extra["slow_acquirer"] = out


def held_in_flight(binary, work, stub_url, count):
    """RSS per payment in flight with nothing else moving: `count` Create Payments sent on as
    many connections to a server whose acquirer holds every call (the stub answering after a
    minute), RSS read once all of them wait on it, against the same server idle."""
    server = Idempay(binary, work, "held-in-flight", ["--acquirer", stub_url, "--answer-deadline-ms", "0"])
    server.wait_idle()
    idle = server.rss_mb()
    sockets = []
    for i in range(count):
        body = json.dumps(create_body(f"held-{i}")).encode()
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(f"POST /payments HTTP/1.1\r\nHost: bench\r\nX-VTEX-API-AppKey: {KEY}\r\n"
                  f"X-VTEX-API-AppToken: {TOKEN}\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        sockets.append(s)
    deadline = time.time() + 30
    while time.time() < deadline and server.rss_mb() - idle < 0.5:
        time.sleep(0.2)
    time.sleep(2)  # every request read and sent on to the acquirer
    held = server.rss_mb()
    for s in sockets:
        s.close()
    server.proc.kill()  # its calls would hold a clean shutdown for a minute; nothing to keep
    server.proc.wait(timeout=30)
    return {"count": count, "rss_idle_mb": round(idle, 1), "rss_held_mb": round(held, 1),
            "kb_per_payment": round((held - idle) * 1024 / count, 1)}


def slow_acquirer_report(s):
    bound_rate = min(s["connections"] * 1000 / s["latency_ms"], s["cpu_bound_rps"])
    for name, label in (("saturated", "no pause"), ("paced", "paced to half the CPU-bound rate")):
        r = s[name]
        print(f"slow acquirer ({s['latency_ms']} ms), {s['connections']} connections, {label}: {r['rps']} creates/s "
              f"({r['rps'] / bound_rate:.0%} of min(connections / latency, CPU-bound {s['cpu_bound_rps']}/s)), "
              f"p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms, {r['in_flight']} in flight, RSS {r['rss_idle_mb']} -> "
              f"{r['rss_plateau_mb']} MB ({r['kb_per_in_flight']} KB per payment in flight), {r['threads_max']} threads, "
              f"{r['cpu_us']} us CPU per create" + (f", {r['non2xx']} not 2xx" if r["non2xx"] else ""))
    h = s.get("held")
    if h:
        print(f"slow acquirer: {h['count']} payments held in flight at once (nothing answered, nothing else moving): "
              f"RSS {h['rss_idle_mb']} -> {h['rss_held_mb']} MB, {h['kb_per_payment']} KB per payment in flight")


def acquirer_rounds(binary, work, opts, runs):
    """Create Payment through the real acquirer adapters against their fakes (plain HTTP, on
    the same cores), next to Create Payment with the in-process stub, in alternation, each
    from an idle server: Pix through the API Pix adapter (a PUT /cob at the fake PSP, one token
    for all), cards through the Adyen adapter (a POST /payments under an Idempotency-Key at the
    fake Adyen, whose signed AUTHORISATION notification the connector then takes too), and
    boletos through the same adapter (a boletobancario POST /payments, its voucher read into
    the bank invoice answer; it stays pending)."""
    secret = work / "psp-secret"
    secret.write_text("bench-psp-secret\n")
    hmac_key = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
    (work / "adyen-key").write_text("bench-adyen-key\n")
    (work / "adyen-hmac").write_text(hmac_key + "\n")
    psp_port, adyen_port = free_port(), free_port()
    psp = Process([str(sandbox_of(binary)), "pix-psp", "--plain-listen", f"127.0.0.1:{psp_port}", "--client-secret-file",
                   str(secret)], work / "pix-psp.log", psp_port)
    adyen = Process([str(sandbox_of(binary)), "adyen-fake", "--listen", f"127.0.0.1:{adyen_port}", "--api-key-file",
                     str(work / "adyen-key"), "--hmac-key-file", str(work / "adyen-hmac")], work / "adyen-fake.log",
                    adyen_port)
    base = f"http://127.0.0.1:{psp_port}"
    pix = Idempay(binary, work, "pix", acquirers=[{
        "name": "psp", "kind": "bcb-pix", "methods": ["Pix"], "baseUrl": base, "tokenUrl": base + "/oauth/token",
        "clientId": "idempay", "clientSecretFile": str(secret), "pixKey": "bench-pix-key"}])
    cards = Idempay(binary, work, "adyen", acquirers=[{
        "name": "adyen", "kind": "adyen", "methods": ["Visa", "Mastercard", "BankInvoice"],
        "baseUrl": f"http://127.0.0.1:{adyen_port}", "apiKeyFile": str(work / "adyen-key"),
        "merchantAccount": "BenchECOM", "returnUrl": "https://shop.example/return", "hmacKey": hmac_key}])
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", adyen_port, timeout=30)
    conn.request("POST", "/fake/notification-url",
                 json.dumps({"url": f"{cards.url}/webhooks/adyen/bench/adyen"}))
    conn.getresponse().read()
    stub = Idempay(binary, work, "next-to-acquirers")

    def measured(server, fakes, run_id, body=None):
        """A round from idle, with the connector's CPU per create (its fake's not counted)."""
        for process in (server, *fakes):
            process.wait_idle()
        args = [f"run={run_id}"] + ([f"body={body}"] if body else [])
        return with_cpu(lambda: cpu_seconds_of(server.proc.pid),
                        lambda: wrk(f"{server.url}/payments", opts.duration, opts.connections, "create_distinct.lua",
                                    args), server.proc.pid)

    for r in range(opts.rounds):
        runs["stub_create"].append(measured(stub, (), f"k{r}"))
        runs["pix_create"].append(measured(pix, (psp,), f"x{r}", "pix"))
        runs["adyen_create"].append(measured(cards, (adyen,), f"a{r}"))
        runs["adyen_boleto_create"].append(measured(cards, (adyen,), f"b{r}", "boleto"))
    for server in (pix, cards, stub):
        server.stop()
    for fake in (psp, adyen):
        fake.proc.terminate()
        fake.proc.wait(timeout=60)


def signed_event(payment_id, index):
    msg_id, ts = f"evt_bench_{index}", str(int(time.time()))
    body = json.dumps({"type": "authorization.updated", "data": {
        "paymentId": payment_id, "status": "approved", "tid": "T-bench", "nsu": str(index),
        "authorizationId": "777", "acquirer": "idempay-stub", "code": "0000", "message": "approved",
        "revision": 2}}, separators=(",", ":"))
    key = base64.b64decode(ACQUIRER_SECRET.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body.encode(), hashlib.sha256).digest()
    return f"{msg_id}\t{ts}\tv1,{base64.b64encode(mac).decode()}\t{body}\n"


def webhook_rounds(binary, work, opts, extra):
    """Pending payments, then one signed webhook approving each: the ingestion rate (wrk), then
    the rate at which the callbacks they cause reach a local receiver."""
    receiver = Nginx(work, "receiver", '{"ok":true}', log=True)
    server = Idempay(binary, work, "events", [
        "--acquirer-webhook-secret", ACQUIRER_SECRET, "--stub-pending-delay-ms", "86400000",
        "--callback-allow-private", "--callback-app-key", "bench-connector", "--callback-app-token", "t",
        "--callback-signing-secret", CALLBACK_SECRET])
    callback = f"http://127.0.0.1:{receiver.port}/callback"
    fill = wrk(f"{server.url}/payments", opts.duration, opts.connections, "create_distinct.lua",
               ["run=wh", f"card={PENDING_CARD}", f"callback={callback}"])
    time.sleep(1)  # the last requests wrk sent but stopped waiting for
    count = fill["requests"]  # ids run-0-1..count; one whose create was never sent gets a 404
    events = work / "events.tsv"
    with open(events, "w") as f:
        for i in range(1, count + 1):
            f.write(signed_event(f"wh-0-{i}", i))
    bound = max(5, min(120, count // 2000 + 5))  # wrk waits this long even when done
    run = wrk(f"{server.url}/webhooks/acquirer", bound, opts.connections, "webhooks.lua", [f"file={events}"])
    seconds, answered, failed = run["window"]
    extra["webhooks"] = {"events": count, "answered": answered, "non200": failed,
                         "per_s": round(answered / seconds) if seconds > 0 else 0, "p50_ms": run["p50_ms"],
                         "p99_ms": run["p99_ms"]}
    seen, quiet_since = -1, time.time()
    while len(receiver.arrivals()) < count - failed and time.time() - quiet_since < 5:
        time.sleep(0.5)
        if len(receiver.arrivals()) != seen:
            seen, quiet_since = len(receiver.arrivals()), time.time()
    arrivals = receiver.arrivals()
    span = max(arrivals) - min(arrivals) if len(arrivals) > 1 else 0
    extra["callbacks"] = {"expected": count - failed, "delivered": len(arrivals),
                          "per_s": round(len(arrivals) / span) if span > 0 else 0}
    server.stop()
    receiver.stop()


def memory_rounds(binary, work, opts, extra):
    """Fills a connector with distinct payments through HTTP until `memory_payments` are
    stored, with the out-of-process stub; RSS and disk per payment at the end, and the create
    rate of each chunk as the store grows."""
    stub_port = free_port()
    stub = Process([str(sandbox_of(binary)), "acquirer-stub", "--listen", f"127.0.0.1:{stub_port}"], work / "stub.log", stub_port)
    server = Idempay(binary, work, "memory", ["--acquirer", f"http://127.0.0.1:{stub_port}"])
    stored, chunks, r = 0, [], 0
    while stored < opts.memory_payments:
        run = wrk(f"{server.url}/payments", opts.chunk, opts.connections, "create_distinct.lua", [f"m{r}"])
        stored += run["requests"]
        chunks.append({"stored": stored, "rps": round(run["rps"]), "p99_ms": run["p99_ms"]})
        r += 1
    time.sleep(max(6, opts.duration))  # past the idle timeout: passivated actors are gone
    extra["memory"] = {"payments": stored, "rss_mb": round(server.rss_mb(), 1), "chunks": chunks}
    extra["memory"]["shutdown_s"] = round(server.stop(), 2)
    extra["memory"]["disk_bytes_per_payment"] = round(server.disk_bytes() / stored, 1)
    stub.stop()


def growth_rounds(binary, work, opts, extra):
    """Create throughput on one store preloaded (by bench/preload, through the payment engine
    without HTTP or fsync) with more and more payments."""
    preload = pathlib.Path(binary).parent / "bench" / "preload"
    data = work / "growth-data"
    data.mkdir()
    points, stored = [], 0
    for target in opts.growth:
        if target > stored:
            started = time.time()
            subprocess.run([str(preload), str(data), str(target - stored), f"g{target}"], check=True,
                           capture_output=True)
            print(f"  preloaded {target:,} payments ({time.time() - started:.0f} s)", flush=True)
            stored = target
        server = Idempay(binary, work, f"growth-{target}", data_dir=data)
        server.wait_idle(limit_s=60)  # compactions the preload left behind
        run = wrk(f"{server.url}/payments", opts.duration, opts.connections, "create_distinct.lua", [f"g{target}x"])
        server.stop()
        stored += run["requests"]
        points.append({"stored": target, "rps": round(run["rps"]), "p50_ms": run["p50_ms"], "p99_ms": run["p99_ms"],
                       "disk_mb": round(sum(f.stat().st_size for f in data.rglob("*") if f.is_file()) / 2**20)})
    extra["growth"] = points


def sustained_rounds(binary, work, opts, extra):
    """Consecutive wrk runs of one window each against one process, no idle waits between
    them: what a gateway sees during a long peak. nginx over the same number of windows."""
    windows = max(1, opts.sustained // opts.window)
    c = opts.sustained_connections

    def run(name, url, script, args_of, pid):
        """The windows under out[name]; the server's CPU per request under out[name + "_cpu_us"]
        (steadier than its rate on a shared machine; nginx's is the HTTP ceiling's)."""
        results = []
        cpu = tree_cpu_seconds(pid)
        parts = cpu_seconds_by_part(pid)
        switches = tree_context_switches(pid)
        answered = 0
        for w in range(windows):
            r = wrk(url, opts.window, c, script, args_of(w))
            answered += r["requests"]
            results.append({"rps": round(r["rps"]), "p99_ms": r["p99_ms"], "non2xx": r["non2xx"],
                            "requests": r["requests"]})
            if name != "nginx":
                results[-1]["log"] = tree_head_lag(url, answered)
        out[name] = results
        requests = max(sum(x["requests"] for x in results), 1)
        out[name + "_cpu_us"] = round((tree_cpu_seconds(pid) - cpu) * 1e6 / requests, 1)
        if name != "nginx":
            parts_after = cpu_seconds_by_part(pid)
            out[name + "_cpu_parts_us"] = {k: round((parts_after[k] - parts[k]) * 1e6 / requests, 1) for k in parts}
        after = tree_context_switches(pid)
        out[name + "_switches"] = [round((after[i] - switches[i]) / requests, 2) for i in (0, 1)]

    probe = Idempay(binary, work, "sustained-probe")
    answer = probe.post("/payments", create_body("size-probe"))[1].decode()
    probe.stop()
    nginx = Nginx(work, "sustained-nginx", answer.replace("'", ""))
    out = {"window_s": opts.window, "connections": c}
    run("nginx", f"http://127.0.0.1:{nginx.port}/payments", "create_distinct.lua",
        lambda w: [f"run=n{w}", "body=full"], nginx.proc.pid)
    nginx.stop()
    stub = None
    if opts.sustained_external_stub:  # so that the RSS is the connector's alone, without the stub's ledger
        stub_port = free_port()
        stub = Process([str(sandbox_of(binary)), "acquirer-stub", "--listen", f"127.0.0.1:{stub_port}"], work / "sustained-stub.log",
                       stub_port)
    scenarios = (("create", "create_distinct.lua", lambda w: [f"run=sc{w}", "body=full"]),
                 ("mix", "gateway_mix.lua", lambda w: [f"run=sm{w}"]))
    for name, script, args_of in scenarios[:1] if opts.sustained_creates_only else scenarios:
        extra_args = ["--acquirer", f"http://127.0.0.1:{stub.port}"] if stub else []
        server = Idempay(binary, work, f"sustained-{name}", extra_args)
        run(name, f"{server.url}/payments", script, args_of, server.proc.pid)
        out[name + "_rss_mb"] = round(server.rss_mb(), 1)
        server.stop()
        # Logged at shutdown by binaries that hold the table files' indexes and filters resident.
        held = re.search(r"table indexes and filters hold ([\d.]+) MB", (server.dir / "server.log").read_text())
        out[name + "_index_filter_mb"] = float(held.group(1)) if held else None
    out["create_payments"] = sum(w["requests"] for w in out["create"])
    out["stub"] = "out-of-process" if stub else "in-process"
    if stub:
        stub.stop()
    extra["sustained"] = out


def tree_head_lag(payments_url, answered):
    """At a window's end: how old the newest published tree head is, and how many leaves it
    holds per request answered so far (a create adds two chain heads, so about two when the log
    keeps up); None for a binary without the log."""
    import urllib.request
    try:
        with urllib.request.urlopen(payments_url.replace("/payments", "/log/v1/tree-head"), timeout=10) as resp:
            head = json.loads(resp.read())
    except (OSError, ValueError):
        return None
    return {"age_s": round(time.time() - head["timestamp"] / 1000, 2), "size": head["size"],
            "leaves_per_request": round(head["size"] / max(answered, 1), 2)}


def p99_vs_littles_mean(window, connections):
    """A window's p99 over the mean latency Little's law gives for its rate with `connections`
    closed-loop connections (connections / rate): how far the tail sits from the queue's mean,
    whatever the machine's speed."""
    return round(window["p99_ms"] / (connections / window["rps"] * 1000), 2) if window["rps"] else 0.0


def window_summary(windows, connections):
    rates = [w["rps"] for w in windows]
    median = statistics.median(rates)
    tails = [p99_vs_littles_mean(w, connections) for w in windows]
    return {"min": min(rates), "median": round(median), "max": max(rates),
            "slowest_vs_median": round(min(rates) / median, 2) if median else 0,
            "p99_max_ms": max(w["p99_ms"] for w in windows),
            "p99_median_ms": round(statistics.median(w["p99_ms"] for w in windows), 2),
            "p99_vs_littles_mean": tails, "p99_vs_littles_mean_max": max(tails),
            "non2xx": sum(w["non2xx"] for w in windows)}


def sustained_report(s):
    print(f"sustained: {len(s['create'])} windows of {s['window_s']} s, wrk -c{s['connections']}, "
          f"2.3 KB Create Payment bodies, no idle waits")
    print(f"{'':28} {'min':>7} {'median':>7} {'max':>7} {'slowest/median':>15} {'p99 median':>11} {'p99 max':>8}")
    for name, label in (("nginx", "nginx, static answer"), ("create", "Create Payment, distinct"),
                        ("mix", "gateway mix (all requests)")):
        if name not in s:
            continue
        w = window_summary(s[name], s["connections"])
        print(f"{label:28} {w['min']:>7} {w['median']:>7} {w['max']:>7} {w['slowest_vs_median']:>15.0%} "
              f"{w['p99_median_ms']:>11} {w['p99_max_ms']:>8}   ({w['non2xx']} not 2xx)")
        print(f"{'':28} windows: " + " ".join(str(x["rps"]) for x in s[name]))
        print(f"{'':28} p99 / Little's-law mean, per window (at most {w['p99_vs_littles_mean_max']}): "
              + " ".join(str(x) for x in w["p99_vs_littles_mean"]))
        logged = [x["log"] for x in s[name] if x.get("log")]
        if logged:
            print(f"{'':28} published tree head at each window's end, age s / leaves per request answered: "
                  + " ".join(f"{x['age_s']}/{x['leaves_per_request']}" for x in logged))
    if s.get("nginx_cpu_us"):
        print("server CPU per request: " + ", ".join(
            f"{label} {s[n + '_cpu_us']} us" + ("" if n == "nginx" else f" ({s[n + '_cpu_us'] / s['nginx_cpu_us']:.1f}x nginx)")
            for n, label in (("nginx", "nginx"), ("create", "creates"), ("mix", "gateway mix")) if n + "_cpu_us" in s))
        for n, label in (("create", "creates"), ("mix", "gateway mix")):
            if s.get(n + "_cpu_parts_us"):
                print(f"  {label}, CPU by part: " + ", ".join(
                    f"{part} {us} us ({us / s['nginx_cpu_us']:.1f}x)" for part, us in s[n + "_cpu_parts_us"].items()))
    if s.get("create_switches"):
        print("context switches per request (voluntary, involuntary): " + ", ".join(
            f"{label} {s[n + '_switches'][0]}, {s[n + '_switches'][1]}"
            for n, label in (("nginx", "nginx"), ("create", "creates"), ("mix", "gateway mix")) if n + "_switches" in s))
    print("RSS at the end: " + ", ".join(f"{n} {s[n + '_rss_mb']} MB" for n in ("create", "mix") if n in s)
          + (" (in-process stub, whose ledger grows with every payment)" if s["stub"] == "in-process" else
             " (out-of-process stub)"))
    if s.get("create_index_filter_mb") is not None:
        print(f"indexes and filters resident after {s['create_payments']:,} creates: {s['create_index_filter_mb']} MB "
              f"({s['create_index_filter_mb'] * 1e6 / max(s['create_payments'], 1):.0f} MB per million payments)")


LABELS = [("nginx", "nginx, static answer (HTTP ceiling)"), ("create", "Create Payment, distinct ids"),
          ("baseline_create", "Create Payment, distinct ids (--baseline build)"),
          ("replay", "Create Payment, replay of one id"),
          ("baseline_replay", "Create Payment, replay of one id (--baseline build)"),
          ("settle", "Settle, distinct requestIds"),
          ("half", "Create Payment at half the create rate"),
          ("latency", "Create Payment, stub 100 ms, 1000 conn."),
          ("stub_create", "Create Payment, in-process stub (next to the adapters)"),
          ("pix_create", "Pix Create Payment, API Pix adapter, fake PSP"),
          ("adyen_create", "card Create Payment, Adyen adapter, fake Adyen"),
          ("adyen_boleto_create", "boleto Create Payment, Adyen adapter, fake Adyen"),
          ("pg_create", "Create Payment on PostgreSQL, 1 instance"),
          ("baseline_pg_create", "Create Payment on PostgreSQL, 1 instance (--baseline build)"),
          ("pg_create_2", "Create Payment on PostgreSQL, 2 instances"),
          ("pg_create_3", "Create Payment on PostgreSQL, 3 instances"),
          ("pg_replay", "Create Payment replay on PostgreSQL, 1 instance")]


def table_rows(runs):
    # Without the throughput rounds there is no short-run ceiling: ratios to nginx are NaN.
    nginx_rps = summarize([r["rps"] for r in runs["nginx"]])["median"] if runs["nginx"] else float("nan")
    rows = []
    for name, label in LABELS:
        if not runs[name]:
            continue
        rps = summarize([r["rps"] for r in runs[name]])
        rows.append({"scenario": name, "label": label, "rps_median": round(rps["median"]), "rps_min": round(rps["min"]),
                     "rps_max": round(rps["max"]), "p50_ms": round(statistics.median(r["p50_ms"] for r in runs[name]), 2),
                     "p99_ms": round(statistics.median(r["p99_ms"] for r in runs[name]), 2),
                     "non2xx": sum(r["non2xx"] for r in runs[name]),
                     "non2xx_statuses": "; ".join(r.get("non2xx_statuses", "") for r in runs[name] if r.get("non2xx_statuses")),
                     "first_non2xx": next((r["first_non2xx"] for r in runs[name] if r.get("first_non2xx")), ""),
                     "vs_nginx": round(rps["median"] / nginx_rps, 3),
                     "cpu_us": round(statistics.median(r["cpu_us"] for r in runs[name]), 1)
                     if "cpu_us" in runs[name][0] else None,
                     "cpu_parts_us": {part: round(statistics.median(r["cpu_parts_us"][part] for r in runs[name]), 1)
                                      for part in runs[name][0]["cpu_parts_us"]}
                     if "cpu_parts_us" in runs[name][0] else None})
    return rows, (nginx_rps if runs["nginx"] else 0)


def report(out_dir, opts, rows, nginx_rps, extra):
    nginx_rps = nginx_rps or float("nan")  # throughput rounds skipped: no short-run ceiling
    machine = f"{os.cpu_count()} cores, {round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB"
    (out_dir / "results.json").write_text(json.dumps({
        "machine": machine, "rounds": opts.rounds, "duration_s": opts.duration, "connections": opts.connections,
        "rows": rows, **extra}, indent=2))
    with open(out_dir / "results.csv", "w") as f:
        f.write("scenario,rps_median,rps_min,rps_max,p50_ms,p99_ms,non2xx,vs_nginx\n")
        for r in rows:
            f.write(f"{r['scenario']},{r['rps_median']},{r['rps_min']},{r['rps_max']},{r['p50_ms']},{r['p99_ms']},"
                    f"{r['non2xx']},{r['vs_nginx']}\n")
        for name in ("webhooks", "callbacks"):
            if name in extra:
                f.write(f"{name},{extra[name]['per_s']},,,,,,{round(extra[name]['per_s'] / nginx_rps, 3)}\n")
        if "sustained" in extra:
            connections = extra["sustained"]["connections"]
            base = window_summary(extra["sustained"]["nginx"], connections)["median"]
            for name in ("create", "mix"):
                if name not in extra["sustained"]:
                    continue
                w = window_summary(extra["sustained"][name], connections)
                f.write(f"sustained-{name},{w['median']},{w['min']},{w['max']},,{w['p99_median_ms']},{w['non2xx']},"
                        f"{round(w['median'] / base, 3) if base else 0}\n")
        for point in extra.get("growth", []):
            f.write(f"growth-{point['stored']},{point['rps']},,,{point['p50_ms']},{point['p99_ms']},,"
                    f"{round(point['rps'] / nginx_rps, 3)}\n")
    print(f"machine: {machine}; wrk -c{opts.connections}, {opts.rounds} x {opts.duration} s per scenario, alternating")
    print(f"{'scenario':42} {'req/s median':>12} {'min-max':>17} {'p50 ms':>8} {'p99 ms':>8} {'vs nginx':>9}")
    for r in rows:
        print(f"{r['label']:42} {r['rps_median']:>12} {str(r['rps_min']) + '-' + str(r['rps_max']):>17} "
              f"{r['p50_ms']:>8} {r['p99_ms']:>8} {r['vs_nginx']:>9.0%}"
              + (f"   ({r['non2xx']} not 2xx)" if r["non2xx"] else ""))
        if r.get("non2xx_statuses"):
            print(f"{'':42} statuses {r['non2xx_statuses']}; first: {r['first_non2xx']}")
    nginx_cpu = next((r["cpu_us"] for r in rows if r["scenario"] == "nginx"), None)
    if nginx_cpu:
        print("server CPU per request, median of the rounds: " + ", ".join(
            f"{r['label']} {r['cpu_us']} us" + ("" if r["scenario"] == "nginx" else f" ({r['cpu_us'] / nginx_cpu:.1f}x nginx)")
            for r in rows if r["cpu_us"] is not None))
    if nginx_cpu:
        cpu_parts_report(rows, nginx_cpu)
    signature_report(rows, extra)
    if "webhooks" in extra:
        w, cb = extra["webhooks"], extra["callbacks"]
        print(f"{'Acquirer webhooks ingested':42} {w['per_s']:>12} {'':>17} {w['p50_ms']:>8} {w['p99_ms']:>8} "
              f"{w['per_s'] / nginx_rps:>9.0%}   ({w['answered']} answers, {w['non200']} not 200)")
        print(f"{'Callbacks delivered to a local receiver':42} {cb['per_s']:>12} {'':>17} {'':>8} {'':>8} "
              f"{cb['per_s'] / nginx_rps:>9.0%}   ({cb['delivered']} of {cb['expected']})")
    create = next((r for r in rows if r["scenario"] == "create"), None)
    half = next((r for r in rows if r["scenario"] == "half"), None)
    if create and extra.get("db_bench_sync_ops"):
        print(f"db_bench fillrandom --sync=1 --threads=32: {extra['db_bench_sync_ops']:.0f} ops/s; "
              f"Create Payment distinct = {create['rps_median'] / extra['db_bench_sync_ops']:.0%} of it "
              f"(each payment is 2 synced batches)")
    pg = next((r for r in rows if r["scenario"] == "pg_create"), None)
    if pg and extra.get("pgbench_tps"):
        print(f"pgbench, put-if-absent of a new row per synchronous commit, -c{opts.connections}: "
              f"{extra['pgbench_tps']:.0f} tps; Create Payment on PostgreSQL = {pg['rps_median'] / extra['pgbench_tps']:.0%} "
              f"of it (each payment is 2 transactions, grouped)")
    if half:
        print(f"p99 at {half['rps_median']} req/s ({half['rps_median'] / create['rps_median']:.0%} of the create rate): "
              f"{half['p99_ms']} ms")
    if "payments_stored" in extra:
        print(f"after {extra['payments_stored']} payments: RSS {extra['rss_mb']} MB, "
              f"{extra['disk_bytes_per_payment']} bytes on disk per payment, clean shutdown in {extra['shutdown_s']} s")
    if "memory" in extra:
        m = extra["memory"]
        print(f"memory: after {m['payments']:,} payments (out-of-process stub): RSS {m['rss_mb']} MB, "
              f"{m['disk_bytes_per_payment']} bytes on disk per payment, shutdown {m['shutdown_s']} s; create rate "
              f"by chunk: " + ", ".join(f"{c['rps']}@{c['stored']:,}" for c in m["chunks"]))
    if "tracing" in extra:
        tracing_report(extra["tracing"])
    if "slow_acquirer" in extra:
        slow_acquirer_report(extra["slow_acquirer"])
    if "sustained" in extra:
        sustained_report(extra["sustained"])
    for point in extra.get("growth", []):
        print(f"growth: {point['stored']:>11,} payments stored ({point['disk_mb']} MB): create {point['rps']} req/s, "
              f"p99 {point['p99_ms']} ms")
    targets_report(rows, extra)
    plot(out_dir, rows, extra)


def cpu_parts_report(rows, nginx_cpu):
    """Each scenario's CPU per request by part of the server, in nginx's CPU per request; and
    the floor a create cannot go below while its store writes what it writes: a replay (HTTP,
    authentication, an answer from memory) plus the store's part of a create."""
    by_name = {r["scenario"]: r for r in rows if r.get("cpu_parts_us")}
    for r in by_name.values():
        print(f"  {r['label']}, CPU by part: " + ", ".join(
            f"{part} {us} us ({us / nginx_cpu:.1f}x)" for part, us in r["cpu_parts_us"].items()))
    if "create" in by_name and "replay" in by_name:
        replay, store = by_name["replay"]["cpu_us"], by_name["create"]["cpu_parts_us"]["store"]
        print(f"  a replay ({replay / nginx_cpu:.1f}x nginx) plus the store's part of a create "
              f"({store / nginx_cpu:.1f}x): {(replay + store) / nginx_cpu:.1f}x nginx before the payment's actor "
              f"does anything; a create costs {by_name['create']['cpu_us'] / nginx_cpu:.1f}x")
    if "create" in by_name:
        # The transparency log's sequencer (its own thread); the queue entry each batch adds is
        # in the store's part (compare with a build before the log to see it).
        log, create = by_name["create"]["cpu_parts_us"].get("log", 0.0), by_name["create"]["cpu_us"]
        print(f"  the transparency log's sequencer: {log} us per create, {100 * log / create:.1f}% of a create's CPU")


def targets_report(rows, extra):
    """The cost targets, each next to what this run measured: CPU per request in nginx's CPU
    per request of the same run, rates in the same run's ceilings."""
    by = {r["scenario"]: r for r in rows}
    lines = []

    def target(name, measured, limit, at_most=True, unit="x"):
        if measured is None:
            return
        met = measured <= limit if at_most else measured >= limit
        lines.append(f"  {name:58} {measured:>8.2f}{unit:<3} {'<=' if at_most else '>='} {limit:g}{unit:<3} "
                     f"{'met' if met else 'NOT met'}")

    nginx = by.get("nginx", {}).get("cpu_us")
    if nginx:
        for prefix, build in (("", ""), ("baseline_", " (--baseline build)")):
            create, replay = by.get(prefix + "create"), by.get(prefix + "replay")
            if create:
                target(f"create{build}, CPU per request / nginx's", create["cpu_us"] / nginx, 6)
                for part, limit in (("store", 2.5), ("actors", 1.5), ("http", 2.5)):
                    if create.get("cpu_parts_us"):
                        target(f"  its {part} part", create["cpu_parts_us"][part] / nginx, limit)
            if replay:
                target(f"replay{build}, CPU per request / nginx's", replay["cpu_us"] / nginx, 1.5)
    s = extra.get("sustained")
    for name in ("create", "mix"):
        if s and name in s:
            target(f"sustained {name}: slowest 10 s window / median", window_summary(s[name], s["connections"])
                   ["slowest_vs_median"], 0.85, at_most=False)
    slow = extra.get("slow_acquirer")
    if slow:
        bound = min(slow["connections"] * 1000 / slow["latency_ms"], slow["cpu_bound_rps"])
        target("slow acquirer: rate / min(conn./latency, CPU-bound rate)", slow["saturated"]["rps"] / bound, 0.8,
               at_most=False)
        target("slow acquirer, paced: p99 (ms) <= latency + 100", slow["paced"]["p99_ms"], slow["latency_ms"] + 100,
               unit="ms")
        target("slow acquirer: RSS per payment in flight, plateau - idle (KB)", slow["saturated"]["kb_per_in_flight"],
               16, unit="KB")
        if slow.get("held"):
            target("  the same, payments held at the acquirer (KB)", slow["held"]["kb_per_payment"], 16, unit="KB")
    stub = by.get("stub_create", {}).get("cpu_us")
    for name, label in (("pix_create", "Pix"), ("adyen_create", "cards (Adyen)"), ("adyen_boleto_create", "boleto")):
        if stub and by.get(name, {}).get("cpu_us"):
            target(f"{label}: connector CPU per create / the stub path's", by[name]["cpu_us"] / stub, 2)
    pg_rounds = extra.get("pgbench_rounds")
    if pg_rounds and "pg_create" in by:
        for key, build in (("pg_create_rps", ""), ("baseline_pg_create_rps", " (--baseline build)")):
            ratios = [r / b for r, b in zip(extra.get(key, []), pg_rounds)]
            if ratios:
                lines.append(f"  PostgreSQL{build}, 1 instance / pgbench per round: " +
                             ", ".join(f"{x:.0%}" for x in ratios) +
                             f"; >= 70% in {sum(x >= 0.7 for x in ratios)} of {len(ratios)} rounds")
    if lines:
        print("targets (issue: cost per payment, second round):")
        print("\n".join(lines))


def signature_report(rows, extra, log_interval_s=1.0):
    """What signing costs next to a create: a tree head is signed once per log interval per
    instance, whatever the rate; a receipt is signed when somebody asks for one."""
    create = next((r for r in rows if r["scenario"] == "create"), None)
    receipts = extra.get("receipts")
    if create is None or not receipts:
        return
    per_create = receipts["sign_us"] / (create["rps_median"] * log_interval_s)
    print(f"  signatures: Ed25519 signs in {receipts['sign_us']} us, verifies in {receipts['verify_us']} us "
          f"(openssl speed, one core); tree heads, one signature per {log_interval_s:g} s per instance: "
          f"{per_create:.4f} us per create at {create['rps_median']:.0f} creates/s "
          f"({100 * per_create / create['cpu_us']:.3f}% of a create's CPU)")
    print(f"  a receipt, asked one at a time: {receipts['cpu_us']} us of server CPU "
          f"({receipts['cpu_us'] / create['cpu_us']:.2f} creates), of which the signature ~{receipts['sign_us']} us; "
          f"{receipts['ok']}/{receipts['receipts']} answered 200, {receipts['per_s']}/s")


def plot(out_dir, rows, extra):
    if shutil.which("gnuplot") is None:
        return
    tmp = pathlib.Path(tempfile.mkdtemp())
    bars = [(r["scenario"], r["rps_median"], r["rps_min"], r["rps_max"]) for r in rows]
    bars += [(name, extra[name]["per_s"], extra[name]["per_s"], extra[name]["per_s"])
             for name in ("webhooks", "callbacks") if name in extra]
    (tmp / "bars.dat").write_text("".join(f"\"{b[0]}\" {b[1]} {b[2]} {b[3]}\n" for b in bars))
    growth = extra.get("growth", [])
    (tmp / "growth.dat").write_text("".join(f"{p['stored']} {p['rps']}\n" for p in growth))
    script = f"""set terminal pngcairo size 1200,480 noenhanced
set output '{out_dir / "results.png"}'
set multiplot layout 1,2
set title 'idempay vs the HTTP ceiling (median, min-max), same run'
set ylabel 'requests per second'
set style fill solid 0.6
set boxwidth 0.6
set yrange [0:*]
set grid ytics
set xtics rotate by -30
plot '{tmp / "bars.dat"}' using 0:2:xtic(1) with boxes notitle, '' using 0:2:3:4 with yerrorbars lc rgb 'black' notitle
set title 'Create Payment as the store grows'
set xlabel 'payments stored'
set logscale x
set xtics norotate
"""
    script += (f"plot '{tmp / 'growth.dat'}' using 1:2 with linespoints pt 7 notitle\n" if growth else
               "unset logscale x\nplot 0 notitle\n")
    subprocess.run(["gnuplot"], input=script, text=True, check=False, capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(ROOT / "build-bench" / "idempay"))
    ap.add_argument("--baseline", help="a previous build of idempay: its creates and replays are alternated with "
                                       "--binary's in the throughput rounds, and the targets shown for both")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=8, help="seconds per wrk run")
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--memory-payments", type=int, default=1_000_000, help="payments stored before reading RSS")
    ap.add_argument("--chunk", type=int, default=20, help="seconds per wrk run while filling for the memory scenario")
    ap.add_argument("--growth", default="10000,100000,1000000",
                    help="store sizes for the growth scenario (add 10000000 for the full curve: ~20 min more)")
    ap.add_argument("--sustained", type=int, default=120, help="seconds of each sustained scenario")
    ap.add_argument("--window", type=int, default=10, help="seconds per window of the sustained scenarios")
    ap.add_argument("--sustained-connections", type=int, default=64)
    ap.add_argument("--sustained-external-stub", action="store_true",
                    help="sustained scenarios against the out-of-process stub (the RSS is then the connector's own)")
    ap.add_argument("--sustained-creates-only", action="store_true", help="leave out the sustained gateway mix")
    ap.add_argument("--slow-duration", type=int, default=20, help="seconds of each slow-acquirer run")
    ap.add_argument("--skip", default="",
                    help="comma-separated groups to leave out: "
                         "throughput,observability,tracing,latency,slow,acquirers,webhooks,memory,growth,sustained,"
                         "postgresql")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 round of 1 s, small sizes, no latency scenario")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--keep-work", action="store_true", help="keep the servers' data and logs for a look afterwards")
    opts = ap.parse_args()
    if opts.quick:
        opts.rounds, opts.duration, opts.memory_payments, opts.chunk = 1, 1, 2_000, 1
        opts.sustained, opts.window = 4, 2
        opts.growth = "1000,3000"
    opts.growth = [int(n) for n in opts.growth.split(",") if n]
    out_dir = pathlib.Path(opts.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))

    work = pathlib.Path(tempfile.mkdtemp(prefix="idempay-bench-"))
    runs = {name: [] for name, _ in LABELS}
    skip = set(opts.skip.split(",")) | ({"latency"} if opts.quick else set())
    extra = {}
    try:
        groups = [
            ("throughput", "throughput rounds (create, replay, settle, paced) against nginx",
             lambda: extra.update(throughput_rounds(opts.binary, work, opts, runs))),
            ("observability", "metrics and logs on vs off, in alternation",
             lambda: observability_rounds(opts.binary, work, opts, extra)),
            ("tracing", "tracing off, on at 100% and 1%, collector down and silent, in alternation",
             lambda: tracing_rounds(opts.binary, work, opts, extra)),
            ("latency", "100 ms stub, 1,000 connections", lambda: latency_rounds(opts.binary, work, opts, runs)),
            ("slow", "thousands of payments in flight on a 500 ms acquirer",
             lambda: slow_acquirer_rounds(opts.binary, work, opts, extra)),
            ("acquirers", "Pix, cards and boleto through their adapters and fakes, next to the stub",
             lambda: acquirer_rounds(opts.binary, work, opts, runs)),
            ("webhooks", "webhooks and callbacks", lambda: webhook_rounds(opts.binary, work, opts, extra)),
            ("memory", f"memory after {opts.memory_payments:,} payments",
             lambda: memory_rounds(opts.binary, work, opts, extra)),
            ("growth", "growth", lambda: growth_rounds(opts.binary, work, opts, extra)),
            ("postgresql", "Create Payment on PostgreSQL, next to pgbench",
             lambda: postgres_rounds(opts.binary, work, opts, runs, extra)),
            ("sustained", f"sustained: {opts.sustained} s of creates, then of a gateway mix, no idle waits",
             lambda: sustained_rounds(opts.binary, work, opts, extra)),
        ]
        for name, title, run in groups:
            if name in skip:
                continue
            print(title, flush=True)
            started = time.monotonic()
            run()
            print(f"  ({name}: {time.monotonic() - started:.0f} s)", flush=True)
        extra["db_bench_sync_ops"] = db_bench(work, 32, 2_000 if opts.quick else 20_000)
    finally:
        if opts.keep_work:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    rows, nginx_rps = table_rows(runs)
    report(out_dir, opts, rows, nginx_rps, extra)
    # A round in which the server answered nothing is a stalled server, not a slow one: a
    # median over the rounds would hide it in the table.
    silent = sorted({name for name, results in runs.items() for r in results if r["requests"] == 0})
    if silent:
        print(f"FAILED: no answer at all in a round of: {', '.join(silent)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
