"""Suites: the catalog's collections and notes, a missing collection named with the search
path, --allow-missing, and the CLI's one-line refusals."""

import subprocess
import sys
from pathlib import Path

import pytest

from rrfbench.core.errors import InputError
from rrfbench.data.suites import get_suite, load_suites
from tests.conftest import ROOT

TOML = """
[collections.a]
language = "en"
note = "tiny, made up"
[collections.b]
language = "en"
tune = "train"
eval = "test"
[collections.c]
language = "en"
[collections.z]
language = "zh"
[suites.en]
language = "en"
[suites.two]
collections = ["a", "b"]
"""


def beir(root: Path, name: str) -> None:
    d = root / name
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "x"}\n')
    (d / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n')
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")


@pytest.fixture()
def catalog(tmp_path, monkeypatch):
    (tmp_path / "suites.toml").write_text(TOML)
    data = tmp_path / "data"
    for name in ("a", "b"):
        beir(data, name)
    monkeypatch.setenv("RRFBENCH_SUITES", str(tmp_path / "suites.toml"))
    monkeypatch.setenv("RRFBENCH_DATA", str(data))
    return data


def test_a_language_suite_is_every_declared_collection_with_its_note(catalog):
    s = load_suites()["en"]
    assert s.names == ["a", "b", "c"]
    assert [m.note for m in s.members] == ["tiny, made up", "", ""]
    assert (s.members[1].tune_split, s.members[1].eval_split) == ("train", "test")


def test_a_missing_collection_is_named_with_the_search_path(catalog):
    with pytest.raises(InputError) as e:
        get_suite("en")
    msg = str(e.value)
    assert msg.startswith("--suite en: not on the search path: c (search path: ")
    assert str(catalog) in msg and "pass --allow-missing to run on the 2 present" in msg
    s = get_suite("en", allow_missing=True)
    assert s.names == ["a", "b"] and s.left_out == ("c",)
    assert get_suite("two").left_out == ()


def test_allow_missing_still_needs_enough_collections(catalog):
    (catalog / "b" / "corpus.jsonl").unlink()
    with pytest.raises(InputError, match=r"--suite en: needs at least 2 collections on the "
                                         r"search path; found \['a'\]"):
        get_suite("en", allow_missing=True)


@pytest.mark.parametrize("args, expect", [
    (["sweep", "--suite", "en"], "--suite en: not on the search path: c (search path: "),
    (["sweep", "--suite", "en", "--allow-missing", "--objective", "x"],
     "--objective: 'x' is not one of"),
    (["sweep", "a", "--allow-missing"], "--allow-missing: use it with --suite"),
    (["tune", "a", "-p", "titan", "--allow-missing"], "--allow-missing: use it with --suite"),
    (["retrieve", "a", "--allow-missing"], "--allow-missing: use it with --suite"),
    (["adapt", "--suite", "en"], "--suite en: not on the search path: c"),
    (["demo", "a", "--suite", "en"], "--suite en: not on the search path: c"),
])
def test_the_console_script_refuses_in_one_line(catalog, args, expect):
    p = subprocess.run([sys.executable, "-m", "rrfbench.cli", *args], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    lines = (p.stdout + p.stderr).strip().splitlines()
    assert p.returncode == 2, p.stdout + p.stderr
    assert len(lines) == 1 and expect in lines[0], lines
