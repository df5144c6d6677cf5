"""`rxlab ab A B` as a study: two configurations measured in turns with an A/A control, stored with a figure.

Not one of the seed studies (it has no notebook and is not in the registry):
the Study protocol runs it (a study id, the manifest, the turns and their
stopping rule, rxlab.core.turns_plan), its runs are in the store under
`ab-<study id>-t<turn>-<a|b|aa>`, and `save_outputs` writes its comparison
table, figure and findings. The measurement is rxlab.bench.ab's.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from rxlab.bench import ab
from rxlab.bench.neighbour import Spinner, busy_cpu
from rxlab.core import builds, store, sysinfo
from rxlab.core import params as checks
from rxlab.core.plots import ratio_plot
from rxlab.core.resolution import AB_MIN_TURNS, format_comparison
from rxlab.core.study import FigureSpec, RunContext, Study, StudyResult, match_runs
from rxlab.core.turns_plan import Compare, TurnsParams, result_comparisons

RUN_PREFIX = "ab-"
_NAME_RE = re.compile(r"^ab-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-t(?P<turn>\d+)-(?P<who>a|b|aa)$")
CONDITIONS = ("quiet", "busy")
CPU_COLUMNS = ("cpu_per_read_us", "cpu_per_op_us")
# O_DIRECT reads: the device's time per read (the block layer's await) and the bytes it was asked for
DEVICE_COLUMNS = ("device_us_per_read", "bytes_per_read", "page_start_share")
COMPARE = Compare(config="config", metric="value", keys=("workload",), turn="turn", label="rate")

# Per scale: keys, and the slices of a turn of reads or of a timed row (readwhilewriting, mixgraph). smoke
# checks the pipeline in seconds.
SIZES = {
    "smoke": {"num": 100_000, "rounds": 2, "slice_s": 0.2, "warmup_s": 0.3},
    "small": {"num": 1_000_000, "rounds": 6, "slice_s": 0.5, "warmup_s": 2.0},
    "full": {"num": 4_000_000, "rounds": 8, "slice_s": 1.0, "warmup_s": 4.0},
}


@dataclass
class Params(TurnsParams):
    """a, b: the sides (rxlab.bench.ab.parse_side's words). workload: a read (measured in turns of
    processes) or a write (runs one after another). num: keys (None: the scale's). rounds, slice_s:
    the slices of a read turn (None: the scale's). condition: quiet, or busy (a process spinning on a
    CPU beside every turn, rxlab.bench.neighbour: the parity matrix's busy neighbour). direct: O_DIRECT
    for both sides' reads, flush and compaction (off: reads come from the page cache, and a read row's
    value is operations per second, not device reads)."""

    a: str = "posix"
    b: str = "io_uring"
    workload: str = "readrandom"
    threads: int = 1
    num: int | None = None
    rounds: int | None = None
    slice_s: float | None = None
    db_dir: str | None = None
    condition: str = "quiet"
    direct: bool = True               # O_DIRECT reads, flush and compaction; off: the page cache serves reads
    placement: bool = False           # trace where the read buffers fall in their pages (O_DIRECT reads)
    min_turns: int = AB_MIN_TURNS     # its turns take seconds: the rule may stop later (resolution.py)

    def __post_init__(self):
        super().__post_init__()
        checks.choice("workload", self.workload, (*ab.READS, *ab.WRITES))
        checks.choice("condition", self.condition, CONDITIONS)
        if not checks.is_bool(self.direct):
            checks.fail("direct", self.direct, "expected on (O_DIRECT) or off (the page cache)")
        self.direct = bool(self.direct)
        if not checks.is_bool(self.placement):
            checks.fail("placement", self.placement, "expected true or false")
        self.placement = bool(self.placement)
        if self.placement and (self.workload not in ab.READS or not self.direct):
            checks.fail("placement", self.placement, "traces O_DIRECT read buffers: a read workload "
                        f"({', '.join(ab.READS)}) with O_DIRECT on")
        self.threads = checks.integer("threads", self.threads, 1, 64)
        checks.optional_integer("num", self.num, 1000, 10**9)
        checks.optional_integer("rounds", self.rounds, 1, 100)
        checks.optional_seconds("slice_s", self.slice_s, hi=60)
        for name in ("a", "b"):
            try:
                ab.parse_side(getattr(self, name), name.upper())
            except ValueError as e:
                checks.fail(name, getattr(self, name), str(e).split(": ", 1)[-1])
        if ab.parse_side(self.a).text == ab.parse_side(self.b).text:
            checks.fail("b", self.b, "the same as A: every turn already runs A twice (the A/A control)")
        self.db_dir = checks.db_dir(self.db_dir)

    def sizes(self) -> dict:
        s = dict(SIZES[self.scale])
        for k in ("num", "rounds", "slice_s"):
            if getattr(self, k) is not None:
                s[k] = getattr(self, k)
        return s


class AbResult(StudyResult):
    pass


def comparison_table(result: StudyResult) -> pd.DataFrame:
    """B's ratio to A (and A's A/A row) with the 95% interval over turns, resolved, turns, status."""
    return result_comparisons(result, COMPARE)


def cpu_column(frame: pd.DataFrame) -> str | None:
    """The frame's CPU column: per device read (reads) or per operation (writes), None if neither."""
    return next((c for c in CPU_COLUMNS if c in frame.columns and frame[c].notna().any()), None)


