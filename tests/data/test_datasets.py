import functools
import http.server
import shutil
import threading

import pytest

from logicpipe.core.errors import DataError, UsageError
from logicpipe.data import get_dataset, load_problems


@pytest.mark.parametrize("name, key", [("FOLIO", "folio"), ("AR-LSAT", "ar-lsat"), ("ar_lsat", "ar-lsat"),
                                       ("LogicalDeduction", "logicaldeduction"), ("ProntoQA", "prontoqa"),
                                       ("proof-writer", "proofwriter")])
def test_logic_lm_spellings(name, key):
    assert get_dataset(name).key == key


def test_unknown_dataset_suggests():
    with pytest.raises(UsageError, match="did you mean 'prontoqa'"):
        get_dataset("prontoq")


def test_load_from_data_dir(data_dir):
    problems = load_problems(get_dataset("folio"), "dev", data_dir)
    assert len(problems) == 204 and problems[0].answer in "ABC"


@pytest.fixture
def mirror(tmp_path, data_dir):
    """A local HTTP server laid out like the pinned Logic-LM repository."""
    root = tmp_path / "mirror"
    shutil.copytree(data_dir / "data" / "FOLIO", root / "data" / "FOLIO")
    (root / "data" / "ProntoQA").mkdir(parents=True)
    (root / "data" / "ProntoQA" / "dev.json").write_text("[]")  # wrong content: checksum must fail
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_download_is_checksummed_and_cached(mirror, monkeypatch, tmp_path):
    monkeypatch.delenv("LOGICPIPE_DATA", raising=False)
    monkeypatch.setenv("LOGICPIPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LOGICPIPE_DATA_URL", mirror)
    assert len(load_problems(get_dataset("folio"), "dev")) == 204
    monkeypatch.setenv("LOGICPIPE_DATA_URL", "http://127.0.0.1:9")  # offline: the cache serves
    assert len(load_problems(get_dataset("folio"), "dev")) == 204
    monkeypatch.setenv("LOGICPIPE_DATA_URL", mirror)
    with pytest.raises(DataError, match="checksum mismatch"):
        load_problems(get_dataset("prontoqa"), "dev")
    with pytest.raises(DataError, match="cannot download"):
        load_problems(get_dataset("proofwriter"), "dev")


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\x00binary", '[{"id": "x"}]'.encode("utf-16"),
                                     b"[" * 100_000 + b"]" * 100_000], ids=["binary", "utf-16", "deep"])
def test_a_data_file_that_is_not_json_text_is_one_data_error(content, tmp_path):
    from tests.conftest import cli

    folder = tmp_path / "data" / "FOLIO"
    folder.mkdir(parents=True)
    (folder / "dev.json").write_bytes(content)
    (tmp_path / "none.json").write_text("[]")  # replay (no model), with no program for any problem
    done = cli("run", "-d", "folio", "--data-dir", str(tmp_path), "--out", str(tmp_path / "out"), "--programs",
               str(tmp_path / "none.json"))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "dev.json" in lines[0] and "internal error" not in lines[0]
    assert not (tmp_path / "out").exists()
