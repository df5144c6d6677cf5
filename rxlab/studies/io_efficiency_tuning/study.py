"""What raises io.eff: the first seed's point-query test under a ladder of configurations.

The seed's io.eff (RocksDB's storage read IOPS over fio's, sync engine, queue
depth 1, 8 KiB O_DIRECT random reads) is lower on a fast device, because
RocksDB's CPU per query weighs more against a shorter device read. This
study asks which settings give that CPU back, and whether the model accounts
for what each one saves. It loads one DB (fillseq, then a compaction into one
level: the seed's readrandom2 case, one device read per query) and reads it
with one client under:

* the LADDER, a sequence of configurations each one change on top of the one
  before: the seed's setting through rxlab's posix engine, then RocksDB's
  own work (Statistics off, no checksum check, no bloom filter probe, no
  block cache), then the engine (no counters, io_uring, registered files and
  fixed buffers, DEFER_TASKRUN). The best rung is the one with the highest io.eff, not
  necessarily the last: a change can cost here what it saves elsewhere;
* SIDE configurations, one change on top of the seed's setting each, that
  are references rather than improvements: RocksDB's own file system, index
  and filter blocks in the block cache (the other placement), and SQPOLL (a
  kernel thread busy-polls the ring, so its CPU is shown beside it:
  `host_cpuPer`, the whole machine's busy CPU per query).

Each repetition runs rxlab's fio baseline first and then every configuration
in a rotated order; io.eff of a run is against its own repetition's fio.
`accounting` puts the model (rxlab.core.model, fitted on the same rows with the
fio baseline as its device term) beside each rung: the CPU a rung saves, the
latency it predicts from that, the latency measured.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from rxlab.bench import driver, fio
from rxlab.core import figures, metrics, model, stats, store
from rxlab.core import params as checks
from rxlab.core.sysinfo import work_space
from rxlab.studies.perf_model.analysis import config_errors

__all__ = ["CONFIGS", "LADDER", "SCALES", "SIDE", "TARGET", "Config", "Params", "Settings", "StudyResult",
           "accounting", "config_table", "fig_ioeff", "fig_latency", "findings", "held_out", "held_out_by_config",
           "load_study", "plan", "run_study", "study_frame"]

SEED_FILE = "blog-2025-10-23-rocksdb-io-efficiency-point-queries.txt"
PUBLISHED = (f"{SEED_FILE}: ioeff_efficiency",)
TARGET = 0.80                 # the issue's io.eff goal for the best rxlab configuration on this machine
SEED_IOEFF_1 = 0.84           # the seed's io.eff at one user (readrandom), for the figure's reference line
RUN_PREFIX = "ioeff-tuning-"
FIO_TOOL, DB_TOOL = "rxlab-fio", "rocksdb"
BLOCK_BYTES = 8192
KEY_SIZE, VALUE_SIZE = 16, 400
MIB, GIB = 1 << 20, 1 << 30


@dataclass(frozen=True)
class Config:
    """One configuration: a backend URI, RunSpec fields and options of the read step."""

    name: str
    change: str                                   # what it changes, in words
    backend: str = "posix"
    spec: Mapping = field(default_factory=dict)   # RunSpec fields (statistics, bloom_bits, options, ...)
    step: Mapping = field(default_factory=dict)   # read-step fields (verify_checksums, ...)
    busy_polls: bool = False


def _ladder() -> list[Config]:
    """Each rung is the previous one plus one change (names say the change)."""
    rungs = [
        ("seed", "the seed's setting through rxlab's posix engine (pread), Statistics on", {}),
        ("statistics off", "RocksDB Statistics off (every ticker and histogram update is CPU)",
         {"spec": {"statistics": False}}),
        ("no checksum check", "ReadOptions::verify_checksums=false (no block checksum per read)",
         {"step": {"verify_checksums": False}}),
        ("no bloom probe", "no filter policy: after the compaction every key read exists, so the bloom "
         "probe cannot save a read", {"spec": {"bloom_bits": 0}}),
        ("no block cache", "no block cache (no_block_cache=true): with a hit ratio near 0 its lookup, insert "
         "and eviction per query are pure CPU; index and filter stay in the table readers",
         {"spec": {"cache_size": 0}}),
        ("engine counters off", "rxlab's engine counters off (counters=0)", {"backend": "posix?counters=0"}),
        ("io_uring", "the io_uring engine instead of pread", {"backend": "io_uring?counters=0"}),
        ("registered files + fixed buffers", "io_uring with registered files and fixed buffers "
         "(no fd lookup, no page pinning per read)",
         {"backend": "io_uring?counters=0&registered_files=1&fixed_buffers=1"}),
        ("defer taskrun", "io_uring's SINGLE_ISSUER + DEFER_TASKRUN: a read's completion is posted when "
         "its thread waits for it, without a task-work wake-up of its own",
         {"backend": "io_uring?counters=0&registered_files=1&fixed_buffers=1&defer_taskrun=1"}),
    ]
    out, backend, spec, step = [], "posix", {}, {}
    for name, change, d in rungs:
        backend = d.get("backend", backend)
        spec = {**spec, **d.get("spec", {})}
        step = {**step, **d.get("step", {})}
        out.append(Config(name, change, backend, dict(spec), dict(step)))
    return out


LADDER = _ladder()
SIDE = [
    Config("default file system", "RocksDB's own file system (the reference; pread)", "default"),
    Config("index+filter in cache", "index and filter blocks in the 8 MiB block cache, where they compete "
           "with data blocks (cache_index_and_filter_blocks=true)",
           spec={"options": "block_based_table_factory={cache_index_and_filter_blocks=true}"}),
    # on the rung before defer taskrun: the kernel refuses DEFER_TASKRUN with SQPOLL
    Config("sqpoll", "registered files + fixed buffers with an SQPOLL thread (busy-polls a core: see "
           "host_cpuPer)", LADDER[-2].backend + "&sqpoll=1", spec=dict(LADDER[-2].spec),
           step=dict(LADDER[-2].step), busy_polls=True),
    # also on the rung before defer taskrun: deferred completions are posted only inside
    # io_uring_enter, where a spinning reader never goes
    Config("spin", "registered files + fixed buffers, the reader spinning on the completion queue "
           "instead of sleeping (spin_us=500: no context switch, no idle vCPU to wake; busy-polls the "
           "reader's own CPU)", LADDER[-2].backend + "&spin_us=500", spec=dict(LADDER[-2].spec),
           step=dict(LADDER[-2].step), busy_polls=True),
]
CONFIGS = {c.name: c for c in (*LADDER, *SIDE)}


@dataclass(frozen=True)
class Scale:
    num: int
    duration: float    # seconds of each read run and each fio run
    repeats: int
    cache_size: int
    fio_size: int


SCALES = {
    "smoke": Scale(num=30_000, duration=0.5, repeats=1, cache_size=1 * MIB, fio_size=64 * MIB),
    "small": Scale(num=2_000_000, duration=5.0, repeats=3, cache_size=8 * MIB, fio_size=1 * GIB),
    "full": Scale(num=8_000_000, duration=20.0, repeats=5, cache_size=8 * MIB, fio_size=4 * GIB),
}
FIO_RAMP_S = 0.5


@dataclass(frozen=True)
class Settings:
    scale: str
    num: int
    db_bytes: int
    duration: float
    repeats: int
    cache_size: int
    fio_size: int
    configs: tuple

    def table(self) -> pd.DataFrame:
        rows = [("scale", self.scale), ("keys", f"{self.num:,}"),
                ("key-value data", f"{self.db_bytes / GIB:.2f} GiB"),
                ("block cache", f"{self.cache_size / MIB:g} MiB"), ("seconds per run", f"{self.duration:g}"),
                ("repetitions", str(self.repeats)), ("fio file", f"{self.fio_size / GIB:.2f} GiB"),
                ("configurations", ", ".join(self.configs))]
        return pd.DataFrame(rows, columns=["setting", "value"]).set_index("setting")


@dataclass
class Params(checks.Checked):
    """scale: smoke | small | full. configs: names from CONFIGS (None: all, the ladder first).
    repeats, duration: None takes the scale's. db_dir: where the DB and fio's file go (None: a
    temporary directory; it must support O_DIRECT)."""

    scale: str = "small"
    configs: list | None = None
    repeats: int | None = None
    duration: float | None = None
    db_dir: str | None = None

    def __post_init__(self):
        checks.choice("scale", self.scale, tuple(SCALES))
        if self.configs is None:
            self.configs = list(CONFIGS)
        names = checks.as_list(self.configs)
        bad = [n for n in names if n not in CONFIGS]
        if not names or bad or len(set(names)) != len(names):
            checks.fail("configs", self.configs, f"expected distinct names from: {', '.join(CONFIGS)}")
        if "seed" not in names:
            checks.fail("configs", self.configs, "must include 'seed', the configuration the others "
                                                 "are compared with")
        self.configs = [n for n in CONFIGS if n in names]  # the ladder's order
        if self.repeats is not None and not (checks.is_int(self.repeats) and 1 <= self.repeats <= 100):
            checks.fail("repeats", self.repeats, "expected None (the scale's) or an integer 1..100")
        dur = self.duration
        if dur is not None and not (checks.is_number(dur) and 0.1 <= dur <= 3600):
            checks.fail("duration", self.duration, "expected None (the scale's) or seconds 0.1..3600")
        self.db_dir = checks.db_dir(self.db_dir)
        self.settings()

    def settings(self) -> Settings:
        sc = SCALES[self.scale]
        work, free = work_space(self.db_dir)
        db_bytes = sc.num * (KEY_SIZE + VALUE_SIZE)
        need = 2 * db_bytes + sc.fio_size
        if need > free:
            raise ValueError(f"scale={self.scale!r}: needs about {need / GIB:.1f} GiB free at {work}, only "
                             f"{free / GIB:.1f} GiB free; choose another db_dir or a smaller scale")
        return Settings(scale=self.scale, num=sc.num, db_bytes=db_bytes,
                        duration=float(self.duration if self.duration is not None else sc.duration),
                        repeats=int(self.repeats if self.repeats is not None else sc.repeats),
                        cache_size=sc.cache_size, fio_size=sc.fio_size, configs=tuple(self.configs))


# --------------------------------------------------------------------------- running

def plan(params: Params) -> pd.DataFrame:
    """Runs in order: the load, then per repetition fio and every configuration (rotated)."""
    s = params.settings()
    rows = [{"rep": -1, "kind": "load", "config": ""}]
    for rep in range(s.repeats):
        rows.append({"rep": rep, "kind": "fio", "config": ""})
        rows += [{"rep": rep, "kind": "read", "config": c} for c in stats.rotate(s.configs, rep)]
    return pd.DataFrame(rows, columns=["rep", "kind", "config"])


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _spec(s: Settings, db: Path, name: str, backend: str, steps: list, **over):

    fields = dict(db=str(db), name=name, backend=backend, steps=steps, num=s.num, key_size=KEY_SIZE,
                  value_size=VALUE_SIZE, threads=1, duration=s.duration, block_size=BLOCK_BYTES,
                  block_align=True, compression="none", cache_size=s.cache_size, scale=s.scale)
    fields.update(over)
    return driver.RunSpec(**fields)


def _run_fio(s: Settings, filename: Path, root: Path, meta: dict) -> Path:

    return fio.run_stored(root, filename, {**meta, "tool": FIO_TOOL}, rw="randread", bs=BLOCK_BYTES,
                            size=s.fio_size, direct=True, ioengine="sync", iodepth=1, numjobs=1,
                            runtime=s.duration, ramp_time=FIO_RAMP_S, seed=meta["rep"] + 1)


def run_study(params: Params, root: str | os.PathLike | None = None, progress: bool = True) -> StudyResult:
    """Load the DB once, then run `plan`; every run is stored. The DB and fio's file are deleted at
    the end (in a temporary directory unless db_dir is given)."""


    s = params.settings()
    root = Path(root) if root is not None else store.default_root()
    sid = stats.new_study_id()
    temp = params.db_dir is None
    work = Path(tempfile.mkdtemp(prefix="rxlab-tuning-")) if temp else Path(params.db_dir)
    work.mkdir(parents=True, exist_ok=True)
    db, fio_file = work / f"tuning-db-{sid}", work / f"tuning-fio-{sid}.data"
    runs: list[Path] = []
    t0 = time.monotonic()
    base = {"study": sid, "study_scale": params.scale}
    pl = plan(params)
    try:
        bar = tqdm(pl.itertuples(index=False), total=len(pl), desc=f"io.eff tuning {params.scale}",
                   unit="run", disable=not progress)
        for r in bar:
            bar.set_postfix_str(f"rep {r.rep} {r.config or r.kind}")
            name = f"{RUN_PREFIX}{sid}-r{r.rep}-{_slug(r.config or r.kind)}"
            meta = {**base, "rep": int(r.rep), "kind": r.kind, "config": r.config}
            if r.kind == "fio":
                runs.append(_run_fio(s, fio_file, root, {**meta, "name": name}))
                continue
            if r.kind == "load":
                # the seed's readrandom2 case: one level after a full compaction
                spec = _spec(s, db, name, "posix", [{"name": "fillseq", "disable_wal": True}, "flush",
                                                    "compact"], seed=0)
            else:
                c = CONFIGS[r.config]
                spec = _spec(s, db, name, c.backend, [{"name": "readrandom", **c.step}], use_existing_db=True,
                             seed=1000 * (int(r.rep) + 1), **c.spec)
            runs.append(driver.run(spec, root=root, progress=False, meta={**meta, "tool": DB_TOOL}))
    finally:
        shutil.rmtree(db, ignore_errors=True)
        fio_file.unlink(missing_ok=True)
        if temp:
            shutil.rmtree(work, ignore_errors=True)
    res = StudyResult(study=sid, frame=study_frame(store.catalog(root, runs=runs)), runs=runs, root=root,
                      params=params, settings=s, elapsed_s=time.monotonic() - t0)
    return res


@dataclass
class StudyResult:
    """frame: one row per fio run (its total) and per read run: study, rep, tool, config, test,
    threads, delay_us, run_id, raw columns, the seeds' columns, and host_cpuPer."""

    study: str
    frame: pd.DataFrame
    runs: list[Path]
    root: Path
    params: Params | None = None
    settings: Settings | None = None
    elapsed_s: float | None = None

    @property
    def configs(self) -> list[str]:
        have = set(self.frame.loc[self.frame["tool"] == DB_TOOL, "config"])
        return [c for c in CONFIGS if c in have]