def cpu_table(result: StudyResult) -> pd.DataFrame:
    """B's CPU per read (reads) or per operation (writes) over A's, with its 95% interval over the same
    turns, and A's A/A row: reported beside the value's comparison (the stopping rule follows the value,
    so `resolved` here says only whether this interval reached the target too)."""
    col = cpu_column(result.frame)
    if col is None:
        return pd.DataFrame(columns=comparison_table(result).columns)
    return result_comparisons(result, replace(COMPARE, metric=col, label="CPU"))


def device_table(result: StudyResult) -> pd.DataFrame:
    """O_DIRECT reads: B's device time per read over A's (the block layer's await), with its 95%
    interval over the same turns, and A's A/A row; empty where the turns kept none (writes, the page
    cache, a DB on a file system without a block device). Beside the value: reads per second that
    differ at the same device time per read differ in what happens outside the block layer."""
    f = result.frame
    if "device_us_per_read" not in f.columns or not f["device_us_per_read"].notna().any():
        return pd.DataFrame(columns=comparison_table(result).columns)
    return result_comparisons(result, replace(COMPARE, metric="device_us_per_read", label="device"))


def _threads(result: StudyResult) -> int | None:
    """The client threads of each side: the study's params, or its runs' specs once loaded."""
    t = getattr(result.params, "threads", None)
    if t is None and "spec.threads" in result.frame.columns:
        known = result.frame["spec.threads"].dropna()
        t = known.iloc[0] if len(known) else None
    return int(t) if t is not None else None


def sides_table(result: StudyResult) -> pd.DataFrame:
    """Per side and copy: the median value per turn, its CPU per device read or per operation, and for
    O_DIRECT reads the device's time and bytes per read; at one thread also the rest of a read's time
    (its whole time, 1/value, less the block layer's). The block layer's time starts when the request
    is handed to the device's queue, so it holds the notification of the device too (on a VM an exit
    to the hypervisor, counted as the process's CPU): CPU per read can exceed the rest."""
    f = result.frame
    cols = [c for c in ("value", *CPU_COLUMNS, *DEVICE_COLUMNS) if c in f.columns]
    out = f.groupby(["config", "copy"], sort=False)[cols].median().reset_index()
    if "device_us_per_read" in out.columns and _threads(result) == 1:
        # one reader waits for each read: 1e6 / value is a read's whole time, the block layer's part known
        out["rest_us_per_read"] = 1e6 / out["value"] - out["device_us_per_read"]
    return out


def draw(t: pd.DataFrame):
    """B / A per workload with its 95% interval, A's A/A band beside."""
    return ratio_plot(t, "workload", ylabel=f"ratio to {t['base'].iloc[0]}")


