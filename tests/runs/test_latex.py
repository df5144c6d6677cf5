"""Every committed table and figure goes into a paper: a small document that \\inputs each table under
figures/tables/ and \\includegraphics each figure under figures/ compiles with pdflatex (Debian's
texlive-latex-base and texlive-latex-recommended, installed by .ci/deps.sh) and the preamble the export
README names. The PDF is kept under $RXLAB_ARTIFACTS (default tests/artifacts/, ignored by git).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rxlab.core.tables import PREAMBLE

REPO = Path(__file__).resolve().parents[2]
FIGURES = REPO / "figures"
ARTIFACTS = Path(os.environ.get("RXLAB_ARTIFACTS", REPO / "tests" / "artifacts"))


def test_every_committed_table_and_figure_compiles_in_a_paper(tmp_path):
    pdflatex = shutil.which("pdflatex")
    assert pdflatex, "no pdflatex: .ci/deps.sh installs texlive-latex-base and texlive-latex-recommended"
    tables = sorted((FIGURES / "tables").glob("*.tex"))
    pdfs = sorted(FIGURES.glob("*.pdf"))
    assert tables and pdfs, "no committed tables or figures to compile"
    for t in tables:
        text = t.read_text()
        assert "\\caption{" in text and f"\\label{{tab:{t.stem}}}" in text, f"{t.name}: no caption or label"
    body = [f"\\input{{{t.as_posix()}}}\n\\clearpage" for t in tables]
    body += [f"\\begin{{figure}}[htbp]\\centering\\includegraphics[width=\\linewidth]{{{p.as_posix()}}}"
             f"\\caption{{{p.stem.replace('_', ' ')}}}\\end{{figure}}\n\\clearpage" for p in pdfs]
    doc = tmp_path / "paper.tex"
    doc.write_text("\\documentclass{article}\n" + PREAMBLE +
                   "\\usepackage[margin=2cm]{geometry}\n\\begin{document}\n" + "\n".join(body)
                   + "\n\\end{document}\n")
    r = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300, check=False)
    logfile = tmp_path / "paper.log"
    log = logfile.read_text(errors="replace") if logfile.exists() else r.stdout
    errors = [ln for ln in log.splitlines() if ln.startswith("!")]
    assert r.returncode == 0 and not errors, "\n".join(errors[:5]) or r.stdout[-2000:]
    pages = re.search(r"Output written on paper\.pdf \((\d+) pages?", log)
    assert pages and int(pages.group(1)) >= len(tables) + len(pdfs), log[-1500:]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(tmp_path / "paper.pdf", ARTIFACTS / "paper-tables-figures.pdf")
    shutil.copyfile(doc, ARTIFACTS / "paper-tables-figures.tex")
    print(f"\npaper with {len(tables)} tables and {len(pdfs)} figures: {ARTIFACTS}/paper-tables-figures.pdf")


@pytest.mark.parametrize("path", sorted((FIGURES / "tables").glob("*.tex")), ids=lambda p: p.stem)
def test_committed_tables_have_no_index_column_and_no_raw_names(path):
    head = next(ln for ln in path.read_text().splitlines() if ln.endswith("\\\\") and "caption" not in ln)
    cells = [c.strip() for c in head.removesuffix("\\\\").split("&")]
    assert cells[0] not in ("index", "Unnamed: 0"), f"{path.name}: pandas' index as a column"
    for raw in ("qps\\_on", "usPer", "cpuPer", "rx.lat"):
        assert raw not in cells, f"{path.name}: raw column name {raw} as a header"