_KEYS = ["study", "rep", "tool", "config", "test", "threads", "delay_us", "run_id"]


def study_frame(cat: pd.DataFrame) -> pd.DataFrame:
    """The study's rows from catalog rows (runs of other studies are dropped)."""
    if cat.empty or "spec.kind" not in cat.columns or "run_name" not in cat.columns:
        return pd.DataFrame(columns=_KEYS)
    cat = cat[cat["run_name"].astype(str).str.startswith(RUN_PREFIX)
              & cat["spec.kind"].isin(["fio", "read"])].copy()
    if "job" in cat.columns:
        cat = cat[(cat["spec.kind"] != "fio") | (cat["job"].astype(str) == "total")]
    cat = cat[(cat["spec.kind"] == "fio") | (cat["name"] == "readrandom")]
    if cat.empty:
        return pd.DataFrame(columns=_KEYS)
    is_fio = cat["spec.kind"] == "fio"
    keys = pd.DataFrame({
        "study": cat["spec.study"].astype(str), "rep": pd.to_numeric(cat["spec.rep"]).astype(int),
        "tool": np.where(is_fio, FIO_TOOL, DB_TOOL),
        "config": np.where(is_fio, "", cat["spec.config"].astype(str)),
        "test": np.where(is_fio, "fio-sync", "readrandom2"), "threads": 1, "delay_us": 0,
        "backend": cat["backend"].astype(str)}, index=cat.index)
    derived = metrics.seed_columns(cat).drop(columns="test")  # the keys name the test
    raw = cat.drop(columns=[c for c in (*derived.columns, *keys.columns) if c in cat.columns])
    out = pd.concat([keys, raw, derived], axis=1)
    # the whole machine's busy CPU per query: what a busy-polling configuration really costs
    out["host_cpuPer"] = pd.to_numeric(out["system_cpu.busy"]) * 1e6 / pd.to_numeric(out["ops"])
    if "lat_mean_us" in out.columns:
        out.loc[is_fio.to_numpy(), "rx.lat"] = pd.to_numeric(out.loc[is_fio.to_numpy(), "lat_mean_us"])
    first = [c for c in _KEYS if c in out.columns]
    return out[first + [c for c in out.columns if c not in first]].reset_index(drop=True)


