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
