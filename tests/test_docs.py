"""The documentation builds with warnings as errors (`mkdocs build --strict`), so a broken link, a
missing page or a Python reference that no longer resolves fails the suite; its generated pages hold
what the code holds (every command, engine, study and findings file)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rxlab import studies
from rxlab.core import engines

REPO = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).with_name("mkdocs")
# the toolchain's banners about its own future, not about these pages
QUIET = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(not MKDOCS.is_file(), reason="mkdocs is not installed (the [docs] extra)")]


def build(config: Path, site: Path) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    r = subprocess.run([str(MKDOCS), "build", "--strict", "--config-file", str(config),
                        "--site-dir", str(site)], cwd=config.parent, capture_output=True, text=True,
                       env=QUIET, timeout=280, check=False)
    return r, time.monotonic() - t0


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    r, seconds = build(REPO / "mkdocs.yml", out)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    print(f"\nmkdocs build --strict: {seconds:.1f} s")
    return out


def page(site: Path, path: str) -> str:
    return (site / path / "index.html").read_text()


def test_the_site_builds_with_warnings_as_errors(site):
    for p in ("getting-started", "concepts/engines", "concepts/runs", "concepts/metrics", "concepts/studies",
              "howto/compare-backends", "howto/slower-device", "howto/full-scale", "howto/sweep-tls",
              "howto/builds", "howto/own-figure", "methods/measuring-in-turns", "methods/performance-model",
              "methods/self-checks", "design", "findings", "reference/cli", "reference/flags",
              "reference/engines", "reference/studies", "reference/python/core", "reference/python/bench",
              "reference/python/runs", "reference/python/study"):
        assert (site / p / "index.html").is_file(), p


def test_the_generated_references_hold_what_the_code_holds(site):
    cli = page(site, "reference/cli")
    for cmd in ("rxlab bench", "rxlab runs", "rxlab show", "rxlab worker", "rxlab selfcheck backends",
                "rxlab study run", "rxlab build-rocksdb"):
        assert f'id="{cmd.replace(" ", "-")}"' in cli, cmd
    assert "rxlab selfcheck driver" in cli and "bench-backends" in cli  # the old names, said once
    eng = page(site, "reference/engines")
    for e in engines.engines():
        assert f'id="{e["name"]}"' in eng, e["name"]
    assert "registered_files" in eng and "delay_us" in eng
    st = page(site, "reference/studies")
    for s in studies.every():
        assert f'id="{s.name}"' in st, s.name
    findings = page(site, "findings")
    for f in (REPO / "docs" / "findings").glob("*.md"):
        if f.name != "index.md":
            assert f'href="{f.stem}/"' in findings, f.name
    core = page(site, "reference/python/core")
    for name in ("rxlab.core.store.catalog", "rxlab.core.store.seed_view", "rxlab.core.metrics.backend_label",
                 "rxlab.core.sysinfo.dir_problem"):
        assert f'id="{name}"' in core, name
    assert 'id="rxlab.core.study.Study"' in page(site, "reference/python/study")
    flags = page(site, "reference/flags")
    assert "--use_existing_db" in flags and "db_bench: snappy" in flags


@pytest.mark.parametrize(("text", "named"), [
    ("See [the guide](no-such-page.md).", "no-such-page.md"),
    ("See [the store's catalog](concepts.md#no-such-heading).", "no-such-heading"),
    ("::: rxlab.core.store.no_such_function", "rxlab.core.store.no_such_function"),
], ids=["link", "anchor", "reference"])
def test_a_broken_link_or_reference_fails_the_build(tmp_path, text, named):
    """The same configuration (strict, link and anchor validation, mkdocstrings) on a page with a link
    to a missing page, a missing heading, or a reference to a missing function: the build fails and
    names it."""
    cfg = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    cfg.pop("nav")
    cfg["plugins"] = [p for p in cfg["plugins"] if not (isinstance(p, dict) and "gen-files" in p)]
    cfg["exclude_docs"] = ""
    cfg["not_in_nav"] = ""
    cfg["plugins"][1]["mkdocstrings"]["handlers"]["python"]["paths"] = [str(REPO)]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(f"# A page\n\n{text}\n")
    (tmp_path / "docs" / "concepts.md").write_text("# Concepts\n\n## The store\n")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(cfg))
    r, _ = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    assert named in out, out[-3000:]
    shutil.rmtree(tmp_path / "site", ignore_errors=True)