def load_study(root: str | os.PathLike | None = None, study_id: str | None = None,
               scale: str | None = None) -> StudyResult | None:
    """The latest study in the store with every repetition's fio and the seed configuration
    (or the one named), or None."""
    root = Path(root) if root is not None else store.default_root()
    cat = store.catalog(root)
    if cat.empty or "run_name" not in cat.columns or "spec.study" not in cat.columns:
        return None
    cat = cat[cat["run_name"].astype(str).str.startswith(RUN_PREFIX)]
    if scale is not None and "spec.study_scale" in cat.columns:
        cat = cat[cat["spec.study_scale"] == scale]
    for sid in sorted(cat["spec.study"].dropna().unique(), reverse=True):
        if study_id is not None and sid != study_id:
            continue
        c = cat[cat["spec.study"] == sid]
        f = study_frame(c)
        if f.empty or not ((f["tool"] == FIO_TOOL).any() and (f["config"] == "seed").any()):
            continue
        return StudyResult(study=str(sid), frame=f, runs=[root / r for r in c["run_id"].unique()], root=root)
    return None


# --------------------------------------------------------------------------- tables

COLUMNS = ("qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat", "io.eff", "us.inc",
           "cpu.inc", "host_cpuPer", "reads_per_query")


def rows(result: StudyResult) -> pd.DataFrame:
    """Every read run with io.eff, us.inc and cpu.inc against its own repetition's fio
    (rxlab.core.metrics.efficiency), and reads per query."""
    f = result.frame
    fio, db = f[f["tool"] == FIO_TOOL], f[f["tool"] == DB_TOOL]
    parts = []
    for rep, g in db.groupby("rep"):
        b = fio[fio["rep"] == rep]
        if b.empty:
            raise ValueError(f"study {result.study}: repetition {rep} has no fio baseline")
        base = b.iloc[[0]][["iops", "usPer", "cpuPer"]]
        eff = metrics.efficiency(g[["qps", "iops", "usPer", "cpuPer"]], base)
        parts.append(g.assign(**{c: eff[c] for c in metrics.EFFICIENCY_COLUMNS}))
    out = pd.concat(parts).sort_index()
    out["reads_per_query"] = out["iops"] / out["qps"]
    return out


