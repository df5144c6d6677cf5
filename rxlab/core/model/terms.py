"""The model's parameters and its equations: device, size, remote wake-up, wait and steal terms.

Pure functions of a parameter mapping (PARAMS' names) and arrays of the
rows' measured columns, shared by the fit (its residuals), the predictions
and the sensitivity curves.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

# Fitted parameters, in the order of the least-squares vector, with their units.
PARAMS = {
    "dev_1_us": "us per read",            # device latency at one client, no delay
    "dev_per_thread_us": "us per read per extra client",
    "delay_offset_us": "us",              # delay - offset is the non-CPU time a delayed read waits
    "size_penalty_us_per_kib": "us per read per KiB above bs, one client",
    "size_penalty_per_thread_us_per_kib": "us per read per KiB above bs, per extra client",
    "wait_us": "us per query",            # latency not explained by CPU + device
    "wait_per_thread_us": "us per query per extra client",
    # device="iostat" only: each row's own io.lat is its device term, less the reader's CPU that
    # falls inside iostat's window (the doorbell's exit, the completion interrupt)
    "overlap_us": "us per read: CPU inside iostat's io.lat, one client",
    "overlap_per_thread_us": "us per read per extra client",
    # a read whose reader sleeps away from the CPU that takes the disk's interrupts is woken by
    # an inter-processor wake-up, in no CPU, run-queue or disk counter; times each row's awayShare
    "remote_us": "us per read woken away from the interrupt's CPU, one client",
    "remote_per_thread_us": "us per read woken away, per extra client",
    # the hypervisor's steal (each row's stealPer): time the VM's runnable vCPUs waited for the host
    "steal_factor": "us of latency per us of steal per op",
}
DEVICES = ("curve", "baseline", "iostat")
# Value a parameter is held at when the data cannot identify it.
NEUTRAL = {"dev_1_us": 0.0, "dev_per_thread_us": 0.0, "delay_offset_us": 30.0, "size_penalty_us_per_kib": 0.0,
           "size_penalty_per_thread_us_per_kib": 0.0,
           "wait_per_thread_us": 0.0, "overlap_us": 0.0, "overlap_per_thread_us": 0.0, "remote_us": 0.0,
           "remote_per_thread_us": 0.0, "steal_factor": 0.0}
# Width of the smooth max between the device's own latency and the emulated
# delay: real device latencies spread, so E[max(X, D)] bends rather than kinks.
DELAY_SMOOTH_US = 5.0


def smooth_max(a, b, h=DELAY_SMOOTH_US):
    """Smooth max(a, b): a + h*log(1 + exp((b - a)/h)); within h*log(2) of the max."""
    return a + h * np.logaddexp(0.0, (b - a) / h)


def per_read(p: Mapping[str, float], threads, io_lat=None):
    """The device term of one undelayed read (us, the non-CPU part): the fitted curve in threads,
    or (device="iostat") the row's own io.lat less the CPU that iostat's window holds."""
    threads = np.asarray(threads, float)
    if io_lat is None:
        return p["dev_1_us"] + p["dev_per_thread_us"] * (threads - 1.0)
    return np.asarray(io_lat, float) - (p["overlap_us"] + p["overlap_per_thread_us"] * (threads - 1.0))


def size_cost(p: Mapping[str, float], threads):
    """What each KiB a read carries above bs costs (us), a line in clients."""
    extra = np.asarray(threads, float) - 1.0
    return p["size_penalty_us_per_kib"] + p["size_penalty_per_thread_us_per_kib"] * extra


def remote_cost(p: Mapping[str, float], threads):
    """What a read woken away from the interrupt's CPU costs (us), a line in clients."""
    return p["remote_us"] + p["remote_per_thread_us"] * (np.asarray(threads, float) - 1.0)


def device_latency(p: Mapping[str, float], threads, delay, io_lat=None, away=0.0, excess_kib=0.0):
    """Device latency per read (us, the non-CPU part) at a concurrency and emulated delay; a
    share `away` of the reads also pays the remote wake-up (hidden by a delay's deadline, whose
    wait ends on the reader's own CPU), and reads `excess_kib` above bs pay the size penalty."""
    delay = np.asarray(delay, float)
    base = (per_read(p, threads, io_lat) + np.asarray(away, float) * remote_cost(p, threads)
            + np.asarray(excess_kib, float) * size_cost(p, threads))
    return np.where(delay > 0, smooth_max(base, delay - p["delay_offset_us"]), base)


def query_latency(p: Mapping[str, float], cpu, reads, reqsz, threads, *, delay, bs_kib, device=None,
                  io_lat=None, away=0.0, device_away=0.0, steal=0.0, device_steal=0.0):
    """Predicted latency per query (us); `device` overrides the fitted device curve, `io_lat`
    (device="iostat") replaces it with each row's own io.lat less the overlap. `away` is the
    row's share of reads woken away from the interrupt's CPU, each paying remote_us;
    `device_away` the share inside `device` (the matched fio baseline's own), taken out first.
    `steal` is the row's stealPer, costing steal_factor times itself beside the CPU (outside the
    delay's deadline: a vCPU kept off the host is late whatever the device does);
    `device_steal` the matched fio baseline's, inside `device`, taken out first.

    The wait is time a query's reads take beyond fio's device latency (the
    device is slower under RocksDB). An emulated delay is a completion
    deadline, so it hides the wait as it hides the device's own latency:
    both sit inside the smooth max with the deadline (the delayed rows' gap
    shows it: docs/findings/2026-11-26-perf_model.md).
    """
    threads, delay = np.asarray(threads, float), np.asarray(delay, float)
    reads = np.asarray(reads, float)
    curve = per_read(p, threads, io_lat)
    wait = p["wait_us"] + p["wait_per_thread_us"] * (threads - 1.0)
    remote = np.asarray(away, float) * remote_cost(p, threads)
    if device is None:
        undelayed = reads * (curve + remote) + wait
        deadline = reads * (delay - p["delay_offset_us"])
    else:  # the matched fio device latency (lat - cpuPer) at the row's delay: the deadline already in it
        device = np.asarray(device, float)
        own = (device - np.asarray(device_away, float) * remote_cost(p, threads)
               - p["steal_factor"] * np.asarray(device_steal, float))
        undelayed = reads * (np.where(delay > 0, curve, own) + remote) + wait
        deadline = reads * device
    io = np.where(delay > 0, smooth_max(undelayed, deadline), undelayed)
    size = reads * size_cost(p, threads) * (np.asarray(reqsz, float) - bs_kib)
    return np.asarray(cpu, float) + size + io + p["steal_factor"] * np.asarray(steal, float)

