#!/usr/bin/env python3
"""Benchmarks driven from outside the process (see docs/benchmarks.md for the method):

    scripts/bench/tools.py conns   --bin B [--connections 1000] [--idle 10]
        RSS and idle CPU of one `watch --connections N` process, against the simulator (opt-in
        accepted) and against a real redis-server (opt-in refused, maxclients raised).
    scripts/bench/tools.py probe   --bin B [--endpoints 10000] [--concurrency N|default ...] [--repeat 3]
        `maintwatch probe --from FILE --json` of N endpoints spread over two simulators and two
        real redis-servers on 127.0.0.x addresses; wall time per --concurrency given, in order.
    scripts/bench/tools.py replay  --bin B --capture FILE [--repeat 5] [--before OLD_B]
        `maintwatch replay --json FILE > /dev/null` (and --check, and human lines) against
        `jq -c . FILE > /dev/null`, with each process's peak RSS; --before times an older build
        in the same run.
    scripts/bench/tools.py startup --bin B [--runs 200]
        start-up plus probe of one loopback endpoint (the simulator) against
        `redis-cli -3 CLIENT MAINT_NOTIFICATIONS ON`, one process per run.
    scripts/bench/tools.py fleet   --bin B [--endpoints 1000] [--addresses 20] [--idle 10]
        RSS and idle CPU of one `watch --from FILE` process watching N endpoints: one idle
        simulator listening on 127.0.0.2 ... 127.0.0.(1+addresses), the entries cycling over them.
    scripts/bench/tools.py fleet-services --bin B [--endpoints 1000] [--idle 20] [--otlp-interval 1s]
        the same fleet (one address per endpoint, as --metrics needs) with `--metrics`, scraped
        every second, against `--metrics --otlp` (pushed to a loopback sink that answers 200),
        alternated --repeat times in one run: RSS and CPU over --idle seconds.
    scripts/bench/tools.py soak    --bin B [--rounds 200] [--speed 8]
        one `watch` against `simulate --loop --speed S` (single-proxy) for N rounds: RSS at round
        10 and at the last round (memory must stay flat).
"""

import argparse
import glob
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