def config_table(result: StudyResult) -> pd.DataFrame:
    """Per configuration (the ladder's order, then the side ones): medians over the repetitions,
    io.eff's range, and fio's medians as the first row."""
    r = rows(result)
    med = stats.medians(r, ["config"], COLUMNS, sort=False)
    rng = r.groupby("config")["io.eff"].agg(["min", "max"]).rename(
        columns={"min": "io.eff_min", "max": "io.eff_max"})
    med = med.merge(rng, left_on="config", right_index=True)
    med["rung"] = med["config"].map(lambda c: "ladder" if c in {x.name for x in LADDER} else "side")
    med["change"] = med["config"].map(lambda c: CONFIGS[c].change)
    med["busy_polls"] = med["config"].map(lambda c: CONFIGS[c].busy_polls)
    med["_o"] = med["config"].map(list(CONFIGS).index)
    fio = result.frame[result.frame["tool"] == FIO_TOOL]
    fmed = stats.medians(fio.assign(config="fio sync qd1"), ["config"], ["iops", "usPer", "syPer", "cpuPer",
                                                                          "rx.lat", "io.lat", "host_cpuPer"])
    fmed["rung"], fmed["change"], fmed["_o"] = "baseline", "fio's sync engine, qd 1: the denominator", -1
    out = pd.concat([fmed, med]).sort_values("_o").drop(columns="_o").set_index("config")
    return out[["rung", "n", *(c for c in COLUMNS if c in out.columns), "io.eff_min", "io.eff_max",
                "busy_polls", "change"]]


