"""`rxlab ab A B`: two configurations compared in turns with an A/A control, until resolved or out of time."""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

from rxlab.bench.ab import PREPARED, READS, TIMED, WRITES, measure_words
from rxlab.core import store
from rxlab.core.paths import REPO
from rxlab.core.resolution import AA, AB_MIN_TURNS, DEFAULT_TARGET_PCT, format_comparison
from rxlab.core.study import SCALES
from rxlab.studies.ab import (
    AB,
    comparison_table,
    cpu_column,
    cpu_table,
    device_table,
    history,
    sides_table,
)

TITLE = "comparisons"

SIDES = ("a backend or URI (posix, default, rxlab://io_uring?registered_files=1), RocksDB options "
         "(opts:block_size=16384), a build (build:9.11.2-clang16) or a version (9.11.2: its gcc build)")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "ab", help="compare two configurations (backends, options, builds, versions) in turns with an A/A "
                   "control, until the ratio's 95% interval is within --target or --budget runs out",
        description="Compare two configurations on this machine. Reads run as processes in turns (all "
                    "reading one prepared DB, all but one stopped), as do the timed rows (each process on "
                    "a DB of its own), the other writes one after another; every turn "
                    "runs A twice (the A/A control) and B once. The ratio B/A and its 95% interval are "
                    "printed as they converge; the comparison is stored as a study with a figure.\n"
                    f"A and B: {SIDES}.")
    p.add_argument("a", metavar="A", help="the base side")
    p.add_argument("b", metavar="B", help="the side compared with it")
    p.add_argument("--workload", default="readrandom",
                   help=f"{', '.join(READS)} (reads: processes in turns) or {', '.join(WRITES)} (writes: "
                        f"runs one after another, each on a fresh DB; {', '.join(PREPARED)} bring it to "
                        f"their state first, unmeasured; the timed {' and '.join(TIMED)}: processes in "
                        "turns, each on a DB of its own)")
    p.add_argument("--threads", type=int, default=1, help="client threads of each side")
    p.add_argument("--condition", default="quiet",
                   help="quiet, or busy: a process spinning on one CPU beside every turn (the parity "
                        "matrix's busy neighbour)")
    p.add_argument("--direct", default="on",
                   help="O_DIRECT for both sides' reads, flush and compaction: on, or off (the page cache "
                        "holds the DB and serves the reads; a read row then counts operations per second, "
                        "not device reads)")
    p.add_argument("--placement", action="store_true",
                   help="reads with O_DIRECT: trace where each side's 8 KiB read buffers fall in their pages "
                        "(strace on each process during its turn's warm-up): one on a page start spans two "
                        "pages, one elsewhere three, and the device's time per read follows")
    p.add_argument("--target", type=float, default=DEFAULT_TARGET_PCT, metavar="PCT",
                   help="stop when the ratio's 95%% interval is within +-PCT percent")
    p.add_argument("--budget", default="10m", metavar="TIME", help="stop when another turn would overrun it "
                                                                   "(90s, 10m, 1.5h)")
    p.add_argument("--min-turns", type=int, default=AB_MIN_TURNS,
                   help=f"turns before the rule may stop (default: {AB_MIN_TURNS}; with fewer, a spread "
                        "narrow by chance stops it early)")
    p.add_argument("--num", type=int, help="keys in the DB (default: the scale's; small: 1,000,000)")
    p.add_argument("--scale", default="small", choices=SCALES,
                   help="smoke: a tiny DB and short slices (a check of the pipeline); small; full")
    p.add_argument("--db-dir", metavar="DIR",
                   help="where the DB is made (default: a scratch folder, removed)")
    p.add_argument("--runs", metavar="DIR", help="results store (default: $RXLAB_RUNS or data/runs)")
    p.add_argument("--out", metavar="DIR",
                   help="the figure, tables and findings (default: data/studies/ab/ID); with --history, "
                        "the history figure and its table (default: none)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (ratio, lo, hi, turns, seconds, resolved, ...) on stdout, "
                        "progress on stderr")
    p.add_argument("--quiet", action="store_true", help="no progress")
    p.add_argument("--history", action="store_true",
                   help="measure nothing: list the stored studies of this comparison on this host (same "
                        "sides, workload, threads, condition, O_DIRECT and sizes) and pool them, with the "
                        "spread between studies that one study's interval cannot see")
    p.add_argument("--since", metavar="ID|DATE",
                   help="pool only the studies from this study id or UTC date on (2026-12-07T17:00), e.g. "
                        "after a change to what is compared (default: all of them)")
    p.set_defaults(fn=_run)


