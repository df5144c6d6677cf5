"""rxlab.studies.cpu_breakdown: the rule tables, perf script parsing and folding, perf sampling, the study.

The parsing tests use an excerpt of real `perf script -F comm,tid,period,ip,sym,dso`
output recorded on this machine during readrandom (a Python thread, a checksum
sample and a kernel read-path sample). The sampling tests run perf on this
process while RocksDB reads a small DB; the study tests run the whole smoke
sequence through the Study protocol into a tmp store, once to the end and
once failing in its first profiled step.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_studies import refusal, registered_outputs, saved_figures

from rxlab.bench import driver, perf
from rxlab.core import published, store
from rxlab.core.study import manifest
from rxlab.studies.cpu_breakdown import STUDY, findings, recording, rules, tables

pytestmark = pytest.mark.timeout(300)

ROCKS = "/root/.cache/rxlab/rocksdb/9.10.0-gcc12/lib/librocksdb.so.9.10.0"
CORE = "/work/main/.venv/lib/python3.11/site-packages/rxlab/_core.cpython-311-x86_64-linux-gnu.so"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
PY = "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"

SCRIPT = f"""python 19969    1001001
\tffffffff821fae4e __schedule ([kernel.kallsyms])
\tffffffff813cf15a __x64_sys_sched_yield ([kernel.kallsyms])
\t           ee017 __sched_yield ({LIBC})
\t           4c227 rxlab::RunStep ({CORE})
\t          1a7331 cfunction_vectorcall_FASTCALL_KEYWORDS ({PY})
\t            1080 _start (/root/.pyenv/versions/3.11.7/bin/python3.11)

python 20122    1001001
\t          878871 rocksdb::ComputeBuiltinChecksum ({ROCKS})
\t          863a99 rocksdb::VerifyBlockChecksum ({ROCKS})
\t          867e9c rocksdb::BlockFetcher::ReadBlock ({ROCKS})
\t          82047f rocksdb::BlockBasedTable::Get ({ROCKS})
\t          4d0c00 rocksdb::DBImpl::Get ({ROCKS})
\t           4619b [unknown] ({CORE})
\t           891f4 start_thread ({LIBC})
\t          1098eb clone3 ({LIBC})

