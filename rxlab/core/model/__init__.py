"""The performance model: the first seed's hand model, and a fitted one that says where the time goes.

The seed (blog-2025-10-23, "A simple performance model") predicts the rate of
block reads of one client from three additive costs,

    latency per block read = userland CPU + libc/kernel CPU + device latency
    device latency         = fio latency - fio CPU per read
    predicted IOPS         = clients * 1e6 / latency,

and with 91 us of device, 11 us of libc+kernel and 8.330 / 7.607 / 6.534 us of
RocksDB CPU it prints 9063 / 9124 / 9214 IOPS against 8350 / 8327 / 8400
measured: 8-10% too high. `seed` reproduces that arithmetic exactly
(`seed_model`, `seed_model_table`); `fit` fits a model that says where the
missing time goes; `evaluate` tests it on rows it was not fitted on and
draws the seed's two sensitivity bullets from either model (`sensitivity`).

What the seed's own tables say (`latency_gap` shows it): libc+kernel cancels
out of the seed's model (device + libc/kernel = fio latency, so latency = fio
lat + cpu.inc), and the measured latency per query (clients * 1e6 / qps) is
9.3 to 10.6 us above CPU per query + reads per query x fio's device latency
in all six block_align rows (1 and 6 clients), about 18 us without
block_align (larger reads). That near constant is the hand model's error
(`seed`'s docstring has the rest of what the seed's tables say).

The fitted model, for one query:

    latency = cpuPer [+ runqPer] + reads_per_query * size(threads) * (reqsz - bs) + io
              + steal_factor * stealPer
    io (no delay)   = reads_per_query * (device(threads) + awayShare * remote(threads)) + wait(threads)
    io (delay)      = smooth max(io (no delay), reads_per_query * (delay - delay_offset))
    device(threads) = dev_1 + dev_per_thread * (threads - 1)      (and likewise size, remote, wait)
    qps = threads * 1e6 / latency;  iops = qps * reads_per_query
    (fio rows: device = smooth max(device(threads), delay - delay_offset) + steal_factor * stealPer)

Each term and why it is there:

* cpuPer, reads per query (iops / qps) and reqsz are measured on each row, as
  the seed does: they are the work a query does, not how fast it goes.
* `wait` is time a query's reads take beyond fio's device latency, the
  seed's missing constant. It sits inside the smooth max with an emulated
  delay because rxlab's delay is a completion deadline: it hides whatever
  makes the device slower under RocksDB as it hides the device's own latency.
* runqPer is the time a query's thread waited, runnable, for a CPU (the
  scheduler's run_delay). With runq=True the model counts it beside cpuPer
  and takes fio's out of its device term (device = lat - cpuPer - runqPer).
  It is off by default (on with device="iostat"): on the studies so far it
  made the held-out errors worse, because fio's jobs wait for a CPU about as
  long as RocksDB's readers (docs/findings/2026-11-23-perf_model.md).
* `remote` (remote_us): a blocking read ends with the disk's interrupt on
  one CPU; a reader asleep on another CPU is woken by an inter-processor
  wake-up, which no CPU, run-queue or disk counter holds. Every rxlab row
  carries awayShare, the share of its calls that returned on a CPU other
  than the interrupt's (rxlab.core.metrics), and each such read costs
  remote more, in fio's device term and RocksDB's reads alike. fio left to
  the scheduler keeps its jobs on the interrupt's CPU while RocksDB's readers
  spread, so the study runs fio placed away beside each baseline
  (`baseline=False`: it informs the fit, never io.eff's denominator).
* `size`: without block_align a block a little over 8 KiB starts anywhere in
  a page and is read rounded out to 512 bytes; each KiB above bs costs
  size(threads), in fio's rows (their measured reqsz) and RocksDB's alike.
* `steal_factor`: stealPer is the time per op the VM's runnable vCPUs waited
  for a physical CPU. cpuPer enters as measured, so the slower CPU of a busy
  host is already in a prediction; what is left is the emulated disk
  answering later, which fio's device term cannot know when fio ran at a
  quieter moment. With device="iostat" it comes out negative: io.lat and
  cpuPer already hold the late completion, and the term takes the double
  count out.

device="curve" (default) predicts from the fitted device curve; "baseline"
uses each row's matched fio lat - cpuPer; "iostat" takes each row's own
io.lat (iostat's read latency) less `overlap`, the reader's CPU inside
iostat's window (the doorbell's exit, the completion interrupt; a line in
clients fitted on the fio rows). The last is no prediction from fio's device:
it tests whether anything besides CPU, the wait for a CPU and the disk's own
latency is left in a query.

Fitting: scipy.optimize.least_squares, jointly on the fio baseline rows
(whose lat - cpuPer observes the device term, the seed's definition) and the
RocksDB rows (whose qps observes the whole latency). A parameter the rows
cannot identify (one thread count, no delay, no spread of reqsz, awayShare or
stealPer) is held at a neutral value and reported as such rather than
fitted to noise.

Input rows (a DataFrame, one per step): the seeds' columns (qps, iops,
reqsz, usPer, cpuPer, rx.lat, ... from rxlab.core.metrics; raw step counters
are converted with metrics.seed_columns) plus `tool` (a name containing "fio"
marks a baseline row), `threads` (clients, numjobs for fio), `delay_us`
(rxlab's emulated device latency, 0 for none), `test`, and optionally
`backend`, `bloom`, `block_align`, carried to the outputs. Every RocksDB row
needs fio rows at the same threads and delay_us (several are averaged: pass
the one baseline you mean, fio sync at queue depth 1 for io.eff).

On rxlab's delay_us: the delay is a completion deadline whose last 30 us are
spent spinning (ext/fs/rxfs.cc WaitUntil), so with a delay usPer/cpuPer
include up to 30 us of spin per read, in fio and RocksDB rows alike. The
model stays additive because its device term is what is left after CPU
(lat - cpuPer); that is why the delay enters as delay - delay_offset.

Modules: seed (the seed's model and its tables as input rows), rows (input
checks and derived columns), terms (the parameters and the equations), fit
(ModelFit, fit), evaluate (held-out evaluation, latency_gap, sensitivity).
Measured values of the terms on these machines are in docs/findings/.
"""
from rxlab.core.model.evaluate import Evaluation, evaluate, latency_gap, sensitivity
from rxlab.core.model.fit import AWAY_SPREAD, SIZE_SPREAD_KIB, STEAL_SPREAD_US, ModelFit, fit
from rxlab.core.model.rows import AWAY, RUNQ, STEAL
from rxlab.core.model.seed import (
    DEFAULT_BS_KIB,
    SEED_BLOOM,
    SEED_DEVICE_US,
    SEED_LIBC_KERNEL_US,
    SEED_TESTS,
    published_frame,
    seed_model,
    seed_model_table,
    seed_model_unrounded,
)
from rxlab.core.model.terms import DELAY_SMOOTH_US, DEVICES, NEUTRAL, PARAMS

__all__ = [
    "AWAY", "AWAY_SPREAD", "DEFAULT_BS_KIB", "DELAY_SMOOTH_US", "DEVICES", "NEUTRAL", "PARAMS", "RUNQ",
    "SEED_BLOOM", "SEED_DEVICE_US", "SEED_LIBC_KERNEL_US", "SEED_TESTS", "SIZE_SPREAD_KIB", "STEAL",
    "STEAL_SPREAD_US", "Evaluation", "ModelFit", "evaluate", "fit", "latency_gap", "published_frame",
    "seed_model", "seed_model_table", "seed_model_unrounded", "sensitivity",
]