def _num(v: float) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 5)


def _run(a) -> int:
    direct = {"on": True, "off": False}.get(a.direct, a.direct)   # anything else: Params says what is allowed
    params = AB.params(a=a.a, b=a.b, workload=a.workload, threads=a.threads, target=a.target, budget=a.budget,
                       min_turns=a.min_turns, num=a.num, scale=a.scale, db_dir=a.db_dir,
                       condition=a.condition, direct=direct, placement=a.placement)
    since = history.since_id(a.since)            # a bad --since is one line before anything is measured
    root = Path(a.runs) if a.runs else store.default_root()
    if a.history:
        return _history(a, params, root, since, direct)
    t0 = time.monotonic()
    try:
        result = AB.run(params, root, progress=not a.quiet)
    except KeyboardInterrupt:
        print(f"\nrxlab ab: interrupted; the turns stored so far stay in {root}", file=sys.stderr)
        return 130
    seconds = time.monotonic() - t0
    out = Path(a.out) if a.out else REPO / "data" / "studies" / "ab" / result.study
    AB.save_outputs(result, out)
    t = comparison_table(result)
    row = t[t["config"] != AA].iloc[0].to_dict()
    aa = t[t["config"] == AA]
    aa = aa.iloc[0].to_dict() if len(aa) else {}
    decided = result.turns or {}
    pooled = _pool(root, params, since)
    pool_line = history.describe_pooled(pooled[0], pooled[1], a.target)
    with open(out / "findings.md", "a") as f:      # the study's findings say what its repeats say
        f.write(f"- {pool_line}\n")
    if a.json:
        print(json.dumps({
            "a": a.a, "b": a.b, "workload": a.workload, "threads": a.threads, "condition": a.condition,
            "direct": direct, "metric": _metric(a.workload, direct),
            "ratio": _num(row["ratio"]), "lo": _num(row["lo"]), "hi": _num(row["hi"]),
            "half_width_pct": _num(row["half_width"]), "target_pct": a.target,
            "resolved": bool(row["resolved"]),
            "status": row["status"], "turns": int(row["turns"]), "seconds": round(seconds, 1),
            "turns_seconds": decided.get("seconds"), "budget_s": decided.get("budget_s"),
            "aa": {**{k: _num(aa.get(k)) for k in ("ratio", "lo", "hi", "half_width")},
                   "turns": int(aa.get("turns", 0))},
            "cpu": _cpu(result),
            "device": _device(result),
            "study": result.study, "outputs": str(out),
            "studies": _pooled_json(*pooled)}))
        return 0
    busy = ", beside a busy neighbour" if a.condition == "busy" else ""
    cached = "" if direct else ", O_DIRECT off"
    print(f"{a.workload}, {a.threads} thread(s){busy}{cached}, {_metric(a.workload, direct)}:")
    print(f"  {format_comparison(row)}")
    if aa:
        print(f"  {format_comparison(aa)}")
    c = cpu_table(result)
    for r in c.to_dict("records"):
        print(f"  {measure_words(a.workload, direct)[1]}: {format_comparison(r)}")
    dev_table = device_table(result)
    for r in dev_table.to_dict("records"):
        print(f"  device time per read: {format_comparison(r)}")
    for side, d in _device(result, dev_table).get("sides", {}).items():
        rest = f", the rest {d['rest_us_per_read']:.1f} us" if d.get("rest_us_per_read") is not None else ""
        start = d.get("page_start_share")
        start = f"; buffers on a page start in {start:.0%} of traced reads" if start is not None else ""
        print(f"    {side}: device {d['device_us_per_read']:.1f} us per read of {d['bytes_per_read']:,.0f} B"
              + rest + start)
    print(f"  {seconds:.0f} s in all; study ab {result.study}: figure, tables and findings in {out}")
    more = "" if pooled[1]["k"] < 2 else f" (`rxlab ab {a.a} {a.b} ... --history` lists them)"
    print(f"  {pool_line}{more}")
    return 0


