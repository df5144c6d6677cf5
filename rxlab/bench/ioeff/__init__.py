"""The first seed's IO-efficiency method, shared by every study that builds on it.

The seed (blog-2025-10-23) measures RocksDB's storage read IOPS against
fio's at the same concurrency. The io_efficiency study runs it; perf_model
fits the seed's model on its runs; cpu_breakdown profiles the same DB;
io_efficiency_tuning judges its configurations by the model's errors. What
they share lives here, so that no study imports another's modules:

names.py (the seed's tests, block size, the fio tools and their run kinds),
db.py (the DB's scale presets, settings and the seed's db_bench sequence),
result.py (a study's result and its frame's keys), baseline.py (fio's
baseline beside RocksDB's reads: the device's background reads),
matching.py (which stored study ran the same configurations) and
model_rows.py (the performance model's input rows and its errors per
configuration). A study that needs another's results asks the registry for
that study (rxlab.studies.get) and loads them through the Study protocol.
"""
