"""Tables as files a paper can include: LaTeX (booktabs), Markdown and CSV, written side by side.

A study's table keeps the seed's column names with this machine's numbers
beside the published ones; `save_table` writes it as <name>.tex, <name>.md
(a pipe table) and <name>.csv (the data, full precision).

The .tex is a whole table a paper can `\\input`: a caption and a label
(`tab:<name>`), headers in words with units (rxlab.core.headers), integers as
integers, no pandas index, and a `longtable` that breaks across pages when it
has more than `LONG_ROWS` rows. It needs `PREAMBLE` in the paper's preamble.
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from rxlab.core.headers import header

__all__ = ["LONG_ROWS", "PREAMBLE", "rewrite_tables", "save_table", "to_latex", "to_markdown"]

# Above this many rows a table is set as a longtable (it breaks across pages); below, a table float.
LONG_ROWS = 40
# Above this many columns the table is set smaller, with narrower gaps between columns and long headers
# on two or three lines (twice as many: smaller still).
WIDE_COLUMNS = 8
LANDSCAPE_COLUMNS = 12
# What a document needs to \input these tables (graphicx: a wide table is shrunk to the text width;
# pdflscape: a long table with more than LANDSCAPE_COLUMNS columns is set on landscape pages).
PREAMBLE = ("\\usepackage{booktabs}\n\\usepackage{longtable}\n\\usepackage{graphicx}\n"
            "\\usepackage{pdflscape}\n")

_LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                  "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}
# Columns pandas adds for an unnamed index (a CSV written with one, read back).
_INDEX_ARTIFACTS = ("index", "Unnamed: 0")


def _numeric(col: pd.Series) -> bool:
    """Right-aligned: numbers, not booleans."""
    return pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)


def _integral(col: pd.Series) -> bool:
    """A numeric column whose values are all whole numbers (a count stored as float because of a gap)."""
    if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
        return False
    if pd.api.types.is_integer_dtype(col):
        return True
    v = col.dropna().to_numpy(dtype=float)
    return len(v) > 0 and bool(np.all(np.isfinite(v))) and bool(np.all(v == np.round(v)))


def _cell(v, digits: int, integral: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)) or (integral and isinstance(v, (float, np.floating))):
        return f"{int(v):d}"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.{digits}f}" if abs(v) < 1e6 else f"{float(v):.0f}"
    return str(v)


def _escape(text: str) -> str:
    return re.sub(r"[&%$#_{}~^\\]", lambda m: _LATEX_SPECIAL[m.group(0)], text)


def _frame(df: pd.DataFrame) -> pd.DataFrame:
    """Named index levels become columns (a table's row labels are data too); an unnamed index is
    dropped, and so is the column a CSV written with one gets back (`index`, numbered from 0)."""
    named = [n for n in df.index.names if n is not None]
    t = df.reset_index() if named else df.reset_index(drop=True)
    first = t.columns[0] if len(t.columns) else None
    if first in _INDEX_ARTIFACTS and pd.api.types.is_integer_dtype(t[first]) \
            and t[first].is_unique and t[first].is_monotonic_increasing:
        t = t.drop(columns=first)
    return t


def _latex_header(name: object, align: str = "l", stack: bool = False) -> str:
    """A header cell: the words with a unit of microseconds as a paper sets it; `stack` sets a long one
    on two or three lines (a nested tabular: no package needed), so a wide table stays narrower."""
    text = re.sub(r"\bus(?=\)| per op\))", r"$\\mu$s", _escape(header(name)))
    words = text.split(" ")
    if not stack or len(text) <= 10 or len(words) == 1:
        return text
    n = 3 if len(text) > 24 and len(words) > 2 else 2
    lines, size = [[]], len(text) / n
    for w in words:
        if lines[-1] and len(" ".join(lines[-1])) + len(w) / 2 > size and len(lines) < n:
            lines.append([])
        lines[-1].append(w)
    body = "\\\\".join(" ".join(ln) for ln in lines)
    return f"\\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}{body}\\end{{tabular}}"


def to_latex(df: pd.DataFrame, caption: str = "", digits: int = 2, label: str = "") -> str:
    """A booktabs table with its caption and \\label{label}: a table float, or a longtable above
    LONG_ROWS rows (its header repeated on each page)."""
    t = _frame(df)
    numeric = [_numeric(t[c]) for c in t.columns]
    integral = [_integral(t[c]) for c in t.columns]
    spec = "".join("r" if n else "l" for n in numeric)
    wide = len(t.columns) > WIDE_COLUMNS
    head = " & ".join(_latex_header(c, "r" if n else "l", stack=wide)
                      for c, n in zip(t.columns, numeric, strict=True)) + " \\\\"
    body = [" & ".join(_escape(_cell(v, digits, i)) for v, i in zip(row, integral, strict=True)) + " \\\\"
            for row in t.itertuples(index=False)]
    title = f"\\caption{{{_escape(caption)}}}" + (f"\\label{{{label}}}" if label else "")
    long = len(t) > LONG_ROWS
    wide = ["\\small" if len(t.columns) <= 2 * WIDE_COLUMNS and not long else "\\footnotesize",
            "\\setlength{\\tabcolsep}{3pt}"] if wide else []
    if long:
        lines = ["\\begingroup", *wide, f"\\begin{{longtable}}{{{spec}}}", title + " \\\\",
                 "\\toprule", head, "\\midrule", "\\endfirsthead",
                 f"\\multicolumn{{{len(t.columns)}}}{{l}}{{\\emph{{(continued)}}}} \\\\",
                 "\\toprule", head, "\\midrule", "\\endhead",
                 "\\bottomrule", "\\endlastfoot", *body, "\\end{longtable}", "\\endgroup"]
        if len(t.columns) > LANDSCAPE_COLUMNS:
            lines = ["\\begin{landscape}", *lines, "\\end{landscape}"]
    else:
        tabular = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule", head, "\\midrule", *body,
                   "\\bottomrule", "\\end{tabular}"]
        if wide:  # shrunk to the text width when wider than it, never enlarged (graphicx)
            tabular = ["\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%",
                       *tabular, "}"]
        lines = ["\\begin{table}[htbp]", "\\centering", *wide, title, *tabular, "\\end{table}"]
    return "\n".join(lines) + "\n"


def to_markdown(df: pd.DataFrame, digits: int = 2) -> str:
    """A pipe table (GitHub/MkDocs Markdown), numbers right-aligned."""
    t = _frame(df)
    numeric = [_numeric(t[c]) for c in t.columns]
    integral = [_integral(t[c]) for c in t.columns]

    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(str(c)) for c in t.columns) + " |",
             "| " + " | ".join("---:" if n else "---" for n in numeric) + " |"]
    for row in t.itertuples(index=False):
        lines.append("| " + " | ".join(esc(_cell(v, digits, i)) for v, i in zip(row, integral, strict=True))
                     + " |")
    return "\n".join(lines) + "\n"


def save_table(df: pd.DataFrame, name: str, directory: str | os.PathLike, caption: str = "",
               digits: int = 2) -> dict[str, Path]:
    """Write <name>.tex (label tab:<name>; the caption defaults to the name in words), <name>.md and
    <name>.csv in `directory`; returns the paths."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"table name {name!r}: use a plain file stem such as 'backends_throughput'")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = {"tex": d / f"{name}.tex", "md": d / f"{name}.md", "csv": d / f"{name}.csv"}
    out["tex"].write_text(to_latex(df, caption or name.replace("_", " "), digits, label=f"tab:{name}"))
    out["md"].write_text(to_markdown(df, digits))
    _frame(df).to_csv(out["csv"], index=False)
    return out


_CAPTION = re.compile(r"\\caption\{(.*?)\}(?:\\label|\s*$)", re.M)
_UNESCAPE = {v: k for k, v in _LATEX_SPECIAL.items()}


def rewrite_tables(directory: str | os.PathLike, digits: int = 2) -> list[Path]:
    """Write every <name>.tex and .md in `directory` again from its <name>.csv (after a change of the
    writer), keeping the caption the .tex had; returns the .tex files written. A CSV is rewritten only
    to drop a pandas index column."""
    done = []
    for csv in sorted(Path(directory).glob("*.csv")):
        tex = csv.with_suffix(".tex")
        m = _CAPTION.search(tex.read_text()) if tex.is_file() else None
        caption = re.sub("|".join(re.escape(k) for k in sorted(_UNESCAPE, key=len, reverse=True)),
                         lambda x: _UNESCAPE[x.group(0)], m.group(1)) if m else ""
        df = pd.read_csv(csv)
        t = _frame(df)
        tex.write_text(to_latex(t, caption or csv.stem.replace("_", " "), digits, label=f"tab:{csv.stem}"))
        csv.with_suffix(".md").write_text(to_markdown(t, digits))
        if t.shape[1] != df.shape[1]:  # the data itself only loses pandas' index; else it stays byte for byte
            t.to_csv(csv, index=False)
        done.append(tex)
    return done