def _pool(root: Path, params, since: str | None) -> tuple:
    """The stored studies of this comparison (this one included) and their pooled ratio."""
    table = history.history_table(root, history.earlier_studies(root, params.as_dict(), since=since))
    return table, history.pooled(table)


def _pooled_json(table, p) -> dict:
    return {"k": int(p["k"]), **{k: _num(p[k]) for k in ("ratio", "lo", "hi")},
            "half_width_pct": _num(p["half_width"]), "between_pct": _num(p["between_pct"]),
            "q": _num(p["q"]), "p": _num(p["p"]), "ids": list(table["study"])}


def _history(a, params, root: Path, since: str | None, direct: bool) -> int:
    """`--history`: the stored studies of this comparison, pooled; nothing measured."""
    table, p = _pool(root, params, since)
    what = (f"{a.b} / {a.a}, {a.workload}, {a.threads} thread(s), {a.condition}, O_DIRECT "
            f"{'on' if direct else 'off'}, scale {a.scale}")
    if table.empty:
        print(f"rxlab ab: no complete study of {what} in {root} on this host"
              + (f" since {a.since}" if a.since else "") + "; run it without --history", file=sys.stderr)
        return 1
    if a.out:
        _save_history(table, p, Path(a.out), a)
    if a.json:
        print(json.dumps({"a": a.a, "b": a.b, "workload": a.workload, "threads": a.threads,
                          "condition": a.condition, "direct": direct, "scale": a.scale,
                          "studies": [{k: (_num(v) if isinstance(v, float) else v) for k, v in r.items()}
                                      for r in table.to_dict("records")],
                          "pooled": _pooled_json(table, p)}))
        return 0
    print(f"{what}:")
    for r in table.to_dict("records"):
        print(f"  {r['study']} ({r['commit'] or 'commit unknown'}): {r['ratio']:.3f} "
              f"[{r['lo']:.3f}..{r['hi']:.3f}] +-{r['half_width']:.1f}%, {r['turns']} turns, "
              f"A/A {r['aa_ratio']:.3f} +-{r['aa_half_width']:.1f}%")
    print(f"  {history.describe_pooled(table, p, a.target)}")
    if a.out:
        print(f"  figure and table in {a.out}")
    return 0


def _save_history(table, p, out: Path, a) -> None:
    import matplotlib.pyplot as plt  # noqa: PLC0415 - pyplot only when drawing

    from rxlab.core import figures  # noqa: PLC0415 - matplotlib only when drawing

    out.mkdir(parents=True, exist_ok=True)
    t = history.forest_table(table, p, a.a, a.b, a.target)
    table.to_csv(out / "history_studies.csv", index=False)
    fig = history.draw(t)
    figures.save(fig, "history", table=t, study="ab", directory=out,
                 notes=f"{len(table)} studies of {a.b} / {a.a} ({a.workload}) pooled with a random effect")
    plt.close(fig)


def _cpu(result) -> dict:
    """B's CPU per read or per operation over A's, with its interval, and A's A/A (JSON)."""
    t = cpu_table(result)
    out = {}
    for r in t.to_dict("records"):
        key = "aa" if r["config"] == AA else "ratio"
        out[key] = {k: _num(r.get(k)) for k in ("ratio", "lo", "hi", "half_width")}
    return {"metric": cpu_column(result.frame), **out} if out else {}


def _device(result, t=None) -> dict:
    """O_DIRECT reads: B's device time per read over A's with its interval (`t`: device_table's, when
    already made), A's A/A, and each side's median device time and bytes per read (JSON; empty for
    writes and the page cache)."""
    t = device_table(result) if t is None else t
    if t.empty:
        return {}
    out = {("aa" if r["config"] == AA else "ratio"): {k: _num(r.get(k)) for k in ("ratio", "lo", "hi",
                                                                                   "half_width")}
           for r in t.to_dict("records")}
    sides = sides_table(result)
    first = sides[sides["copy"] == 0]
    keys = ("device_us_per_read", "bytes_per_read", "rest_us_per_read", "page_start_share")
    out["sides"] = {r["config"]: {k: _num(r.get(k)) for k in keys if k in r}
                    for r in first.to_dict("records")}
    return {"metric": "device_us_per_read", **out}


def _metric(workload: str, direct: bool = True) -> str:
    return f"{measure_words(workload, direct)[0]} (B/A)"
