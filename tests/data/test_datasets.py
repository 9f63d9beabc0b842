import json
import shutil

import pytest

from rrfbench.core.errors import InputError
from rrfbench.data.datasets import available_datasets, load_dataset
from tests.conftest import ROOT, needs_cranfield, needs_scifact

MANIFEST = json.loads((ROOT / "datasets" / "manifest.json").read_text())


@needs_scifact
def test_scifact_counts_match_manifest(scifact):
    m = MANIFEST["scifact"]
    want = {"docs": m["docs"], "queries": m["queries"]}
    for s, v in m["splits"].items():
        want[f"{s}_queries"], want[f"{s}_qrels"] = v["queries"], v["qrels"]
    assert scifact.counts() == want
    assert scifact.splits == ["test", "train"]
    assert len(scifact.split_queries("test")) == 300


@needs_cranfield
def test_cranfield_graded(cranfield):
    qr = cranfield.qrels("test")
    assert len(qr) == 1612 and len(qr.qids) == 225
    assert sorted(qr.df.relevance.unique()) == [1, 2, 3, 4]


def test_load_by_path_and_fingerprint_changes(tiny_beir, tmp_path):
    ds = load_dataset(str(tiny_beir))
    assert ds.counts()["docs"] == 4
    fp = ds.fingerprint
    assert load_dataset(str(tiny_beir)).fingerprint == fp
    copy = tmp_path / "copy" / "tiny"
    shutil.copytree(tiny_beir, copy)
    with open(copy / "corpus.jsonl", "a") as fh:
        fh.write('{"_id": "d5", "title": "", "text": "new"}\n')
    assert load_dataset(str(copy)).fingerprint != fp


def test_search_path_env(tiny_beir, monkeypatch):
    monkeypatch.setenv("RRFBENCH_DATA", f"/nonexistent:{tiny_beir.parent}")
    assert "tiny" in dict(available_datasets())
    assert load_dataset("tiny").path == tiny_beir.resolve()


@pytest.mark.parametrize("line, problem", [
    ("not json\n", "not valid JSON"),
    ('{"title": "x", "text": "y"}\n', "missing required field '_id'"),
])
def test_bad_corpus_line(tiny_beir, line, problem):
    with open(tiny_beir / "corpus.jsonl", "a") as fh:
        fh.write(line)
    ds = load_dataset(str(tiny_beir))
    with pytest.raises(InputError) as ei:
        _ = ds.corpus
    assert ei.value.line == 5 and problem in str(ei.value)
    assert "corpus.jsonl:5:" in str(ei.value)


def test_missing_split_lists_available(tiny_beir):
    with pytest.raises(InputError, match="available: test"):
        load_dataset(str(tiny_beir)).qrels("dev")


def test_unknown_dataset_lists_resolvable(tiny_beir, monkeypatch):
    monkeypatch.setenv("RRFBENCH_DATA", str(tiny_beir.parent))
    with pytest.raises(InputError, match="resolvable: .*tiny"):
        load_dataset("no-such-dataset")


def test_irds_unknown_id_is_clean_error():
    with pytest.raises(InputError, match="ir_datasets cannot load"):
        load_dataset("irds:no/such/dataset")


def test_doc_texts_title_plus_text(tiny_beir):
    ds = load_dataset(str(tiny_beir))
    assert ds.doc_texts()[0] == "Apples red apples and green apples"
    assert ds.doc_texts()[3] == "nothing to see"
    assert json.loads((tiny_beir / "queries.jsonl").read_text().splitlines()[0])["_id"] == "q1"


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_every_studied_collection_matches_the_manifest(name):
    """Each collection the manifest describes has those counts where it resolves; and every
    collection the suites' catalog declares is described in the manifest."""
    import tomllib

    catalog = tomllib.loads((ROOT / "datasets" /
                             "suites.toml").read_text())["collections"]
    assert set(catalog) <= set(MANIFEST)
    assert catalog[name]["language"] == MANIFEST[name]["language"]
    if name not in dict(available_datasets()):
        pytest.skip(f"{name} not on RRFBENCH_DATA")
    m = MANIFEST[name]
    want = {"docs": m["docs"], "queries": m["queries"]}
    for s, v in m["splits"].items():
        want[f"{s}_queries"], want[f"{s}_qrels"] = v["queries"], v["qrels"]
    assert load_dataset(name).counts() == want
