"""Benchmarks and checks that run RocksDB (or its own test suites) on rxlab's engines."""
