"""Tables a paper can \\input: caption and label, integers as integers, no index, headers in words."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core import headers, tables


def _tex(df, **kw):
    return tables.to_latex(df, caption="A caption", label="tab:x", **kw)


def test_a_table_has_its_caption_label_and_booktabs_rules():
    t = _tex(pd.DataFrame({"backend": ["posix"], "qps": [10_295.4]}))
    assert "\\caption{A caption}\\label{tab:x}" in t
    assert t.index("\\toprule") < t.index("\\midrule") < t.index("\\bottomrule")
    assert "\\begin{table}" in t and "longtable" not in t


def test_integers_print_as_integers_even_in_a_float_column():
    df = pd.DataFrame({"threads": [1.0, 6.0, np.nan], "qps": [1.5, 2.25, 3.0], "n": [3, 4, 5]})
    rows = [ln for ln in _tex(df).splitlines() if ln.endswith("\\\\") and "caption" not in ln][1:]
    assert rows[0] == "1 & 1.50 & 3 \\\\"
    assert rows[2] == " & 3.00 & 5 \\\\"
    assert "| 6 | 2.25 | 4 |" in tables.to_markdown(df)


def test_no_index_column_unless_the_index_is_named():
    df = pd.DataFrame({"qps": [1.0, 2.0, 3.0]}, index=[4, 7, 9])
    assert "index" not in _tex(df)
    named = df.rename_axis("threads")
    assert "Threads & QPS" in _tex(named)
    back = pd.DataFrame({"index": [0, 2, 5], "qps": [1, 2, 3]})  # a CSV written with its index, read back
    assert list(tables._frame(back).columns) == ["qps"]


def test_headers_are_words_with_units():
    assert headers.header("qps") == "QPS"
    assert headers.header("cpuPer") == "CPU per op (us)"
    assert headers.header("qps_on") == "QPS on"
    assert headers.header("qps_change_pct") == "QPS change (%)"
    assert headers.header("9.10.0-gcc12") == "9.10.0-gcc12"  # not a name rxlab writes: as it is
    t = _tex(pd.DataFrame({"usPer": [1.0], "qps_on": [2.0]}))
    assert "User CPU per op ($\\mu$s) & QPS on \\\\" in t


def test_a_long_table_is_a_longtable_with_its_header_on_every_page():
    df = pd.DataFrame({"i": range(tables.LONG_ROWS + 1)})
    t = _tex(df)
    assert "\\begin{longtable}{r}" in t and "\\endhead" in t and "\\begin{table}" not in t
    assert t.count("I \\\\") == 2  # the header, first page and continued


def test_rewrite_keeps_the_caption_and_adds_the_label(tmp_path):
    pd.DataFrame({"index": [0, 1], "qps": [1.0, 2.0]}).to_csv(tmp_path / "s_t.csv", index=False)
    (tmp_path / "s_t.tex").write_text("\\begin{table}\n\\centering\n\\caption{Seed gap: t\\_x (study 1)}\n"
                                      "\\begin{tabular}{r}\n\\end{tabular}\n\\end{table}\n")
    tables.rewrite_tables(tmp_path)
    t = (tmp_path / "s_t.tex").read_text()
    assert "\\caption{Seed gap: t\\_x (study 1)}\\label{tab:s_t}" in t
    assert "index" not in t and "QPS \\\\" in t
    assert (tmp_path / "s_t.csv").read_text().splitlines()[0] == "qps"