python 20122    1001001
\tffffffff81b9764c iowrite16 ([kernel.kallsyms])
\tffffffff816bbc23 __x64_sys_pread64 ([kernel.kallsyms])
\t           f6417 __libc_pread ({LIBC})
\t          7487c5 rocksdb::RandomAccessFileReader::Read ({ROCKS})
\t          82047f rocksdb::BlockBasedTable::Get ({ROCKS})
\t          4d0c00 rocksdb::DBImpl::Get ({ROCKS})
\t           891f4 start_thread ({LIBC})
\t          1098eb clone3 ({LIBC})
"""


def stack(*frames_root_first: str, root: str = perf.READER_ROOT) -> str:
    return ";".join((root, *frames_root_first))


# ------------------------------------------------------------------ rules

GET = ("clone3_[libc]", "start_thread_[libc]", "rocksdb::DBImpl::Get", "rocksdb::Version::Get",
       "rocksdb::TableCache::Get", "rocksdb::BlockBasedTable::Get")


@pytest.mark.parametrize(("leaf_path", "category"), [
    (("rocksdb::BlockBasedTable::NewDataBlockIterator<rocksdb::DataBlockIter>",
      "rocksdb::BlockFetcher::ReadBlock",
      "rocksdb::VerifyBlockChecksum", "XXH3_hashLong_64b_default.constprop.0"), "checksm"),
    (("rocksdb::IndexBlockIter::SeekImpl",
      "rocksdb::BlockIter<rocksdb::IndexValue>::BinarySeek<rocksdb::DecodeKeyV4>"),
     "IBI:Sk"),
    (("rocksdb::DataBlockIter::SeekImpl",
      "rocksdb::BlockIter<rocksdb::Slice>::ParseNextKey<rocksdb::DecodeEntry>"),
     "DBI:Sk"),
    (("rocksdb::BlockBasedTable::PutDataBlockToCache<rocksdb::Block_kData>",
      "rocksdb::ShardedCache<rocksdb::lru_cache::LRUCacheShard>::Insert",
      "rocksdb::lru_cache::LRUCacheShard::InsertItem"), "LRU"),
    (("rocksdb::BlockBasedTable::FullFilterKeyMayMatch", "rocksdb::FullFilterBlockReader::MayMatch",
      "rocksdb::(anonymous namespace)::FastLocalBloomBitsReader::MayMatch"), "bloom"),
    (("rocksdb::BinarySearchIndexReader::NewIterator",), "BSI"),
    (("rocksdb::BlockBasedTable::TimestampMayMatch",), "other"),
    (("std::__lower_bound<rocksdb::FdWithKeyRange*, rocksdb::Slice>",), "File"),
    (("rocksdb::BlockFetcher::ReadBlock", "rocksdb::RandomAccessFileReader::Read", "__libc_pread_[libc]",
      "vfs_read_[k]", "iowrite16_[k]"), "libc+k"),
    (("rocksdb::BlockBasedTable::PutDataBlockToCache<rocksdb::Block_kData>", "malloc_[libc]"), "libc+k"),
    (("rocksdb::BlockBasedTable::MaybeReadBlockAndLoadToCache<rocksdb::Block_kData>",), "other"),
    (("[_core.cpython-311-x86_64-linux-gnu.so]",), "other"),
])
def test_each_category_has_a_stack_that_lands_in_it(leaf_path, category):
    frames_leaf_first = list(reversed((*GET, *leaf_path)))
    assert rules.categorize(frames_leaf_first) == category


def test_the_innermost_matching_frame_wins():
    # a block-cache lookup made while reading the filter is LRU; the filter's own code is bloom
    filt = (*GET, "rocksdb::FullFilterBlockReader::MayMatch", "rocksdb::BlockBasedTable::RetrieveBlock<x>")
    assert rules.categorize(reversed((*filt, "rocksdb::lru_cache::LRUCacheShard::Lookup"))) == "LRU"
    assert rules.categorize(reversed(filt)) == "bloom"
    # the leaf in libc beats every rule
    lookup = "rocksdb::lru_cache::LRUCacheShard::Lookup"
    assert rules.categorize(reversed((*filt, lookup, "memcmp_[libc]"))) == "libc+k"


READ = (*GET, "rocksdb::BlockFetcher::ReadBlock", "rocksdb::RandomAccessFileReader::Read",
        "__libc_pread_[libc]", "entry_SYSCALL_64_after_hwframe_[k]", "do_syscall_64_[k]",
        "__x64_sys_pread64_[k]", "vfs_read_[k]", "ext4_file_read_iter_[k]", "iomap_dio_rw_[k]",
        "__iomap_dio_rw_[k]")
SUBMIT = (*READ, "iomap_dio_bio_iter_[k]", "submit_bio_noacct_nocheck_[k]", "blk_mq_submit_bio_[k]",
          "blk_mq_dispatch_rq_list_[k]", "virtio_queue_rq_[k]")


@pytest.mark.parametrize(("leaf_path", "part"), [
    ((*SUBMIT, "virtqueue_notify_[k]", "vp_notify_[k]", "iowrite16_[k]"), "doorbell"),
    ((*READ, "schedule_[k]", "__schedule_[k]", "finish_task_switch.isra.0_[k]"), "switch"),
    ((*SUBMIT, "common_interrupt_[k]", "vring_interrupt_[k]", "virtblk_done_[k]",
      "blk_mq_end_request_[k]"), "irq"),
    ((*READ, "iomap_dio_bio_iter_[k]", "bio_iov_iter_get_pages_[k]", "gup_fast_fallback_[k]"), "gup"),
    ((*SUBMIT, "virtqueue_add_split_[k]"), "block"),
    ((*READ, "kmem_cache_alloc_noprof_[k]"), "fs"),
    ((*GET[:4], "syscall_exit_to_user_mode_[k]"), "syscall"),
    ((*GET, "io_uring_submit_[libc]", "__x64_sys_io_uring_enter_[k]", "io_submit_sqes_[k]",
      "io_issue_sqe_[k]", "io_read_[k]", "kmalloc_[k]"), "async"),
    ((*GET, "io_uring_submit_[libc]", "__x64_sys_io_uring_enter_[k]", "io_submit_sqes_[k]",
      "io_issue_sqe_[k]", "io_read_[k]", "ext4_file_read_iter_[k]"), "fs"),
    ((*GET, "asm_exc_page_fault_[k]", "exc_page_fault_[k]", "clear_page_erms_[k]"), "faults"),
    ((*GET, "rocksdb::BlockBasedTable::PutDataBlockToCache<rocksdb::Block_kData>", "malloc_[libc]"), "libc"),
    ((*GET, "apic_timer_something_[k]"), "kernel other"),
    ((*GET, "rocksdb::IndexBlockIter::SeekImpl"), None),
])
def test_each_kernel_part_has_a_stack_that_lands_in_it(leaf_path, part):
    assert rules.categorize_kernel(reversed(leaf_path)) == part


def test_kernel_parts_split_exactly_the_libc_k_samples():
    # the doorbell write is the doorbell's even deep in the block layer, an interrupt is the
    # interrupt's even in the doorbell's stack: precedence is by part, over every kernel frame
    doorbell = (*SUBMIT, "vp_notify_[k]", "iowrite16_[k]")
    assert rules.categorize_kernel(reversed(doorbell)) == "doorbell"
    in_irq = (*doorbell, "asm_common_interrupt_[k]", "handle_softirqs_[k]")
    assert rules.categorize_kernel(reversed(in_irq)) == "irq"
    # a RocksDB symbol whose name looks like a kernel rule is never matched: kernel frames only
    assert rules.categorize_kernel(reversed((*GET, "rocksdb::fs_bio_blk_", "memcpy_[libc]"))) == "libc"
    folded = {stack(*doorbell): 7, stack(*READ, "__schedule_[k]"): 5, stack(*GET, "malloc_[libc]"): 2,
              stack(*GET, "rocksdb::IndexBlockIter::SeekImpl"): 11,
              stack("python3", "iowrite16_[k]", root="py"): 3}
    k = rules.kernel_breakdown(folded)
    assert list(k.index) == list(rules.KERNEL_CATEGORIES)
    assert (k["doorbell"], k["switch"], k["libc"], k.sum()) == (7, 5, 2, 14)
    assert k.sum() == rules.breakdown(folded)["libc+k"]
    t = rules.kernel_rule_table()
    assert list(t["part"]) == list(rules.KERNEL_CATEGORIES) and t["covers"].str.len().gt(20).all()


def test_rule_table_lists_every_category_once_in_the_seeds_order():
    t = rules.rule_table()
    assert list(t["category"]) == list(rules.CATEGORIES)
    pub = published.load("gccclang_flamegraph")
    assert set(pub["category"]) == set(rules.CATEGORIES)


# ------------------------------------------------------------------ parsing and folding

def test_parse_script_reads_samples_and_tags_frames():
    s = perf.parse_script(SCRIPT)
    assert [(x.comm, x.tid, x.period) for x in s] == [("python", 19969, 1001001), ("python", 20122, 1001001),
                                                      ("python", 20122, 1001001)]
    assert s[0].frames[0] == "__schedule_[k]" and s[0].frames[2] == "__sched_yield_[libc]"
    assert s[1].frames[0] == "rocksdb::ComputeBuiltinChecksum"
    assert "[_core.cpython-311-x86_64-linux-gnu.so]" in s[1].frames
    assert s[1].frames[-1] == "clone3_[libc]"


def test_fold_separates_the_reading_threads_and_counts_samples(tmp_path):
    samples = perf.parse_script(SCRIPT)
    assert perf.reader_threads(samples) == {20122}
    folded = perf.fold(samples + samples[1:2])
    assert sum(folded.values()) == 4
    roots = {k.split(";")[0]: v for k, v in folded.items()}
    assert roots["python"] == 1
    chk = next(k for k in folded if k.endswith("rocksdb::ComputeBuiltinChecksum"))
    assert folded[chk] == 2 and chk.startswith("reader;clone3_[libc];start_thread_[libc];")
    b = rules.breakdown(folded)
    assert (b["checksm"], b["libc+k"], b["outside"], b["other"]) == (2, 1, 1, 0)
    p = perf.write_folded(folded, tmp_path / "x.folded")
    assert perf.read_folded(p) == folded
    st = rules.stack_stats(folded)
    assert st["reader_samples"] == 3 and st["whole_stack_pct"] == 100.0


def test_params_refuse_bad_values_in_one_line():
    cases = [({"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
             ({"call_graph": "lbr"}, "call_graph='lbr': allowed are dwarf, fp"),
             ({"threads": 0}, "threads=0: expected an integer 1..64"),
             ({"frequency": 5}, "frequency=5: expected samples per second"),
             ({"repeats": 0}, "repeats=0: expected None"),
             ({"backend": "nosuch"}, "backend='nosuch'"),
             ({"duration": -1}, "duration=-1"),
             ({"colour": 1}, "unknown parameter 'colour'")]
    for kw, msg in cases:
        assert msg in refusal(STUDY, **kw), kw


# ------------------------------------------------------------------ perf on this machine

def test_perf_support_reports_what_works():
    s = perf.perf_support()
    assert s.path and s.cpu_clock, s
    assert isinstance(s.hardware, bool) and (s.hardware or s.hardware_detail)
    assert len(perf.perf_support().table()) == 6


def test_symbol_report_of_the_rocksdb_library():
    r = perf.symbol_report()["here"]
    assert r["full symbol table (.symtab)"] == "yes"
    assert float(r["functions with a frame pointer prologue"].rstrip("%")) > 10  # -fno-omit-frame-pointer


@pytest.fixture(scope="module")
def small_db(tmp_path_factory):
    d = tmp_path_factory.mktemp("cpu") / "db"
    spec = driver.RunSpec(db=str(d), num=20_000, cache_size=256 << 10, write_buffer_size=1 << 20,
                          target_file_size_base=1 << 20, max_bytes_for_level_base=4 << 20, duration=0.6,
                          steps=[])
    s = driver.Session(spec)
    for st in ("fillseq", "flush", "compact"):
        s.run_step({"name": st})
    yield s
    s.close()


def test_dwarf_profile_of_readrandom_has_whole_stacks(small_db, tmp_path):
    with perf.Profiler(os.getpid(), tmp_path, call_graph="dwarf") as prof:
        row = small_db.run_step({"name": "readrandom"})
    folded = perf.folded_stacks(prof.data)
    st = rules.stack_stats(folded)
    assert row["ops"] > 0 and st["reader_samples"] > 20, st
    assert st["whole_stack_pct"] > 90, st
    assert rules.inclusive(folded, r"^rocksdb::DBImpl::Get$") > 0.5 * st["reader_samples"]
    b = rules.breakdown(folded)
    assert b[list(rules.CATEGORIES)].sum() == st["reader_samples"] and b["libc+k"] > 0
    # perf ended: nothing left attached to this process
    assert prof._proc.poll() is not None


def test_frame_pointer_stacks_are_cut_at_libc(small_db, tmp_path):
    with perf.Profiler(os.getpid(), tmp_path, call_graph="fp") as prof:
        small_db.run_step({"name": "readrandom"})
    folded = perf.folded_stacks(prof.data)
    reads = {k: v for k, v in folded.items() if k.startswith("reader;") and "__x64_sys_pread64_[k]" in k}
    assert reads, "no pread samples"
    # the kernel's read path never has RocksDB above it: libc has no frame pointers
    assert not any("rocksdb::RandomAccessFileReader::Read" in k for k in reads)


def test_sampling_covers_only_the_block(tmp_path):
    busy = "import time\nt=time.time()\nwhile time.time()-t<3: pass\n"
    p = subprocess.Popen(["python3", "-c", busy])
    try:
        prof = perf.Profiler(p.pid, tmp_path, frequency=499, call_graph="fp").start()
        time.sleep(0.5)
        prof.stop()
        n = sum(perf.folded_stacks(prof.data).values())
    finally:
        p.kill()
        p.wait()
    # at most 0.5 s of one busy thread at 499 Hz (about 250), not the 3 s it ran (about 1500)
    assert 0 < n <= 0.5 * 499 * 1.3, n


def test_a_failing_block_stops_perf(small_db, tmp_path):
    prof = perf.Profiler(os.getpid(), tmp_path)
    with pytest.raises(RuntimeError, match="inside"), prof:
        raise RuntimeError("inside")
    assert prof._proc.poll() is not None


# ------------------------------------------------------------------ the study

def test_the_plan_is_the_steps_of_one_run():
    p = STUDY.params(scale="smoke", repeats=2)
    plan = STUDY.plan(p)
    assert list(plan["step_index"]) == list(range(len(plan)))
    reads = plan[plan["mode"].isin(["profile", "timers"])]
    assert list(reads["step"]) == [t for t in tables.TESTS for _ in range(4)]
    assert list(reads["mode"]) == ["profile", "timers"] * 6 and list(reads["rep"]) == [0, 0, 1, 1] * 3
    assert plan["step"].iloc[0] == "fillseq" and "reopen" in set(plan["step"])   # readrandom3: no bloom
    assert STUDY.describe(next(reads.itertuples(index=False))) == "readrandom profile r0"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    db_dir = tmp_path_factory.mktemp("cpu-db")
    p = STUDY.params(scale="smoke", duration=0.5, db_dir=str(db_dir))
    return p, STUDY.run(p, root=tmp_path_factory.mktemp("cpu-runs"), progress=False)


def test_smoke_study_stores_profiles_timers_and_the_seeds_table(study):
    p, r = study
    assert len(r.runs) == 1 and store.is_complete(r.run) and r.run.parent == r.root
    assert sorted(r.folded) == [(t, 0) for t in sorted(tables.TESTS)]
    assert len(list((r.run / "attachments").glob("*.folded"))) == 3
    assert not list(Path(p.db_dir).iterdir()), "the DB was left behind"
    assert r.builds and r.scale == "smoke" and r.backend == "default" and r.call_graph == "dwarf"
    t = STUDY.table("breakdown", r)
    summary = STUDY.table("samples", r)
    assert list(t.index) == list(rules.CATEGORIES)
    for test in tables.TESTS:
        assert t[f"{test} here"].sum() == pytest.approx(100.0), (test, summary.to_dict("records"))
    pub = published.load("gccclang_flamegraph")
    seed = pub[(pub["category"] == "bloom") & (pub["test"] == "readrandom")]["pct"]
    assert t.loc["bloom", "readrandom seed"] == float(seed.iloc[0])
    # readrandom3 reopened without bloom filters: no filter is ever read (FullFilterKeyMayMatch
    # still runs to find that there is none)
    rr3 = r.pooled_folded("readrandom3")
    assert not [k for k in rr3 if "FullFilterBlockReader" in k or "FastLocalBloom" in k]
    assert [k for k in r.pooled_folded("readrandom") if "rocksdb::BlockBasedTable::Get" in k]
    timed = r.frame[r.frame["cpu.mode"] == "timers"]
    assert len(timed) == 3 and (timed["pc.get_cpu_nanos"] > 0).all(), timed["pc.get_cpu_nanos"]
    cross = STUDY.table("crosscheck", r)
    get = cross[cross["quantity"] == "DBImpl::Get"]
    assert (get["sampled_us"] > 0).all() and (get["perfcontext_us"] > 0).all(), get.to_dict("records")
    assert np.isfinite(cross.loc[cross["quantity"] == "process CPU", "rusage_us"]).all()
    m = manifest(r.root, r.study)
    assert m["status"] == "complete" and m["study"] == "cpu_breakdown" and len(m["runs"]) == 1
    again = STUDY.load(r.root)
    assert again.run == r.run and STUDY.table("breakdown", again).equals(t)
    text = STUDY.findings(r)
    assert "readrandom:" in text and "largest libc+k leaves" in text and "device reads per query" in text
    # libc+k split into its parts: they add up to the libc+k of the per-query table, and the
    # reads went through the kernel's read path (pread: syscall, ext4/iomap, block layer)
    kpq = STUDY.table("kernel_per_query", r)
    pq = STUDY.table("per_query", r)
    assert list(kpq.index) == list(pq.index)
    assert np.allclose(kpq["libc+k"], pq["libc+k"]), (kpq["libc+k"], pq["libc+k"])
    assert np.allclose(kpq[list(rules.KERNEL_CATEGORIES)].sum(axis=1), kpq["libc+k"])
    assert (kpq[["fs", "block"]].sum(axis=1) > 0).all(), kpq.to_dict("records")
    assert (kpq["reads per query"] > 0.5).all(), kpq["reads per query"]
    assert "libc+k" in findings.kernel_findings(kpq)
    leaves = STUDY.table("top_leaves", r)
    assert set(leaves["category"]) == {"libc+k", "other"} and (leaves["samples"] > 0).all()


def test_each_figure_is_redrawn_from_its_saved_table_alone(study, tmp_path):
    _, r = study
    assert list(STUDY.figures) == ["cpu_breakdown", "cpu_per_query", "cpu_crosscheck",
                                   "cpu_kernel_per_query"]
    for s in saved_figures(STUDY, r, tmp_path):
        assert any("gccclang_flamegraph" in x for x in s.side["published_sources"])
        assert s.again.axes and all(ax.has_data() for ax in s.again.axes if ax.get_title() or ax.get_xlabel())
    b = pd.read_csv(tmp_path / "cpu_breakdown.csv")
    assert set(b["kind"]) == {"here", "seed", "rep"} and set(b["backend"]) == {"default"}
    here = b[b["kind"] == "here"].groupby("test")["pct"].sum()
    assert np.allclose(here, 100.0)
    k = pd.read_csv(tmp_path / "cpu_kernel_per_query.csv")
    med = k[k["kind"] == "median"].groupby("test")["us_per_query"].sum()
    assert np.allclose(med.reindex(tables.TESTS), STUDY.table("kernel_per_query", r)["libc+k"])


def test_the_study_is_registered_and_its_outputs_are_written(study, tmp_path):
    _, r = study
    out = registered_outputs(STUDY, r, tmp_path)
    assert {"cpu_breakdown_breakdown.tex", "cpu_breakdown_rules.md",
            "cpu_breakdown_crosscheck.csv"} <= out.tables
    assert "readrandom seed" in (tmp_path / "tables" / "cpu_breakdown_breakdown.tex").read_text()


def test_a_failing_step_stores_the_run_as_failed_and_the_study_is_never_loaded(tmp_path, monkeypatch):
    """perf fails in the first profiled step: the run is stored as failed (not left running), the DB is
    closed and removed, the manifest says failed, and `load` finds nothing."""
    def broken(self, index, step, extra):
        raise RuntimeError("perf broke")

    monkeypatch.setattr(recording.ProfiledRun, "_profiled", broken)
    p = STUDY.params(scale="smoke", duration=0.5, db_dir=str(tmp_path / "db"))
    with pytest.raises(RuntimeError, match="perf broke"):
        STUDY.run(p, root=tmp_path / "runs", progress=False)
    runs = store.list_runs(tmp_path / "runs", include_incomplete=True)
    assert len(runs) == 1 and set(runs["status"]) == {"failed"}, runs.to_dict("records")
    ids = [m.stem for m in (tmp_path / "runs" / ".studies").glob("*.json")]
    assert len(ids) == 1 and manifest(tmp_path / "runs", ids[0])["status"] == "failed"
    assert not list((tmp_path / "db").iterdir())
    assert STUDY.load(tmp_path / "runs") is None


def test_study_frame_ignores_other_runs(tmp_path):
    spec = {"name": "cpu-20260101T000000abcd", "study": "other"}   # another study's run of this name
    with store.RunWriter(tmp_path, spec, {"hostname": "h"}) as w:
        w.add_step({"name": "readrandom", "ops": 1, "wall_s": 1.0})
    assert STUDY.frame(store.catalog(tmp_path)).empty
    assert STUDY.load(tmp_path) is None
