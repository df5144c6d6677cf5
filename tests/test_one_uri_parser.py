"""One URI parser and formatter (rxlab.core.engines): no module takes a backend string apart by hand.

A backend string (`[rxlab://]ENGINE[?option=value&...]`, or RocksDB's `default[?io_uring=0|1]`) is
parsed, formatted and checked in rxlab/core/engines.py, which asks the C++ registry what exists;
elsewhere, code that strips the scheme, splits at "?" or glues options on with "&" would drift
from it (and a new engine or option would need every copy edited).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
THE_PARSER = REPO / "rxlab" / "core" / "engines.py"

# What taking a backend apart (or putting one together) by hand looks like.
HAND_PARSING = {
    "strips the scheme": re.compile(r"""removeprefix\(\s*["']rxlab://["']\s*\)"""),
    "glues the scheme on": re.compile(r"""["']rxlab://["']\s*\+|f["']rxlab://\{"""),
    "splits at '?'": re.compile(r"""\.(?:split|partition|rpartition)\(\s*["']\?["']"""),
    "glues options on with '&' or '?'": re.compile(r"""["']&["']\s+if\s+["']\?["']\s+in\b"""),
    "reads an option with a regex": re.compile(r"""extract\(\s*r?["'](?:delay_us|jitter_us|counters\w*)="""),
}


def _sources():
    return sorted(p for p in (REPO / "rxlab").rglob("*.py") if p != THE_PARSER)


@pytest.mark.parametrize("what", HAND_PARSING)
def test_no_backend_string_is_taken_apart_by_hand(what):
    pat = HAND_PARSING[what]
    bad = [f"{p.relative_to(REPO)}:{i}: {line.strip()}"
           for p in _sources() for i, line in enumerate(p.read_text().splitlines(), 1) if pat.search(line)]
    assert not bad, (f"{what}: use rxlab.core.engines (parse, format_uri, with_options, label, fs_uri):\n"
                     + "\n".join(bad))


def test_the_patterns_catch_what_they_are_for():
    """Each pattern matches the hand parsing it names (else the test above could pass on anything)."""
    samples = {
        "strips the scheme": 'base = uri.removeprefix("rxlab://")',
        "glues the scheme on": 'env["TEST_FS_URI"] = "rxlab://" + config',
        "splits at '?'": 'engine = backend.split("?")[0]',
        "glues options on with '&' or '?'": """f"{b}{'&' if '?' in b else '?'}delay_us=5\"""",
        "reads an option with a regex": 'uri.str.extract(r"delay_us=(\\d+)")',
    }
    for what, line in samples.items():
        assert HAND_PARSING[what].search(line), what


def test_parse_format_and_options_round_trip():
    from rxlab.core import engines  # noqa: PLC0415 - beside the source scan above, which needs no import

    b = engines.parse("rxlab://io_uring?sqpoll=1&fixed_buffers=1&")
    assert b == ("io_uring", {"sqpoll": "1", "fixed_buffers": "1"})
    assert str(b) == "io_uring?sqpoll=1&fixed_buffers=1"
    assert engines.format_uri("posix", {"delay_us": 100}, counters=False, jitter_us=None) == \
        "posix?delay_us=100&counters=0"
    assert engines.with_options("rxlab://posix?delay_us=5", delay_us=None, counters=1) == "rxlab://posix?counters=1"
    assert engines.with_options("default", io_uring=1) == "default?io_uring=1"
    assert engines.label("rxlab://posix?") == "posix" and engines.fs_uri("posix") == "rxlab://posix"
    assert engines.fs_uri("default?io_uring=1") is None and engines.is_default("default?io_uring=1")
    for bad in ("", "?x=1", "posix?x", "a/b"):
        with pytest.raises(ValueError, match="backend"):
            engines.parse(bad)


def test_the_engine_comparisons_take_their_engines_from_the_registry():
    """A new engine in the C++ registry joins every comparison of engines without an edit."""
    import dataclasses  # noqa: PLC0415 - as above

    from rxlab.bench.conformance import engine_names  # noqa: PLC0415
    from rxlab.bench.quick_compare import backends as compare_backends  # noqa: PLC0415
    from rxlab.bench.selfcheck.parity import columns  # noqa: PLC0415
    from rxlab.core import engines  # noqa: PLC0415
    from rxlab.studies.async_io.params import default_backends  # noqa: PLC0415
    from rxlab.studies.backends.params import Params as BackendsParams  # noqa: PLC0415
    from rxlab.studies.tracing_overhead.params import Params as TracingParams  # noqa: PLC0415

    every = engines.backends()
    assert every[0] == "default" and every[1:] == engines.names() and "sync" not in every
    assert default_backends()[:len(engines.names())] == engines.names()
    for params in (BackendsParams, TracingParams):
        field = next(f for f in dataclasses.fields(params) if f.name == "backends")
        assert field.default_factory() == every, params
    assert engine_names() == engines.names()
    assert [b for b in compare_backends() if "?" not in b] == every
    assert [c for c in columns() if "+" not in c] == every
