"""Unlabelled text in (every form a user has it) and the distances between corpora."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from conftest import DATA_ROOT, FIXTURES

from seqtransfer.analysis.similarity import correlations, js_divergence, kl_divergence, oov_rate, relative_gain
from seqtransfer.cli import run
from seqtransfer.corpora.unlabeled import read_unlabeled
from seqtransfer.data.trigram_lm import TrigramLM, unigram_counts
from seqtransfer.errors import SeqTransferError

NEWS = [["The", "bank", "raised", "rates", "by", "2", "points", "."], ["Shares", "fell", "in", "London", "."]] * 5
TWEETS = [["lol", "the", "bank", "is", "closed", "again", "😂"], ["@user", "omg", "rates", "are", "crazy", "#fail"]] * 5


def test_js_is_symmetric_zero_for_equal_and_one_for_disjoint():
    news, tweets = unigram_counts(NEWS), unigram_counts(TWEETS)
    assert js_divergence(news, news) == pytest.approx(0.0)
    assert js_divergence(news, tweets) == pytest.approx(js_divergence(tweets, news))
    assert js_divergence(Counter({"a": 3}), Counter({"b": 1})) == pytest.approx(1.0)
    assert 0 < js_divergence(news, tweets) < 1


def test_kl_and_oov_by_hand():
    first, second = Counter({"a": 1, "b": 1}), Counter({"a": 2})
    alpha = 0.5  # vocabulary {a, b}: P = (0.5, 0.5), Q = (2.5/3, 0.5/3)
    expected = 0.5 * math.log2(0.5 / (2.5 / 3)) + 0.5 * math.log2(0.5 / (0.5 / 3))
    assert kl_divergence(first, second, alpha) == pytest.approx(expected)
    assert oov_rate(first, second) == pytest.approx(50.0)
    assert unigram_counts([["Year", "2019"]]) == Counter({"year": 1, "0000": 1})


def test_kneser_ney_trigram_is_a_distribution_and_prefers_its_own_domain():
    model = TrigramLM(NEWS)
    words = sorted(model.vocabulary | {"<unk>"})
    for history in [("<s>", "<s>"), ("the", "bank"), ("never", "seen")]:
        assert sum(model.probability(*history, word) for word in words) == pytest.approx(1.0)
    assert model.cross_entropy(NEWS) < model.cross_entropy(TWEETS)


def test_correlations_and_gain():
    assert relative_gain(90.0, 95.0) == pytest.approx(50.0)
    summary = correlations([0.1, 0.2, 0.3, 0.4], [4.0, 3.0, 2.5, 1.0])
    assert summary["pairs"] == 4 and summary["spearman"] == pytest.approx(-1.0) and summary["pearson"] < -0.9
    assert correlations([0.1, 0.2], [1.0, 2.0])["pearson"] is None


def test_unlabelled_text_in_every_form(tmp_path):
    raw = tmp_path / "tweets.txt"
    raw.write_text("I love NYC!!! :) http://t.co/x\n\nsee you @bob\n", encoding="utf-8")
    assert read_unlabeled(str(raw), tokenizer="tweet") == [["I", "love", "NYC", "!!!", ":)", "http://t.co/x"], ["see", "you", "@bob"]]
    assert read_unlabeled(str(raw))[0][0:3] == ["I", "love", "NYC!!!"]
    words = read_unlabeled(str(FIXTURES / "tiny_ner_train.conll"), word_column=1)
    assert words and all(isinstance(word, str) for sentence in words for word in sentence)
    conllu = read_unlabeled(str(FIXTURES / "tiny_dep_train.conllu"))
    assert conllu and conllu[0][0] != "1"


def test_a_column_file_read_as_raw_text_is_one_line(tmp_path):
    with pytest.raises(SeqTransferError, match=r"tiny_ner_train.conll:1: looks like a column file \(2 columns.*--word-column N"):
        read_unlabeled(str(FIXTURES / "tiny_ner_train.conll"))
    one_sentence = tmp_path / "one.conll"  # no blank line at all
    one_sentence.write_text("@mary\tUSR\nhi\tUH\n!\t,\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match=r"one.conll:1: looks like a column file \(2 columns"):
        read_unlabeled(str(one_sentence))
    table = tmp_path / "train.tsv"  # a sentence TAB its label (SST-2): neither raw text nor a column of words
    table.write_text("a fine film\t1\nnot good at all\t0\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match=r"train.tsv:1: looks like a table of 2 TAB-separated fields.*cut -f1"):
        read_unlabeled(str(table))
    with pytest.raises(SeqTransferError, match=r"column 1 holds text with spaces.*cut -f1"):
        read_unlabeled(str(table), word_column=1)
    broken = tmp_path / "broken.tsv"  # a table with one line whose label went missing is still a table
    broken.write_text("".join(f"sentence number {number}\t{number % 2}\n" for number in range(19)) + "a line without its label\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match=r"broken.tsv:1: looks like a table of 2 TAB-separated fields on 19 of 20 lines"):
        read_unlabeled(str(broken))
    two_tweets = tmp_path / "tweets.txt"  # raw text: two sentences of two words each stay text
    two_tweets.write_text("hi there\nsee you\n", encoding="utf-8")
    assert read_unlabeled(str(two_tweets)) == [["hi", "there"], ["see", "you"]]


@pytest.mark.parametrize("content, message", [(b"", "holds no sentences"), (b"\n\n", "holds no sentences"), (b"caf\xe9 ole\n", ":1: byte 0xe9 is not valid utf-8")])
def test_empty_or_non_utf8_unlabelled_files_are_one_line(tmp_path, content, message):
    path = tmp_path / "text.txt"
    path.write_bytes(content)
    with pytest.raises(SeqTransferError, match=message):
        read_unlabeled(str(path))


def test_missing_file_and_bad_word_column(tmp_path):
    with pytest.raises(SeqTransferError, match="file not found"):
        read_unlabeled(str(tmp_path / "nothing.txt"))
    with pytest.raises(SeqTransferError, match="no column 5"):
        read_unlabeled(str(FIXTURES / "tiny_ner_train.conll"), word_column=5)


def test_analyze_similarity_writes_tables_figures_and_ranks(tmp_path):
    files = {}
    for name, sentences in (("news", NEWS), ("tweets", TWEETS), ("more_tweets", TWEETS[::-1] + [["lol", "ok"]])):
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text("\n".join(" ".join(sentence) for sentence in sentences) + "\n", encoding="utf-8")
    gains = tmp_path / "gains.csv"
    gains.write_text(
        f"source,target,scratch,transferred\n{files['news']},{files['tweets']},80,82\n{files['more_tweets']},{files['tweets']},80,90\n{files['news']},{files['more_tweets']},70,71\n", encoding="utf-8"
    )
    output = tmp_path / "out"
    result = run(["analyze", "similarity", str(files["news"]), str(files["tweets"]), str(files["more_tweets"]), "--target", str(files["tweets"]), "--gains", str(gains), "--output", str(output)])
    assert [name for name, _ in result["ranking"]] == [str(files["more_tweets"]), str(files["news"])]
    assert result["correlation"]["pairs"] == 3
    for name in ("similarity.json", "similarity.md", "similarity.png", "distance_gain.png"):
        assert (output / name).is_file()
    assert "too few to test" in (output / "similarity.md").read_text(encoding="utf-8")
    html = tmp_path / "report.html"
    run(["analyze", "report", "--similarity", str(files["news"]), str(files["tweets"]), "--no-lm", "--output", str(html)])
    assert 'id="similarity"' in html.read_text(encoding="utf-8")


def test_similarity_refuses_an_unknown_target(tmp_path):
    text = tmp_path / "a.txt"
    text.write_text("a b c\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match="--target 'b.txt' is not among the corpora"):
        run(["analyze", "similarity", str(text), str(text), "--target", "b.txt"])


@pytest.mark.slow
def test_registered_datasets_and_tweets_unlabeled_are_unlabelled_text():
    tweets = read_unlabeled("tweets_unlabeled", DATA_ROOT)
    assert len(tweets) == 55162  # MANIFEST's 55,170 lines, 8 of them blank
    assert len(read_unlabeled("tweebank:dev", DATA_ROOT)) < len(read_unlabeled("tweebank", DATA_ROOT))
    assert len(read_unlabeled("conll2000+ptb_sample", DATA_ROOT)) > len(read_unlabeled("conll2000", DATA_ROOT))


def test_the_wasserstein_distance_sees_words_that_mean_alike(tmp_path):
    """Two corpora with no word in common but words of near vectors are closer than two with far ones;
    a corpus is at 0 from itself; the distance is symmetric."""
    pytest.importorskip("ot")
    from seqtransfer.analysis.similarity import compare

    vectors = tmp_path / "vectors.txt"
    vectors.write_text("going 1 0 0\ngonna 0.99 0.1 0\ncar 0 1 0\nauto 0 0.99 0.1\nblue 0 0 1\n", encoding="utf-8")
    corpora = {"a": [["going", "car"]] * 3, "b": [["gonna", "auto"]] * 3, "c": [["blue", "blue"]] * 3}
    table = compare(corpora, language_models=False, wasserstein_vectors=str(vectors))["wasserstein"]
    assert table["a"]["a"] == pytest.approx(0.0, abs=1e-9) and table["a"]["b"] == table["b"]["a"]
    assert table["a"]["b"] < 0.05 < table["a"]["c"]
    assert compare(corpora, language_models=False)["js"]["a"]["b"] == pytest.approx(1.0)  # JS sees no shared word at all