def model_rows(result: StudyResult) -> pd.DataFrame:
    """fio and read rows in rxlab.core.model's input form (the configuration as `backend`).

    Busy-polling configurations are left out: their process CPU is mostly a
    polling thread's, beside the query rather than in its path, which the
    model's additive latency (CPU + device + wait) does not describe.
    """
    f = result.frame
    f = f[(f["tool"] == FIO_TOOL) | ~f["config"].map(lambda c: CONFIGS[c].busy_polls if c in CONFIGS
                                                       else False)].copy()
    f["backend"] = np.where(f["tool"] == FIO_TOOL, "fio", f["config"])
    return f


def _fit(result: StudyResult, mask=None) -> model.ModelFit:
    d = model_rows(result)
    if mask is not None:
        d = d[(d["tool"] == FIO_TOOL) | mask.reindex(d.index).fillna(False).astype(bool)]
    return model.fit(d, device="baseline")


def accounting(result: StudyResult) -> pd.DataFrame:
    """Each ladder rung against the one before, in microseconds per query and in io.eff.

    Means over the repetitions (not medians), so that the parts add up: the
    user and system CPU saved sum to the CPU saved, which the model turns
    into the predicted latency saved.

    saved_user_us / saved_sys_us: CPU per query given back;
    saved_pred_us: the latency the model predicts saved (the CPU saved plus
    any change of reads per query times the device term); saved_meas_us: the
    latency per query measured saved (1e6 / qps); unexplained_us: measured
    minus predicted; noise_us: two standard errors of the per-repetition
    differences of measured latency (a saving smaller than it is not
    resolved). io.eff and the model's io.eff (fitted on every rung, fio as
    the device term) after the rung.
    """
    fit = _fit(result)
    pred = fit.predict(model_rows(result))
    r = rows(result).loc[pred.index]
    r = r.assign(lat_pred_us=pred["lat_pred_us"], **{"io.eff_pred": pred["io.eff_pred"]},
                 lat_meas_us=pred["lat_meas_us"])
    cols = ["usPer", "syPer", "cpuPer", "reads_per_query", "lat_pred_us", "lat_meas_us", "io.eff",
            "io.eff_pred"]
    med = r.groupby("config", sort=False)[cols].mean()
    # per repetition: the rungs of one repetition ran minutes apart, so their difference cancels
    # the machine's slower drift (the noise of a saving is that of these paired differences)
    lat = r.pivot_table(index="rep", columns="config", values="lat_meas_us", aggfunc="mean")
    out, prev = [], None
    for c in (x.name for x in LADDER):
        if c not in med.index:
            continue
        m = med.loc[c]
        row = {"rung": c, "change": CONFIGS[c].change, "cpuPer": m["cpuPer"], "lat_meas_us": m["lat_meas_us"],
               "lat_pred_us": m["lat_pred_us"], "io.eff": m["io.eff"], "io.eff_pred": m["io.eff_pred"]}
        if prev is not None:
            row.update(saved_user_us=prev["usPer"] - m["usPer"], saved_sys_us=prev["syPer"] - m["syPer"],
                       saved_pred_us=prev["lat_pred_us"] - m["lat_pred_us"],
                       saved_meas_us=prev["lat_meas_us"] - m["lat_meas_us"])
            row["unexplained_us"] = row["saved_meas_us"] - row["saved_pred_us"]
            # two standard errors of the paired differences: smaller savings are not resolved
            d = (lat[prev.name] - lat[c]).dropna()
            row["noise_us"] = 2.0 * float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else np.nan
        out.append(row)
        prev = m
    cols = ["rung", "saved_user_us", "saved_sys_us", "saved_pred_us", "saved_meas_us", "unexplained_us",
            "noise_us", "cpuPer", "lat_pred_us", "lat_meas_us", "io.eff_pred", "io.eff", "change"]
    return pd.DataFrame(out).reindex(columns=cols).set_index("rung")


