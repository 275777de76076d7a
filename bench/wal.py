#!/usr/bin/python3
"""bench/wal.py — SET throughput with durability on, against Debian's
redis-server with the matching AOF policy, in one run on one machine.

Rows (each a fresh server in a fresh directory on the same disk):
  perfcached [wal] fsync = off (no WAL) | no | everysec | always
  redis-server appendonly no | appendfsync no | everysec | always
Each is driven by redis-benchmark -t set with the same clients, pipeline,
key space and value size; SET requests per second are printed with the
ratio perfcached / redis-server of the matching row (above 1 = perfcached
faster). Both servers get 2 threads of work on a 2-core machine:
perfcached 2 workers, redis-server its one thread plus its fsync thread.

  /usr/bin/python3 bench/wal.py [--requests N] [--clients C] [--pipeline P,P..] [--size B] [--runs R]
                                [--workers W] [--dir DIR] [--pin] [--policies off,no,everysec,always]
                                [--commit worker|wal]

Each row is run R times (default 3), the two servers alternated, and the
medians compared. Next to requests/s: the server's CPU time per SET (user
+ system of all its processes and threads over the run; perfcached's
supervisor, workers, timer and WAL process). At pipeline 1 on two cores
redis-benchmark itself is the bottleneck (one core at 100%), so requests/s
swings by +-7% between identical runs; the CPU per SET is the steadier
figure of what each server costs (CPU ratio below 1 = perfcached cheaper).

--pin: redis-benchmark runs on CPU 0 and the server (every process and
thread of it) on CPU 1, for both servers: each side has a core of its
own, so neither server's worker preempts the client on its core (with
two workers on two cores, one of them shares the client's core). Use it
with --workers 1: both servers then have one core.

--commit: perfcached's [wal] commit under fsync = always: worker (the
default: the worker whose replies wait commits the batch itself) or wal
(the WAL process alone).

--dir: where the files go (default: a temporary directory under /var/tmp,
a real disk; /tmp may be tmpfs, where fsync costs nothing). Timings are
printed, never asserted."""
import argparse
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERFCACHED = os.environ.get("PERFCACHED", os.path.join(ROOT, "bin", "perfcached"))
REDIS_SERVER = os.environ.get("REDIS_SERVER", "redis-server")
REDIS_CLI = os.environ.get("REDIS_CLI", "redis-cli")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ping(port, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        p = subprocess.run([REDIS_CLI, "-p", str(port), "ping"], capture_output=True, text=True)
        if p.stdout.strip() == "PONG":
            return
        time.sleep(0.02)
    raise RuntimeError("server on port %d did not answer PONG" % port)


def cpu_ticks(pid):
    """utime + stime of a process (all its threads) and of its children it
    has waited for (redis-server's AOF rewrite children), in clock ticks;
    0 if gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    except (OSError, IndexError, ValueError):
        return 0


def process_tree(pid):
    """pid and its children (perfcached's supervisor and the processes it forked)."""
    pids = [pid]
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                pids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return pids


def sched_ns(pids):
    """{thread id: (time run, time waited runnable on a run queue)} in ns,
    for every thread of pids (/proc/PID/task/TID/schedstat)."""
    out = {}
    for pid in pids:
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for t in tids:
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                    v = f.read().split()
                out[t] = (int(v[0]), int(v[1]))
            except (OSError, IndexError, ValueError):
                pass
    return out


def waited_ns(before, after):
    """The run-queue wait between two sched_ns() readings, summed over the
    threads alive at the end (one started meanwhile counts from 0; one
    gone by the end is not counted)."""
    return sum(w - before.get(t, (0, 0))[1] for t, (_, w) in after.items())


def idle_ticks():
    """The machine's idle + iowait time in clock ticks, all CPUs (/proc/stat)."""
    with open("/proc/stat") as f:
        v = f.readline().split()
    return int(v[4]) + int(v[5])


CLIENT_CPU, SERVER_CPU = "0", "1"


def pinned(a, args):
    """args under taskset when --pin is given (the process and everything it
    forks or starts inherit the CPU)."""
    return (["taskset", "-c", SERVER_CPU if args[0] != "redis-benchmark" else CLIENT_CPU] + args) if a.pin else args


def bench(port, a, pipeline, pid):
    """(SET requests/s, server CPU microseconds per SET, redis-benchmark's
    CPU microseconds per SET, scheduling): the server's
    processes' user + system time over the run, with the children they
    reaped meanwhile (kernel threads such as the file system's journal are
    not counted, for either server; a redis-server AOF rewrite child still
    running at the end is not either). Scheduling: (the time the server's
    threads were runnable but waited for a CPU, summed, as a share of the
    run's wall time; the machine's idle + iowait share of all its CPUs
    meanwhile). Totals over the run: they cannot show a CPU idle at the
    moment a thread queued."""
    n = a.requests * (10 if pipeline > 1 else 1)
    pids = process_tree(pid)
    t0 = sum(cpu_ticks(x) for x in pids)
    s0, i0, w0 = sched_ns(pids), idle_ticks(), time.monotonic()
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(pinned(a, ["redis-benchmark", "-p", str(port), "-t", "set", "-n", str(n), "-r", "1000000",
                                    "-c", str(a.clients), "-P", str(pipeline), "-d", str(a.size), "-q"]),
                         capture_output=True, text=True, timeout=900).stdout
    m = re.findall(r"SET: ([\d.]+) requests per second", out)
    if not m:
        raise RuntimeError("redis-benchmark printed no SET figure: " + out[-400:])
    t1 = sum(cpu_ticks(x) for x in pids)
    s1, i1, w1 = sched_ns(pids), idle_ticks(), time.monotonic()
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)  # redis-benchmark, reaped by subprocess.run
    client = (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) * 1e6 / n
    wall = max(w1 - w0, 1e-6)
    sched = (waited_ns(s0, s1) / 1e9 / wall, (i1 - i0) / os.sysconf("SC_CLK_TCK") / (wall * (os.cpu_count() or 1)))
    return float(m[-1]), (t1 - t0) * 1e6 / os.sysconf("SC_CLK_TCK") / n, client, sched


def run_redis(a, d, policy):
    port = free_port()
    args = [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", d, "--save", "",
            "--daemonize", "no", "--logfile", os.path.join(d, "redis.log")]
    if policy == "off":
        args += ["--appendonly", "no"]
    else:
        args += ["--appendonly", "yes", "--appendfsync", policy]
    p = subprocess.Popen(pinned(a, args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ping(port)
        return port, p
    except Exception:
        p.kill()
        raise


def run_perfcached(a, d, policy, workers):
    port = free_port()
    args = [PERFCACHED, "-D", "-o", "listen.resp=127.0.0.1:%d" % port, "-o", "mi.fifo_name=", "-o", "mi.datagram=",
            "-o", "memory.arena_mb=1024", "-o", "daemon.workers=%d" % workers, "-o", "daemon.pid_file=" + d + "/pid",
            "-o", "wal.dir=" + d + "/data", "-o", 'wal.save=""', "-o", "wal.fsync=" + policy,
            "-o", "wal.commit=" + a.commit]
    p = subprocess.Popen(pinned(a, args), stdout=open(os.path.join(d, "perfcached.log"), "w"), stderr=subprocess.STDOUT)
    try:
        wait_ping(port)
        return port, p
    except Exception:
        p.kill()
        raise


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--pipeline", default="1,16")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--pin", action="store_true")
    ap.add_argument("--policies", default="off,no,everysec,always")
    ap.add_argument("--commit", default="worker", choices=["worker", "wal"])
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="perfcached-walbench-", dir=a.dir or "/var/tmp")
    fs = subprocess.run(["stat", "-f", "-c", "%T", base], capture_output=True, text=True).stdout.strip()
    workers = [int(x) for x in a.workers.split(",")]
    print("bench/wal.py: SET, %d requests (x10 when pipelined), %d clients, %d-byte values, perfcached with %s "
          "worker(s) ([wal] commit = %s), median of %d alternated runs, files on %s (%s)%s" %
          (a.requests, a.clients, a.size, a.workers, a.commit, a.runs, base, fs,
           ", client on CPU %s, server on CPU %s" % (CLIENT_CPU, SERVER_CPU) if a.pin else ""))
    try:
        for pipeline in [int(x) for x in a.pipeline.split(",")]:
            print(" pipeline %d:" % pipeline)
            for pc_policy in a.policies.split(","):
                redis_policy = pc_policy
                r_runs, r_cpu, r_cl, r_sch = [], [], [], []
                p_runs = {w: [] for w in workers}
                p_cpu = {w: [] for w in workers}
                p_cl = {w: [] for w in workers}
                p_sch = {w: [] for w in workers}
                extra = {w: "" for w in workers}
                for _ in range(a.runs):
                    d = tempfile.mkdtemp(dir=base)
                    port, p = run_redis(a, d, redis_policy)
                    try:
                        rps, cpu, cl, sch = bench(port, a, pipeline, p.pid)
                        r_runs.append(rps)
                        r_cpu.append(cpu)
                        r_cl.append(cl)
                        r_sch.append(sch)
                    finally:
                        stop(p)
                    shutil.rmtree(d, ignore_errors=True)
                    for nw in workers:
                        one_perfcached(a, base, pipeline, pc_policy, nw, p_runs, p_cpu, p_cl, p_sch, extra)
                rm, rc, rcl = statistics.median(r_runs), statistics.median(r_cpu), statistics.median(r_cl)
                print("  redis-server %-21s %10.0f/s  server %5.1f us/SET  client %5.1f us/SET  %s" %
                      ("appendonly no" if redis_policy == "off" else "appendfsync " + redis_policy, rm, rc, rcl,
                       sched_text(r_sch)))
                for nw in workers:
                    pm, pc, pcl = (statistics.median(p_runs[nw]), statistics.median(p_cpu[nw]),
                                   statistics.median(p_cl[nw]))
                    print("  perfcached fsync=%-8s %d worker%s %10.0f/s  server %5.1f us/SET  client %5.1f us/SET  %s"
                          "   ratio %.2f, CPU ratio %.2f, client CPU ratio %.2f%s" %
                          (pc_policy, nw, " " if nw == 1 else "s", pm, pc, pcl, sched_text(p_sch[nw]), pm / rm,
                           pc / rc if rc else 0, pcl / rcl if rcl else 0, extra[nw]))
                sys.stdout.flush()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def sched_text(runs):
    """The medians of bench()'s scheduling figures."""
    return "runq wait %3.0f%%, idle %3.0f%%" % (statistics.median(x[0] for x in runs) * 100,
                                               statistics.median(x[1] for x in runs) * 100)


def one_perfcached(a, base, pipeline, pc_policy, nw, p_runs, p_cpu, p_cl, p_sch, extra):
    """One perfcached run with nw workers; appends to the per-worker-count lists."""
    d = tempfile.mkdtemp(dir=base)
    port, p = run_perfcached(a, d, pc_policy, nw)
    try:
        rps, cpu, cl, sch = bench(port, a, pipeline, p.pid)
        p_runs[nw].append(rps)
        p_cpu[nw].append(cpu)
        p_cl[nw].append(cl)
        p_sch[nw].append(sch)
        info = subprocess.run([REDIS_CLI, "-p", str(port), "info", "persistence"],
                              capture_output=True, text=True).stdout
        n = re.search(r"wal_fsyncs:(\d+)", info)
        w = re.search(r"wal_records_written:(\d+)", info)
        avg = re.search(r"wal_fsync_avg_us:(\d+)", info)
        if n and int(n.group(1)):
            extra[nw] = "  (%.1f writes per fsync, fsync avg %s us)" % (int(w.group(1)) / int(n.group(1)), avg.group(1))
    finally:
        stop(p)
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
