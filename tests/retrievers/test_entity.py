"""ai-memory's entity stream: extraction rules, query tokens, prefix match, IDF weights."""

import pandas as pd

from rrfbench.retrievers.entity import EntityRetriever, extract_entities, query_tokens


def test_extraction_on_hand_written_examples():
    text = "CD33 and IL-10 bind S100A9 in Alzheimer Disease patients; DNA repair by p53. the cat."
    assert extract_entities(text) == {"cd33", "il-10", "s100a9", "alzheimer disease", "dna", "p53"}
    assert extract_entities("plain lowercase words only") == set()
    assert extract_entities("X1 and Y", min_len=3) == set()  # too short


def test_query_tokens_follow_ai_memory():
    assert query_tokens("Does IL-10 affect cd33_expression in ai-memory? a an") == [
        "does", "il-10", "affect", "cd33_expression", "cd33", "expression", "ai-memory", "memory"]
    assert len(query_tokens(" ".join(f"word{i}" for i in range(30)))) == 12


def test_prefix_match_and_inverse_frequency_weights(tiny_beir, tmp_path):
    from rrfbench import load_dataset

    d = tmp_path / "ent"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text(
        '{"_id": "a", "title": "", "text": "CD33 expression"}\n'
        '{"_id": "b", "title": "", "text": "CD33 and CD34 together"}\n'
        '{"_id": "c", "title": "", "text": "nothing"}\n')
    (d / "queries.jsonl").write_text('{"_id": "q", "text": "cd3"}\n{"_id": "r", "text": "CD34"}\n')
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\ta\t1\nr\tb\t1\n")
    ds = load_dataset(str(d))
    run = EntityRetriever().retrieve(ds, pd.DataFrame({"qid": ["q", "r"], "text": ["cd3", "CD34"]}), 10)
    q = run.df[run.df.qid == "q"].set_index("docid").score.to_dict()
    # "cd3" is a prefix of cd33 (2 pages) and cd34 (1 page): b = 1/2 + 1, a = 1/2
    assert q == {"b": 1.5, "a": 0.5}
    assert run.df[run.df.qid == "r"].docid.tolist() == ["b"]
