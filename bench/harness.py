#!/usr/bin/env python3
"""idempay benchmark harness: idempay against this machine's own ceilings, in one run.

Ceilings, measured in the same run with the same load generator (wrk):
  * HTTP: nginx (Debian) answering a fixed JSON body as large as a Create Payment answer;
  * durable writes: RocksDB's own db_bench fillrandom --sync=1 --threads=32.
Scenarios (idempay with RocksDB, synced writes, in-process stub unless noted):
  create    Create Payment, a new paymentId per request
  replay    Create Payment replays of one paymentId
  settle    settlements with new requestIds over 1,000 approved payments
  latency   Create Payment with the stub at 100 ms latency and 1,000 connections
Each scenario runs --rounds times, alternating idempay and nginx; the table shows medians with
min-max, p50/p99 latency and the ratios to the ceilings. Also: RSS and bytes on disk per
payment after the runs. Writes results.csv, results.json and results.png (gnuplot).
A benchmark, not a test: nothing here asserts on a number.
"""
import argparse
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
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
KEY, TOKEN = "bench", "bench-token"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def parse_latency(text):
    value, unit = float(text[:-2] if text.endswith(("us", "ms")) else text[:-1]), text[-2:] if text.endswith(("us", "ms")) else text[-1:]
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def wrk(url, duration, connections, threads=1, script=None, args=(), timeout="10s"):
    cmd = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{duration}s", "--latency", "--timeout", timeout]
    if script:
        cmd += ["-s", str(script)]
    cmd += [url]
    if args:
        cmd += ["--", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, IDEMPAY_APP_KEY=KEY,
                                                                          IDEMPAY_APP_TOKEN=TOKEN)).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = {p: parse_latency(re.search(rf"^\s+{p}%\s+(\S+)", out, re.M).group(1)) for p in ("50", "99")}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    return {"rps": rps, "p50_ms": lat["50"], "p99_ms": lat["99"], "non2xx": int(errors.group(1)) if errors else 0,
            "requests": requests}


