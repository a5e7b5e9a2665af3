"""The documentation site builds with `mkdocs build --strict`: every page is in the nav, and every link
and anchor between pages resolves (mkdocs.yml turns each of those checks into a warning, and strict
makes a warning fail the build)."""

from __future__ import annotations

import subprocess
import sys

import yaml

from .blocks import ROOT


def build(config, site):
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, cwd=config.parent, timeout=300)


def test_the_site_builds_strictly(tmp_path):
    result = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr[-3000:]
    for page in ("index", "pipeline", "tasks", "models", "kb", "optimize", "baselines", "viewer", "ray",
                 "benchmarks", "reproduce", "architecture", "contributing", "cli"):
        assert (tmp_path / "site" / page / "index.html" if page != "index" else tmp_path / "site" / "index.html"
                ).is_file(), page


def test_a_plain_mkdocs_build_writes_where_git_ignores():
    # `mkdocs build` without --site-dir writes mkdocs.yml's site_dir (./site by default): a reader who
    # builds the docs must not find the site among the files git offers to commit.
    import shutil

    import pytest

    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    site = config.get("site_dir", "site")
    ignored = subprocess.run(["git", "check-ignore", "-q", f"{site}/index.html"], cwd=ROOT)
    assert ignored.returncode == 0, f"git does not ignore {site}/, where `mkdocs build` writes"


def test_every_page_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = {next(iter(item.values())) for item in config["nav"]}
    assert in_nav == {page.name for page in (ROOT / "docs").glob("*.md")}


def test_a_broken_anchor_fails_the_build(tmp_path):
    # The strict build above must be able to fail: a copy of the site with one link to a missing anchor.
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in (ROOT / "docs").glob("*.md"):
        (docs / page.name).write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    index = docs / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + "\nSee [nothing](tasks.md#no-such-section).\n",
                     encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), encoding="utf-8")
    result = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-section" in result.stderr