def held_out(result: StudyResult) -> pd.DataFrame:
    """The model fitted on the seed configuration alone predicts every other one (their CPU per
    query and reads per query measured, the rest from the fit): error of predicted IOPS, per run,
    and the seed's own model (latency = fio latency + cpu.inc) beside it. Busy-polling
    configurations are not predicted (see model_rows)."""
    d = model_rows(result)
    ev = model.evaluate(d, (d["tool"] == DB_TOOL) & (d["config"] == "seed"), device="baseline")
    out = ev.rows.copy()
    out["config"] = out["backend"]
    keep = [c for c in ("config", "iops", "iops_pred", "err_iops_pct", "seed_iops_pred", "seed_err_iops_pct")
            if c in out.columns]
    return out[keep]


def held_out_by_config(held: pd.DataFrame) -> pd.DataFrame:
    """held_out's predictions on each configuration's median over its repetitions (ioeff.config_errors)."""

    return config_errors(held, by=["config"]).set_index("config")


# --------------------------------------------------------------------------- figures and words

def _short(name: str) -> str:
    return {"registered files + fixed buffers": "reg. files + fixed bufs", "defer taskrun": "defer taskrun",
            "index+filter in cache": "index+filter cached"}.get(name, name)


def fig_ioeff(result: StudyResult):
    """io.eff per configuration: medians (bars) and repetitions (dots), the target and the seed's."""
    r = rows(result)
    order = [c for c in CONFIGS if c in set(r["config"])]
    med = r.groupby("config")["io.eff"].median().reindex(order)
    fig, ax = figures.figure("column", aspect=0.9)
    y = np.arange(len(order))[::-1]
    colors = [figures.CYCLE[0] if c in {x.name for x in LADDER} else figures.CYCLE[7] for c in order]
    ax.barh(y, med.to_numpy(), color=colors, alpha=0.75, height=0.65)
    for yi, c in zip(y, order, strict=False):
        v = r.loc[r["config"] == c, "io.eff"].to_numpy()
        ax.plot(v, np.full(len(v), yi), "o", ms=2.5, color="black", zorder=3)
    ax.axvline(TARGET, ls="--", lw=0.8, color=figures.CYCLE[5], label=f"target {TARGET:.2f}")
    ax.axvline(SEED_IOEFF_1, ls=":", lw=0.8, color=figures.CYCLE[2], label=f"seed, 1 user ({SEED_IOEFF_1})")
    ax.set_yticks(y, [_short(c) + (" *" if CONFIGS[c].busy_polls else "") for c in order])
    lo = max(0.0, float(np.nanmin(r["io.eff"])) - 0.1)
    ax.set_xlim(lo, max(1.0, float(np.nanmax(r["io.eff"])) + 0.02))
    ax.set_xlabel("io.eff (RocksDB IOPS / fio sync qd1 IOPS)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, fontsize="small", frameon=False)
    ax.set_title("readrandom after compaction, 1 client\nblue: ladder, grey: side, * busy-polls",
                 fontsize="small")
    return fig


def fig_latency(result: StudyResult):
    """Where a query's time goes per configuration: user CPU, system CPU and the rest (device and
    waiting), measured, with the model's predicted latency as a tick."""
    fit = _fit(result)
    pred = fit.predict(model_rows(result))  # busy-polling configurations are not drawn (see model_rows)
    acc_rows = rows(result).loc[pred.index]
    acc_rows = acc_rows.assign(lat_pred_us=pred["lat_pred_us"], lat_meas_us=pred["lat_meas_us"])
    order = [c for c in CONFIGS if c in set(acc_rows["config"])]
    med = acc_rows.groupby("config")[["usPer", "syPer", "lat_meas_us", "lat_pred_us"]].median().reindex(order)
    fig, ax = figures.figure("column", aspect=0.9)
    y = np.arange(len(order))[::-1]
    rest = med["lat_meas_us"] - med["usPer"] - med["syPer"]
    ax.barh(y, med["usPer"], color=figures.CYCLE[0], height=0.65, label="user CPU")
    ax.barh(y, med["syPer"], left=med["usPer"], color=figures.CYCLE[1], height=0.65, label="system CPU")
    ax.barh(y, rest, left=med["usPer"] + med["syPer"], color=figures.CYCLE[4], alpha=0.5, height=0.65,
            label="device and waiting")
    ax.plot(med["lat_pred_us"], y, "|", ms=9, mew=1.5, color="black", label="model's latency")
    ax.set_yticks(y, [_short(c) for c in order])
    ax.set_xlabel("us per query (1 client)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize="small", frameon=False)
    return fig


def findings(result: StudyResult) -> str:
    """The study's numbers in sentences: fio, the seed configuration, the best, and each rung."""
    t = config_table(result)
    acc = accounting(result)
    fio = t.loc["fio sync qd1"]
    seed = t.loc["seed"]
    ladder = [c for c in acc.index]
    best = max((c for c in t.index if c in CONFIGS and not CONFIGS[c].busy_polls),
               key=lambda c: t.loc[c, "io.eff"])
    b = t.loc[best]
    lines = [
        f"- fio sync qd1: {fio['iops']:.0f} IOPS, {fio['rx.lat']:.1f} us per read of which "
        f"{fio['cpuPer']:.1f} us CPU ({fio['usPer']:.1f} user).",
        f"- The seed's setting (posix, Statistics on): {seed['qps']:.0f} QPS, io.eff {seed['io.eff']:.3f}, "
        f"{seed['cpuPer']:.1f} us CPU per query ({seed['usPer']:.1f} user, {seed['syPer']:.1f} system).",
        f"- Best without busy polling: **{best}**, io.eff {b['io.eff']:.3f} (range {b['io.eff_min']:.3f}-"
        f"{b['io.eff_max']:.3f} over {int(b['n'])} runs), {b['cpuPer']:.1f} us CPU per query: "
        + ("at or above" if b["io.eff"] >= TARGET else "below") + f" the target {TARGET:.2f}.",
    ]
    if best in acc.index and best != "seed":
        r = rows(result)
        lat = 1e6 / r.pivot_table(index="rep", columns="config", values="qps", aggfunc="mean")
        d = (lat["seed"] - lat[best]).dropna()
        noise = 2.0 * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else np.nan
        cpu = acc.loc["seed", "cpuPer"] - acc.loc[best, "cpuPer"]
        pred = acc.loc["seed", "lat_pred_us"] - acc.loc[best, "lat_pred_us"]
        lines.append(f"- From the seed's setting to {best}: {cpu:.1f} us of CPU per query saved (means), "
                     f"which the model turns into {pred:.1f} us of latency; measured {d.mean():.1f} "
                     f"+- {noise:.1f} us (paired by repetition, two standard errors).")
    for c in ladder[1:]:
        a = acc.loc[c]
        resolved = "" if not np.isfinite(a["noise_us"]) else (
            f" (beyond the noise of +-{a['noise_us']:.1f} us)" if abs(a["saved_meas_us"]) > a["noise_us"]
            else f" (within the noise of +-{a['noise_us']:.1f} us)")
        lines.append(f"- {c}: {a['saved_user_us']:+.1f} us user and {a['saved_sys_us']:+.1f} us system CPU "
                     f"saved per query; the model predicts {a['saved_pred_us']:+.1f} us of latency saved, "
                     f"{a['saved_meas_us']:+.1f} us measured{resolved}; io.eff {a['io.eff']:.3f}.")
    for c in (x.name for x in SIDE):
        if c in t.index:
            s = t.loc[c]
            lines.append(f"- {c} (side): io.eff {s['io.eff']:.3f}, {s['cpuPer']:.1f} us CPU per query in the "
                         f"process, {s['host_cpuPer']:.1f} us busy CPU per query on the whole machine.")
    return "\n".join(lines)