class AbStudy(Study, name="ab", notebook="", run_prefix=RUN_PREFIX, params=Params, result=AbResult,
              tables={"comparison": comparison_table, "cpu": cpu_table, "device": device_table,
                      "sides": sides_table},
              figures={"ab": FigureSpec(comparison_table, draw)}, compare=COMPARE):
    """Two configurations compared in turns with an A/A control (`rxlab ab`)."""

    def plan(self, params: Params) -> pd.DataFrame:
        """One turn: A (the base) and B."""
        return pd.DataFrame({"config": [ab.parse_side(params.a).text, ab.parse_side(params.b).text],
                             "workload": params.workload})

    def setup(self, ctx: RunContext) -> None:
        p: Params = ctx.params
        sides = [ab.parse_side(p.a, "A"), ab.parse_side(p.b, "B")]
        ctx.state["sides"] = {s.text: s for s in sides}
        ctx.state["sizes"] = p.sizes()
        ctx.state["live"] = []
        if p.workload in ab.READS:
            work = ctx.path("ab-db")
            work.mkdir(parents=True, exist_ok=True)
            if ctx.progress:
                print(f"rxlab ab: loading {ctx.state['sizes']['num']:,} keys", file=sys.stderr, flush=True)
            ctx.state["dbs"] = ab.prepare(sides, work, ctx.state["sizes"]["num"], direct=p.direct)

    def describe(self, row) -> str:
        return f"{row.config}{' again' if row.copy else ''}"

    def run_turn(self, ctx: RunContext, rows: pd.DataFrame) -> list[Path]:
        """One turn: a session of readers (reads), or each side's write run in the turn's order."""
        p: Params = ctx.params
        s = ctx.state["sizes"]
        sides = ctx.state["sides"]
        a, b = (sides[ab.parse_side(x).text] for x in (p.a, p.b))
        turn = int(rows["turn"].iloc[0])
        with Spinner(busy_cpu() if p.condition == "busy" else None) as neighbour:
            if p.workload in ab.READS:
                got = ab.read_session(a, b, ctx.state["dbs"], num=s["num"], threads=p.threads,
                                      workload=p.workload, turn=turn, rounds=s["rounds"],
                                      slice_s=s["slice_s"], warmup_s=s["warmup_s"], direct=p.direct,
                                      placement=p.placement)
            elif p.workload in ab.TIMED:
                got = ab.timed_session(a, b, ctx.path(f"ab-t{turn}"), num=s["num"], threads=p.threads,
                                       workload=p.workload, turn=turn, rounds=s["rounds"],
                                       slice_s=s["slice_s"], warmup_s=s["warmup_s"], direct=p.direct)
            else:
                got = []
                for r in rows.itertuples(index=False):
                    side = sides[r.config]
                    w = ab.write_run(side, ctx.path(f"ab-w{turn}-{r.copy}"), num=s["num"], threads=p.threads,
                                     workload=p.workload, seed=1000 * (turn + 1) + 100 * r.copy,
                                     direct=p.direct)
                    got.append({"config": r.config, "copy": int(r.copy), **w})
        # the neighbour's CPU over the turn: the record that it ran (and took a CPU) beside these runs
        extra = {"neighbour_cpu_s": neighbour.cpu_s} if neighbour.cpu_s is not None else {}
        return [self._store(ctx, turn, {**g, **extra}, a.text) for g in got]

    def _store(self, ctx: RunContext, turn: int, row: dict, a: str) -> Path:
        p: Params = ctx.params
        who = "aa" if row["copy"] else "a" if row["config"] == a else "b"
        side = ctx.state["sides"][row["config"]]
        spec = {"name": ctx.run_name(f"t{turn}", who), "backend": side.backend, "options": side.options,
                "build": side.build, "workload": p.workload, "threads": p.threads,
                "num": ctx.state["sizes"]["num"], "scale": p.scale, "a": p.a, "b": p.b,
                "condition": p.condition, "direct": p.direct}
        rec = builds.active_build() / "build.json"
        fp = sysinfo.fingerprint(ctx.work, rocksdb_build=json.loads(rec.read_text()) if rec.is_file() else {})
        with store.RunWriter(ctx.root, spec, fp) as w:
            w.add_step({"name": p.workload, "turn": turn, "config": row["config"], "copy": int(row["copy"]),
                        "workload": p.workload,
                        **{k: v for k, v in row.items() if k not in ("config", "copy")}})
        return w.path

    def on_turn(self, ctx: RunContext, table: pd.DataFrame, decided: dict) -> None:
        """The comparison as it converges, a line per turn on stderr."""
        ctx.state["live"].append(table)
        if not ctx.progress:
            return
        parts = [format_comparison(r) for r in table.to_dict("records")]
        print(f"rxlab ab: turn {decided['turns']}, {decided.get('seconds', 0):.0f} s: " + " | ".join(parts),
              file=sys.stderr, flush=True)

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        cat, m = match_runs(cat, _NAME_RE)
        cols = ["study", "turn", "config", "copy", "workload", "value"]
        if cat.empty:
            return pd.DataFrame(columns=cols)
        out = cat.assign(study=m["study"])
        out["turn"] = pd.to_numeric(out["turn"]).astype(int)
        out["copy"] = pd.to_numeric(out["copy"]).astype(int)
        head = [c for c in cols if c in out.columns]
        out = out[head + [c for c in out.columns if c not in head]]
        return out.sort_values(["study", "turn"]).reset_index(drop=True)

    def findings(self, result: StudyResult) -> str:
        t = comparison_table(result)
        lines = [f"- {r['workload']}: {format_comparison(r)}" for r in t.to_dict("records")]
        cpu = cpu_table(result)
        col = cpu_column(result.frame)
        lines += [f"- {r['workload']}, {col}: {format_comparison(r)}" for r in cpu.to_dict("records")]
        dev = device_table(result)
        lines += [f"- {r['workload']}, device time per read: {format_comparison(r)}"
                  for r in dev.to_dict("records")]
        return "\n".join(lines)


AB = AbStudy()