IDLE_SCENARIO = """name idle
about Nothing happens: a deployment at rest, for resource measurements.
proxies 127.0.0.2
dns 127.0.0.2
start now
end 86400
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_listening(host, port, guard=10.0):
    deadline = time.monotonic() + guard
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {host}:{port}")


def cpu_ns(pid):
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def stop(proc, sig=signal.SIGINT):
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_simulator(binary, tmp, address="127.0.0.2"):
    scn = os.path.join(tmp, f"idle-{address}.scn")
    with open(scn, "w") as f:
        f.write(IDLE_SCENARIO.replace("127.0.0.2", address))
    port = free_port()
    sim = subprocess.Popen([binary, "simulate", "--scenario-file", scn, "--port", str(port),
                            "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(address, port)
    return sim, port


def start_redis(port, address="127.0.0.1"):
    # maxclients above any connection count measured here (redis-server lowers it to what its
    # own open-file limit allows, and says so in its log).
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", address, "--save", "",
         "--appendonly", "no", "--maxclients", "20000", "--protected-mode", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(address, port)
    return proc


def conns_one(binary, host, port, n, idle, outcome, tmp):
    out_path = os.path.join(tmp, "conns.jsonl")
    with open(out_path, "wb") as out:
        watch = subprocess.Popen([binary, "watch", "-h", host, "-p", str(port),
                                  "--connections", str(n), "--json"],
                                 stdout=out, stderr=subprocess.DEVNULL)
    try:
        t0 = time.monotonic()
        needle = b'"opt_in":"%s"' % outcome.encode()
        done, read = 0, 0
        while True:
            # Only what was appended since the last look is read: 10,000 handshakes make a
            # file worth not re-reading 20 times a second.
            with open(out_path, "rb") as f:
                f.seek(read)
                chunk = f.read()
            whole = chunk.rfind(b"\n") + 1
            read += whole
            done += sum(1 for line in chunk[:whole].split(b"\n")
                        if line.startswith(b'{"type":"handshake"') and needle in line)
            if done >= n:
                break
            if time.monotonic() - t0 > 300 or watch.poll() is not None:
                raise RuntimeError(f"only {done} of {n} connections opted in")
            time.sleep(0.05)
        ready = time.monotonic() - t0
        time.sleep(2.0)  # settle
        c0, w0 = cpu_ns(watch.pid), time.monotonic()
        time.sleep(idle)
        c1, w1 = cpu_ns(watch.pid), time.monotonic()
        rss = status_kib(watch.pid, "VmRSS")
        hwm = status_kib(watch.pid, "VmHWM")
        cpu_pct = 100.0 * (c1 - c0) / 1e9 / (w1 - w0)
        return ready, rss, hwm, cpu_pct
    finally:
        stop(watch)


def cmd_conns(a):
    with tempfile.TemporaryDirectory() as tmp:
        sim, port = start_simulator(a.bin, tmp)
        try:
            ready, rss, hwm, cpu = conns_one(a.bin, "127.0.0.2", port, a.connections, a.idle,
                                             "accepted", tmp)
        finally:
            stop(sim)
        print(f"conns simulator: {a.connections} connections opted in after {ready:.2f} s; "
              f"RSS {rss / 1024:.1f} MiB (peak {hwm / 1024:.1f} MiB); idle CPU {cpu:.2f} % "
              f"of one core over {a.idle:.0f} s", flush=True)
        port = free_port()
        redis = start_redis(port)
        try:
            ready, rss, hwm, cpu = conns_one(a.bin, "127.0.0.1", port, a.connections, a.idle,
                                             "refused", tmp)
        finally:
            stop(redis, signal.SIGTERM)
        print(f"conns redis-server: {a.connections} connections (opt-in refused) after "
              f"{ready:.2f} s; RSS {rss / 1024:.1f} MiB (peak {hwm / 1024:.1f} MiB); idle CPU "
              f"{cpu:.2f} % of one core over {a.idle:.0f} s", flush=True)


def cmd_probe(a):
    """10,000 endpoints (by default) over four servers on 127.0.0.x: two simulators (opt-in
    accepted, so each probe lingers --linger) and two redis-servers (refused)."""
    with tempfile.TemporaryDirectory() as tmp:
        servers, endpoints = [], []
        try:
            for address in ("127.0.0.2", "127.0.0.3"):
                sim, port = start_simulator(a.bin, tmp, address)
                servers.append(sim)
                endpoints.append(f"redis://{address}:{port}")
            for address in ("127.0.0.4", "127.0.0.5"):
                port = free_port()
                servers.append(start_redis(port, address))
                endpoints.append(f"redis://{address}:{port}")
            listing = os.path.join(tmp, "endpoints.txt")
            with open(listing, "w") as f:
                for i in range(a.endpoints):
                    f.write(endpoints[i % len(endpoints)] + "\n")
            out_path = os.path.join(tmp, "probe.jsonl")
            for conc in a.concurrency or ["default"]:
                cmd = [a.bin, "probe", "--from", listing, "--json"]
                name = "default --concurrency"
                if conc != "default":
                    cmd += ["--concurrency", str(conc)]
                    name = f"--concurrency {conc}"
                walls = []
                for _ in range(a.repeat):
                    with open(out_path, "wb") as out:
                        wall, cpu, _ = timed(cmd, stdout=out)
                    with open(out_path, "rb") as f:
                        lines = f.read().splitlines()
                    accepted = sum(1 for line in lines if b'"outcome":"accepted"' in line)
                    refused = sum(1 for line in lines if b'"outcome":"refused"' in line)
                    if len(lines) != a.endpoints or accepted + refused != a.endpoints:
                        raise RuntimeError(f"{len(lines)} reports, {accepted} accepted, "
                                           f"{refused} refused, of {a.endpoints} endpoints")
                    walls.append((wall, cpu))
                wall = statistics.median(w for w, _ in walls)
                cpu = statistics.median(c for _, c in walls)
                print(f"probe {a.endpoints} endpoints, {name}: {wall:.2f} s wall, {cpu:.2f} s "
                      f"CPU (median of {a.repeat}); {accepted} accepted, {refused} refused",
                      flush=True)
        finally:
            for proc in servers:
                stop(proc, signal.SIGTERM)


def timed(cmd, stdout=subprocess.DEVNULL):
    """Wall seconds and CPU seconds (user + system) of one run of cmd."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=stdout, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def timed_rss(cmd):
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one run of cmd. The peak
    is GNU time's (%M): the rusage of a child forked from this Python would count the
    interpreter's pages it held before exec, a 16 MiB floor under every command."""
    with tempfile.NamedTemporaryFile("r") as rss_file:
        t0 = time.perf_counter()
        proc = subprocess.Popen(["/usr/bin/time", "-o", rss_file.name, "-f", "%M"] + cmd,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        rss = int(rss_file.read().strip().splitlines()[-1]) / 1024
    return wall, ru.ru_utime + ru.ru_stime, rss, proc.returncode


def cmd_replay(a):
    lines = sum(1 for _ in open(a.capture, "rb"))
    size = os.path.getsize(a.capture)
    rows = [
        ("maintwatch replay --json", [a.bin, "replay", "--json", a.capture]),
        ("maintwatch replay --check", [a.bin, "replay", "--check", "--json", a.capture]),
        ("maintwatch replay (human)", [a.bin, "replay", a.capture]),
    ]
    if a.before:
        rows += [
            ("before: maintwatch replay --json", [a.before, "replay", "--json", a.capture]),
            ("before: maintwatch replay --check",
             [a.before, "replay", "--check", "--json", a.capture]),
        ]
    rows.append(("jq -c .", ["jq", "-c", ".", a.capture]))
    print("load average before: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    results = {}
    for name, cmd in rows:
        runs = []
        for _ in range(a.repeat):
            wall, cpu, rss, code = timed_rss(cmd)
            if code != 0:
                raise RuntimeError(f"{name} exited {code}")
            runs.append((wall, cpu, rss))
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        rss = max(r[2] for r in runs)
        results[name] = (wall, cpu)
        print(f"replay {name}: {lines} lines ({size / 1e6:.0f} MB): {wall:.3f} s wall, "
              f"{cpu:.3f} s CPU, peak RSS {rss:.0f} MiB (median of {a.repeat})", flush=True)
    print("load average after: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    jq = results["jq -c ."]
    for name, (wall, cpu) in results.items():
        if name != "jq -c .":
            print(f"replay ratio jq/{name}: wall {jq[0] / wall:.2f}x, CPU {jq[1] / cpu:.2f}x",
                  flush=True)


def cmd_startup(a):
    if subprocess.run([a.bin, "probe", "--help"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        print("startup: skipped: this maintwatch has no probe subcommand", flush=True)
        return
    with tempfile.TemporaryDirectory() as tmp:
        sim, port = start_simulator(a.bin, tmp)
        try:
            rows = [
                ("maintwatch probe --linger 0",
                 [a.bin, "probe", "-h", "127.0.0.2", "-p", str(port), "--quiet", "--linger", "0"]),
                ("maintwatch probe (default --linger 50ms)",
                 [a.bin, "probe", "-h", "127.0.0.2", "-p", str(port), "--quiet"]),
                ("redis-cli -3 CLIENT MAINT_NOTIFICATIONS ON",
                 ["redis-cli", "-3", "-h", "127.0.0.2", "-p", str(port), "CLIENT",
                  "MAINT_NOTIFICATIONS", "ON"]),
            ]
            results = {}
            for name, cmd in rows:
                walls = []
                # Interleaving would be fairer to drift; runs are short, so each row runs as a
                # block after a few warm-up runs.
                for _ in range(5):
                    timed(cmd)
                for _ in range(a.runs):
                    wall, _, code = timed(cmd)
                    if code != 0:
                        raise RuntimeError(f"{name} exited {code}")
                    walls.append(wall)
                walls.sort()
                med = statistics.median(walls)
                p90 = walls[int(0.9 * (len(walls) - 1))]
                results[name] = med
                print(f"startup {name}: median {med * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms "
                      f"({a.runs} runs)", flush=True)
        finally:
            stop(sim)
    rc = results["redis-cli -3 CLIENT MAINT_NOTIFICATIONS ON"]
    print(f"startup ratio maintwatch/redis-cli: --linger 0 "
          f"{results['maintwatch probe --linger 0'] / rc:.2f}x, default "
          f"{results['maintwatch probe (default --linger 50ms)'] / rc:.2f}x", flush=True)


def sim_addr(i):
    """The simulator's i-th proxy address: 127.0.0.2, 127.0.0.3 ... then on into 127.0.1.x."""
    n = i + 2
    return f"127.0.{n // 256}.{n % 256}"


def fleet_scenario(addresses):
    proxies = " ".join(sim_addr(i) for i in range(addresses))
    return IDLE_SCENARIO.replace("proxies 127.0.0.2", f"proxies {proxies}")


def count_lines(path, prefix, needle):
    with open(path, "rb") as f:
        return sum(1 for line in f if line.startswith(prefix) and needle in line)


def cmd_fleet(a):
    ready, rss, hwm, cpu = measure_fleet(a, [])
    print(f"fleet: {a.endpoints} endpoints ({a.addresses} simulator addresses) opted in after "
          f"{ready:.2f} s; RSS {rss / 1024:.1f} MiB (peak {hwm / 1024:.1f} MiB); idle CPU "
          f"{cpu:.2f} % of one core over {a.idle:.0f} s", flush=True)


class _Scraper:
    """GETs http://ADDR/metrics every `every` seconds on a thread, as a Prometheus would."""

    def __init__(self, addr, every):
        import threading
        self.addr, self.every, self.count = addr, every, 0
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        import urllib.request
        while not self.halt.wait(self.every):
            try:
                with urllib.request.urlopen(f"http://{self.addr}/metrics", timeout=10) as r:
                    r.read()
                self.count += 1
            except OSError:
                pass

    def stop(self):
        self.halt.set()
        self.thread.join()


def _otlp_sink():
    """An HTTP server on loopback that answers 200 to every POST (the body is read, not decoded)."""
    import http.server
    import threading

    class Sink(http.server.BaseHTTPRequestHandler):
        posts = 0

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            Sink.posts += 1
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, Sink


def cmd_fleet_services(a):
    """The fleet with --metrics (scraped every second) against --metrics and --otlp (pushed every
    --otlp-interval), alternated in one run."""
    sink, handler = _otlp_sink()
    url = f"http://127.0.0.1:{sink.server_address[1]}/v1/metrics"
    results = {"metrics": [], "metrics+otlp": []}
    for _ in range(a.repeat):
        for name in results:
            port = free_port()
            extra = ["--metrics", f"127.0.0.1:{port}"]
            if name == "metrics+otlp":
                extra += ["--otlp", url, "--otlp-interval", a.otlp_interval]
            before = handler.posts
            ready, rss, hwm, cpu = measure_fleet(a, extra, scrape=f"127.0.0.1:{port}")
            results[name].append((rss, hwm, cpu, handler.posts - before))
    sink.shutdown()
    for name, runs in results.items():
        rss = statistics.median(r[0] for r in runs) / 1024
        hwm = max(r[1] for r in runs) / 1024
        cpu = statistics.median(r[2] for r in runs)
        posts = sum(r[3] for r in runs)
        print(f"fleet {name}: {a.endpoints} endpoints, scraped every {a.scrape_every:g} s; "
              f"RSS {rss:.1f} MiB (peak {hwm:.1f} MiB); CPU {cpu:.2f} % of one core over "
              f"{a.idle:.0f} s (median of {len(runs)}; runs {', '.join(f'{r[2]:.2f}' for r in runs)}); "
              f"OTLP posts received {posts}", flush=True)


def measure_fleet(a, extra, scrape=None):
    """Starts the simulator and `watch --from` a fleet file with `extra` arguments; once every
    endpoint opted in (and 2 s more), reads RSS and measures CPU over `a.idle` seconds (with
    /metrics at `scrape` fetched every `a.scrape_every` seconds meanwhile, if given)."""
    with tempfile.TemporaryDirectory() as tmp:
        scn = os.path.join(tmp, "fleet.scn")
        with open(scn, "w") as f:
            f.write(fleet_scenario(a.addresses))
        port = free_port()
        sim = subprocess.Popen([a.bin, "simulate", "--scenario-file", scn, "--port", str(port),
                                "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for i in range(a.addresses):
                wait_listening(sim_addr(i), port)
            fleet = os.path.join(tmp, "fleet.txt")
            with open(fleet, "w") as f:
                for i in range(a.endpoints):
                    f.write(f"redis://{sim_addr(i % a.addresses)}:{port}\n")
            out_path = os.path.join(tmp, "fleet.jsonl")
            with open(out_path, "wb") as out:
                watch = subprocess.Popen([a.bin, "watch", "--from", fleet, "--json"] + extra,
                                         stdout=out, stderr=subprocess.DEVNULL)
            try:
                t0 = time.monotonic()
                while True:
                    done = count_lines(out_path, b'{"type":"handshake"', b'"opt_in":"accepted"')
                    if done >= a.endpoints:
                        break
                    if time.monotonic() - t0 > 120 or watch.poll() is not None:
                        raise RuntimeError(f"only {done} of {a.endpoints} endpoints opted in")
                    time.sleep(0.05)
                ready = time.monotonic() - t0
                time.sleep(2.0)  # settle
                scraper = _Scraper(scrape, a.scrape_every) if scrape else None
                c0, w0 = cpu_ns(watch.pid), time.monotonic()
                time.sleep(a.idle)
                c1, w1 = cpu_ns(watch.pid), time.monotonic()
                if scraper:
                    scraper.stop()
                rss = status_kib(watch.pid, "VmRSS")
                hwm = status_kib(watch.pid, "VmHWM")
                cpu = 100.0 * (c1 - c0) / 1e9 / (w1 - w0)
            finally:
                stop(watch)
        finally:
            stop(sim)
    return ready, rss, hwm, cpu


def cmd_soak(a):
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        sim = subprocess.Popen([a.bin, "simulate", "--scenario", "single-proxy", "--loop",
                                "--speed", str(a.speed), "--port", str(port), "--quiet"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_listening("127.0.0.2", port)
            out_path = os.path.join(tmp, "soak.jsonl")
            with open(out_path, "wb") as out:
                watch = subprocess.Popen([a.bin, "watch", f"redis://127.0.0.2:{port}", "--json",
                                          "--no-dns"], stdout=out, stderr=subprocess.DEVNULL)
            try:
                t0 = time.monotonic()
                marks = {}
                # One MOVING per round: its close, announced, marks the round's end.
                needle = b'"announced":true'
                while len(marks) < 2:
                    rounds = count_lines(out_path, b'{"type":"closed"', needle)
                    for mark in (10, a.rounds):
                        if rounds >= mark and mark not in marks:
                            marks[mark] = (status_kib(watch.pid, "VmRSS"), time.monotonic() - t0)
                    if time.monotonic() - t0 > 3600 or watch.poll() is not None:
                        raise RuntimeError(f"stopped after {rounds} rounds")
                    time.sleep(0.2)
                size = os.path.getsize(out_path)
            finally:
                stop(watch)
        finally:
            stop(sim)
    (r10, t10), (rn, tn) = marks[10], marks[a.rounds]
    print(f"soak: single-proxy --loop --speed {a.speed:g}: RSS {r10 / 1024:.1f} MiB at round 10 "
          f"({t10:.0f} s), {rn / 1024:.1f} MiB at round {a.rounds} ({tn:.0f} s): "
          f"{100.0 * (rn - r10) / r10:+.1f} %; {size / 1e6:.1f} MB of JSON lines written",
          flush=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("conns")
    p.add_argument("--bin", required=True)
    p.add_argument("--connections", type=int, default=1000)
    p.add_argument("--idle", type=float, default=10.0)
    p = sub.add_parser("probe")
    p.add_argument("--bin", required=True)
    p.add_argument("--endpoints", type=int, default=10000)
    p.add_argument("--concurrency", action="append", help="N or 'default'; repeatable")
    p.add_argument("--repeat", type=int, default=3)
    p = sub.add_parser("replay")
    p.add_argument("--bin", required=True)
    p.add_argument("--capture", required=True)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--before", help="also time this older maintwatch binary")
    p = sub.add_parser("startup")
    p.add_argument("--bin", required=True)
    p.add_argument("--runs", type=int, default=200)
    p = sub.add_parser("fleet")
    p.add_argument("--bin", required=True)
    p.add_argument("--endpoints", type=int, default=1000)
    p.add_argument("--addresses", type=int, default=20)
    p.add_argument("--idle", type=float, default=10.0)
    p = sub.add_parser("fleet-services")
    p.add_argument("--bin", required=True)
    p.add_argument("--endpoints", type=int, default=1000)
    # --metrics needs one address and port per endpoint.
    p.add_argument("--addresses", type=int, default=1000)
    p.add_argument("--idle", type=float, default=20.0)
    p.add_argument("--scrape-every", type=float, default=1.0)
    p.add_argument("--otlp-interval", default="1s")
    p.add_argument("--repeat", type=int, default=3)
    p = sub.add_parser("soak")
    p.add_argument("--bin", required=True)
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--speed", type=float, default=8.0)
    a = ap.parse_args()
    {"conns": cmd_conns, "probe": cmd_probe, "replay": cmd_replay, "startup": cmd_startup,
     "fleet": cmd_fleet, "fleet-services": cmd_fleet_services, "soak": cmd_soak}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
