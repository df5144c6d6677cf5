"""Tables as files a paper can include: LaTeX (booktabs), Markdown and CSV, written side by side.

A study's table keeps the seed's column names with this machine's numbers
beside the published ones; `save_table` writes it as <name>.tex (booktabs
rules, numbers right-aligned, text escaped), <name>.md (a pipe table) and
<name>.csv (the data, full precision).
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["save_table", "to_latex", "to_markdown"]

_LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                  "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}


def _cell(v, digits: int) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return f"{int(v):d}"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.{digits}f}" if abs(v) < 1e6 else f"{float(v):.0f}"
    return str(v)


def _escape(text: str) -> str:
    return re.sub(r"[&%$#_{}~^\\]", lambda m: _LATEX_SPECIAL[m.group(0)], text)


def _frame(df: pd.DataFrame) -> pd.DataFrame:
    """Index levels become columns (a table's row labels are data too)."""
    if isinstance(df.index, pd.RangeIndex) or df.index.names == [None]:
        return df.reset_index(drop=isinstance(df.index, pd.RangeIndex))
    return df.reset_index()


def to_latex(df: pd.DataFrame, caption: str = "", digits: int = 2) -> str:
    """A booktabs tabular (in a table float when a caption is given)."""
    t = _frame(df)
    numeric = [pd.api.types.is_numeric_dtype(t[c]) for c in t.columns]
    spec = "".join("r" if n else "l" for n in numeric)
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
             " & ".join(_escape(str(c)) for c in t.columns) + " \\\\", "\\midrule"]
    for row in t.itertuples(index=False):
        lines.append(" & ".join(_escape(_cell(v, digits)) for v in row) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    if caption:
        lines = ["\\begin{table}", "\\centering", f"\\caption{{{_escape(caption)}}}", *lines, "\\end{table}"]
    return "\n".join(lines) + "\n"


def to_markdown(df: pd.DataFrame, digits: int = 2) -> str:
    """A pipe table (GitHub/MkDocs Markdown), numbers right-aligned."""
    t = _frame(df)
    numeric = [pd.api.types.is_numeric_dtype(t[c]) for c in t.columns]

    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(str(c)) for c in t.columns) + " |",
             "| " + " | ".join("---:" if n else "---" for n in numeric) + " |"]
    for row in t.itertuples(index=False):
        lines.append("| " + " | ".join(esc(_cell(v, digits)) for v in row) + " |")
    return "\n".join(lines) + "\n"


def save_table(df: pd.DataFrame, name: str, directory: str | os.PathLike, caption: str = "",
               digits: int = 2) -> dict[str, Path]:
    """Write <name>.tex, <name>.md and <name>.csv in `directory`; returns the paths."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"table name {name!r}: use a plain file stem such as 'backends_throughput'")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = {"tex": d / f"{name}.tex", "md": d / f"{name}.md", "csv": d / f"{name}.csv"}
    out["tex"].write_text(to_latex(df, caption, digits))
    out["md"].write_text(to_markdown(df, digits))
    _frame(df).to_csv(out["csv"], index=False)
    return out
