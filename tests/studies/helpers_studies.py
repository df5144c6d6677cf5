"""What the tests of every study check the same way, for tests/studies/test_*.py.

Imported by module name, as pytest puts the test's folder on sys.path
(`from helpers_studies import refusal, saved_figures, registered_outputs`):

- refusal(study, **kw): the one-line ValueError of a bad parameter, returned for the test's own check.
- saved_figures(study, result, directory): each figure saved with its table and sidecar, the sidecar's
  invariants checked, and redrawn from the CSV and the sidecar's draw_args alone; yields what the test
  checks further of each figure.
- registered_outputs(study, result, directory): the study in the registry and `save_outputs` written;
  returns the table files and findings.md for the study's own checks.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from rxlab import studies
from rxlab.core.study import Study, StudyResult


def refusal(study: Study, **kw) -> str:
    """The error `study.params(scale='smoke', **kw)` raises: a ValueError of one line."""
    with pytest.raises(ValueError) as e:
        study.params(**{"scale": "smoke", **kw})
    msg = str(e.value)
    assert "\n" not in msg, msg
    return msg


@dataclass
class SavedFigure:
    """One figure as saved and read back."""

    name: str
    fig: Figure           # drawn from the result
    side: dict            # its sidecar (<name>.json)
    table: pd.DataFrame   # its table as saved (<name>.csv)
    again: Figure         # redrawn from `table` and the sidecar's draw_args alone


def saved_figures(study: Study, result: StudyResult, directory: Path, *,
                  scale: str = "smoke") -> Iterator[SavedFigure]:
    """Each of the study's figures saved from `result` in `directory` (pdf, svg and png not empty, the
    table, the sidecar: the runs as portable ids, the study, its id, the scale, the builds, the published
    sources with the seed's among them, the CSV's row count), then redrawn from the CSV and the sidecar's
    draw_args: what `rxlab figures` does without the runs. Both drawings are closed once the caller has
    looked at them."""
    for name, spec in study.figures.items():
        fig = study.figure(name, result, directory=directory)
        side = json.loads((directory / f"{name}.json").read_text())
        assert side["study"] == study.name and side["study_id"] == result.study, name
        assert side["runs"] == result.run_ids and "/" not in json.dumps(side["runs"]), name
        assert side["scale"] == scale and side["rocksdb_builds"] == result.builds, name
        assert side["published_sources"] == list(study.published), name
        assert any(s.startswith(f"{study.seed}: ") for s in side["published_sources"]), name
        assert all((directory / f"{name}.{x}").stat().st_size > 0 for x in ("pdf", "svg", "png")), name
        table = pd.read_csv(directory / f"{name}.csv")
        assert len(table) == side["table"]["rows"] > 0, name
        again = spec.draw(table, **side["draw_args"])
        try:
            yield SavedFigure(name, fig, side, table, again)
        finally:
            plt.close(fig)
            plt.close(again)


@dataclass
class Outputs:
    """What `save_outputs` left."""

    tables: set[str]   # the file names in <directory>/tables
    findings: str      # findings.md


def registered_outputs(study: Study, result: StudyResult, directory: Path) -> Outputs:
    """The study in the registry (by name, by its notebook's number, as the owner of each of its figures),
    and its outputs written: every figure with no failure, tables as <study>_<table>.{tex,md,csv}, and
    findings.md under the study's title."""
    assert studies.get(study.name) is study and studies.get(study.notebook.split("_")[0]) is study
    assert all(studies.figure_owner(f) is study for f in study.figures)
    done = study.save_outputs(result, directory)
    assert done["figures"] == list(study.figures) and not done["failed"], done["failed"]
    names = {p.name for p in (directory / "tables").iterdir()}
    assert names == set(done["tables"]) and all(n.startswith(f"{study.name}_") for n in names), names
    findings = (directory / "findings.md").read_text()
    assert findings.startswith(f"# {study.title}\n"), findings[:200]
    return Outputs(names, findings)