class Nginx:
    def __init__(self, work, body):
        self.dir = work / "nginx"
        self.dir.mkdir()
        self.port = free_port()
        (self.dir / "nginx.conf").write_text(f"""
worker_processes 1;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
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

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Idempay:
    def __init__(self, binary, work, name, extra=()):
        self.dir = work / name
        self.dir.mkdir()
        (self.dir / "credentials.json").write_text(json.dumps({"merchants": [
            {"name": "bench", "appKey": KEY, "appToken": TOKEN}]}))
        self.port = free_port()
        self.log = open(self.dir / "server.log", "wb")
        self.proc = subprocess.Popen([str(binary), "serve", "--listen", f"127.0.0.1:{self.port}",
                                      "--data-dir", str(self.dir / "data"), "--credentials",
                                      str(self.dir / "credentials.json"), *extra], stdout=self.log, stderr=self.log)
        wait_port(self.port)

    def post(self, path, body):
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("POST", path, body=json.dumps(body), headers={
            "X-VTEX-API-AppKey": KEY, "X-VTEX-API-AppToken": TOKEN, "Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, data

    def rss_mb(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def disk_bytes(self):
        return sum(f.stat().st_size for f in (self.dir / "data").rglob("*") if f.is_file())

    def stop(self):
        self.proc.terminate()
        started = time.time()
        self.proc.wait(timeout=180)
        return time.time() - started


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(ROOT / "build-bench" / "idempay"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=8, help="seconds per wrk run")
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 round of 1 s, small db_bench, no latency scenario")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    opts = ap.parse_args()
    if opts.quick:
        opts.rounds, opts.duration = 1, 1
    out_dir = pathlib.Path(opts.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))

    work = pathlib.Path(tempfile.mkdtemp(prefix="idempay-bench-"))
    runs = {k: [] for k in ("nginx", "create", "replay", "settle", "latency")}
    extra = {}
    try:
        probe = Idempay(opts.binary, work, "probe")
        answer = probe.post("/payments", create_body("size-probe"))[1].decode()
        probe.stop()
        nginx = Nginx(work, answer.replace("'", ""))
        main_server = Idempay(opts.binary, work, "main")
        for i in range(1000):
            main_server.post("/payments", create_body(f"settle-base-{i}", value=1_000_000))
        main_server.post("/payments", create_body("replay-1"))
        for r in range(opts.rounds):
            runs["nginx"].append(wrk(f"http://127.0.0.1:{nginx.port}/payments", opts.duration, opts.connections,
                                     script=BENCH / "create_distinct.lua", args=[f"n{r}"]))
            runs["create"].append(wrk(f"http://127.0.0.1:{main_server.port}/payments", opts.duration,
                                      opts.connections, script=BENCH / "create_distinct.lua", args=[f"r{r}"]))
            runs["replay"].append(wrk(f"http://127.0.0.1:{main_server.port}/payments", opts.duration,
                                      opts.connections, script=BENCH / "create_replay.lua", args=["replay-1"]))
            runs["settle"].append(wrk(f"http://127.0.0.1:{main_server.port}/payments", opts.duration,
                                      opts.connections, script=BENCH / "settle.lua", args=[f"s{r}"]))
        payments = 1001 + sum(run["requests"] for run in runs["create"])
        extra["payments_stored"] = payments
        extra["rss_mb"] = round(main_server.rss_mb(), 1)
        extra["shutdown_s"] = round(main_server.stop(), 2)
        extra["disk_bytes_per_payment"] = round(main_server.disk_bytes() / payments, 1)
        nginx.stop()
        if not opts.quick:
            slow = Idempay(opts.binary, work, "latency", ["--stub-latency-ms", "100"])
            for r in range(opts.rounds):
                runs["latency"].append(wrk(f"http://127.0.0.1:{slow.port}/payments", opts.duration, 1000,
                                           threads=2, script=BENCH / "create_distinct.lua", args=[f"l{r}"]))
            slow.stop()
        extra["db_bench_sync_ops"] = db_bench(work, 32, 2_000 if opts.quick else 20_000)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    nginx_rps = summarize([r["rps"] for r in runs["nginx"]])["median"]
    rows = []
    for name, label in [("nginx", "nginx, static answer (HTTP ceiling)"), ("create", "Create Payment, distinct ids"),
                        ("replay", "Create Payment, replay of one id"), ("settle", "Settle, distinct requestIds"),
                        ("latency", "Create Payment, stub 100 ms, 1000 conn.")]:
        if not runs[name]:
            continue
        rps = summarize([r["rps"] for r in runs[name]])
        rows.append({"scenario": name, "label": label, "rps_median": round(rps["median"]), "rps_min": round(rps["min"]),
                     "rps_max": round(rps["max"]), "p50_ms": round(statistics.median(r["p50_ms"] for r in runs[name]), 2),
                     "p99_ms": round(statistics.median(r["p99_ms"] for r in runs[name]), 2),
                     "non2xx": sum(r["non2xx"] for r in runs[name]),
                     "vs_nginx": round(rps["median"] / nginx_rps, 3)})
    machine = f"{os.cpu_count()} cores, {round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB"
    report = {"machine": machine, "rounds": opts.rounds, "duration_s": opts.duration,
              "connections": opts.connections, "rows": rows, **extra}
    (out_dir / "results.json").write_text(json.dumps(report, indent=2))
    with open(out_dir / "results.csv", "w") as f:
        f.write("scenario,rps_median,rps_min,rps_max,p50_ms,p99_ms,non2xx,vs_nginx\n")
        for r in rows:
            f.write(f"{r['scenario']},{r['rps_median']},{r['rps_min']},{r['rps_max']},{r['p50_ms']},{r['p99_ms']},"
                    f"{r['non2xx']},{r['vs_nginx']}\n")
    print(f"machine: {machine}; wrk -c{opts.connections}, {opts.rounds} x {opts.duration} s per scenario, alternating")
    print(f"{'scenario':42} {'req/s median':>12} {'min-max':>17} {'p50 ms':>8} {'p99 ms':>8} {'vs nginx':>9}")
    for r in rows:
        print(f"{r['label']:42} {r['rps_median']:>12} {str(r['rps_min']) + '-' + str(r['rps_max']):>17} "
              f"{r['p50_ms']:>8} {r['p99_ms']:>8} {r['vs_nginx']:>9.0%}")
    create = next((r for r in rows if r["scenario"] == "create"), None)
    if create and extra.get("db_bench_sync_ops"):
        print(f"db_bench fillrandom --sync=1 --threads=32: {extra['db_bench_sync_ops']:.0f} ops/s; "
              f"Create Payment distinct = {create['rps_median'] / extra['db_bench_sync_ops']:.0%} of it "
              f"(each payment is 2 synced batches)")
    print(f"after {extra['payments_stored']} payments: RSS {extra['rss_mb']} MB, "
          f"{extra['disk_bytes_per_payment']} bytes on disk per payment, clean shutdown in {extra['shutdown_s']} s")
    plot(out_dir, rows)
    return 0


def plot(out_dir, rows):
    if shutil.which("gnuplot") is None:
        return
    data = pathlib.Path(tempfile.mkdtemp()) / "results.dat"
    data.write_text("".join(f"\"{r['scenario']}\" {r['rps_median']} {r['rps_min']} {r['rps_max']}\n" for r in rows))
    script = f"""set terminal pngcairo size 900,480 noenhanced
set output '{out_dir / "results.png"}'
set title 'idempay vs the HTTP ceiling (median, min-max), same run'
set ylabel 'requests per second'
set style fill solid 0.6
set boxwidth 0.6
set yrange [0:*]
set grid ytics
plot '{data}' using 0:2:xtic(1) with boxes notitle, '' using 0:2:3:4 with yerrorbars lc rgb 'black' notitle
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=False, capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
