"""MSD tagging of the MTT substitutes (MANIFEST §10): hundreds of labels, merged tags, evaluation-only data."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TINY_MODEL

from seqtransfer.analysis.predictions import read_predictions
from seqtransfer.cli import run
from seqtransfer.errors import SeqTransferError


@pytest.mark.slow
def test_an_msd_tagger_trains_on_social_media_and_scores_serbian_zero_shot(tmp_path, data_root):
    output = tmp_path / "sl-sm"
    metrics = run(["train", "--dataset", "mtt_sl_sm", "--task", "msd", "--epochs", "1", "--output", str(output), "--quiet", *TINY_MODEL, "data.max_train_sentences=300"])
    assert 0 <= metrics["test"]["accuracy"] <= 100
    predictions = read_predictions(output / "predictions" / "test.conll")  # merged tags such as "Q Vmpr1s" stay one field ("Q_Vmpr1s")
    assert any("_" in label for sentence in predictions.gold for label in sentence)
    scores = run(["evaluate", str(output), "--dataset", "mtt_sr_sm", "--split", "test"])
    assert 0 <= scores["accuracy"] <= 100
    from seqtransfer.experiments.run_records import score_elsewhere

    score, folder = score_elsewhere(output, "mtt_sr_sm:msd", None)
    assert score == scores["accuracy"] and (Path(folder) / "test.conll").is_file()
    zero_shot = run(["transfer", "--source", str(output), "--method", "source_only", "--dataset", "mtt_sr_sm", "--task", "msd", "--output", str(tmp_path / "zero-shot"), "--quiet"])
    assert zero_shot["test"]["accuracy"] == scores["accuracy"]


def test_serbian_cyrillic_transliterates_to_latin():
    from seqtransfer.data.script import cyrillic_share, script_mismatch, transliterate, vocabulary_script

    assert transliterate("Љубав њиховог џепа, Ђорђе!") == "Ljubav njihovog džepa, Đorđe!"
    assert cyrillic_share(["Београд", "je"]) > 0.7
    latin = ["dobar", "dan", "je", "Beograd", "grad", "reka", "most", "ulica", "kuća", "voda", "hleb"]
    known = vocabulary_script(latin)
    assert known == 0.0 and "Cyrillic" in script_mismatch([["Добар", "дан"]], known)
    assert script_mismatch([["Dobar", "dan"]], known) is None
    one = script_mismatch([["Dobar", "dan", "u", "gradu", "je", "lep"], ["Добар", "дан"], ["Kuća"]], known)  # a Cyrillic sentence among Latin ones
    assert one.startswith("1 of 3 sentences (the first: sentence 2) are in Cyrillic")
    assert vocabulary_script(["<pad>", "<unk>"]) is None  # no word vocabulary: nothing to judge by
    assert vocabulary_script(latin + ["Београд"] * 3) is None  # a model of both scripts (a third of its letters Cyrillic)


def test_a_cyrillic_sentence_through_a_latin_model_warns_once_and_transliteration_reads_it(tiny_run, tmp_path, capsys):
    from seqtransfer.cli import main

    text = tmp_path / "sr.txt"
    text.write_text("Петар живи у Београду\n", encoding="utf-8")
    assert main(["predict", str(tiny_run), str(text)]) == 0
    captured = capsys.readouterr()
    assert "Cyrillic" in captured.err and len([line for line in captured.err.splitlines() if line.strip()]) == 1
    assert captured.out.splitlines()[0].startswith("Петар\t")
    assert main(["predict", str(tiny_run), str(text), "--transliterate", "sr"]) == 0
    captured = capsys.readouterr()
    assert "Cyrillic" not in captured.err and captured.out.splitlines()[0].startswith("Петар\t")
    import warnings

    import seqtransfer
    from seqtransfer.errors import SeqTransferWarning

    with warnings.catch_warnings(record=True) as caught:  # the Python API warns and transliterates the same way
        warnings.simplefilter("always")
        latin_first = seqtransfer.load(tiny_run, device="cpu").predict([["John", "lives", "in", "Paris"], ["Петар", "живи"]])
    assert [str(warning.message)[:40] for warning in caught if warning.category is SeqTransferWarning] == ["1 of 2 sentences (the first: sentence 2)"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read_as_latin = seqtransfer.load(tiny_run, device="cpu", transliterate="sr").predict([["John", "lives", "in", "Paris"], ["Петар", "живи"]])
    assert not [warning for warning in caught if warning.category is SeqTransferWarning] and len(read_as_latin[1]) == 2 and latin_first[0] == read_as_latin[0]
    with pytest.raises(SeqTransferError, match="no transliteration for 'xx'"):
        seqtransfer.load(tiny_run, device="cpu", transliterate="xx")


@pytest.mark.slow
def test_croatian_news_tags_are_mapped_to_the_hr500k_tagset(data_root):
    import warnings

    from seqtransfer.data.mtt_mapping import TagMapping
    from seqtransfer.data.registry import load_split

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train = load_split("mtt_hr_news", "train")
    assert any("11,438 of 112,374 tags (10.2 %) mapped" in str(item.message) for item in caught)
    evaluation = {tag for split in ("dev", "test") for sentence in load_split("mtt_hr_news", split) for tag in sentence.labels("xpos")}
    assert sum(tag not in evaluation for sentence in train for tag in sentence.labels("xpos")) == 543  # MANIFEST: 11,911 before mapping
    mapping = TagMapping(load_split("mtt_hr_sm", "train"))
    assert mapping.map("Pi", "Pi-msn--n-a") == "Pi-msn" and mapping.map("novi", "Agpmsn") in ("Agpmsny", "Agpmsnn")


def test_scoring_on_ud_serbian_a_run_that_learnt_from_setimes_sr_is_warned_about(tmp_path):
    """334 / 361 of SETimes.SR's training sentences are UD Serbian-SET dev / test sentences."""
    from seqtransfer.config import RunConfig, apply_overrides, dump_config
    from seqtransfer.training.overlap import leak_warning

    news = apply_overrides(RunConfig(), ["data.dataset=mtt_sr_news", "data.task=msd"])
    assert "shares sentences with the training split of mtt_sr_news" in leak_warning(news, "mtt_sr_news_ud", "test")
    assert leak_warning(news, "mtt_sr_news", "test") is None and leak_warning(news, "mtt_sr_news_ud", "train") is None
    deduplicated = apply_overrides(RunConfig(), ["data.dataset=mtt_sr_news_ud", "data.task=msd"])
    assert leak_warning(deduplicated, "mtt_sr_news_ud", "test") is None
    source = tmp_path / "sr-news"  # a chain: news-sr -> sm-hr, scored on UD Serbian-SET
    source.mkdir()
    (source / "config.yaml").write_text(dump_config(news), encoding="utf-8")
    chained = apply_overrides(RunConfig(), ["data.dataset=mtt_hr_sm", "data.task=msd", f"transfer.source={source}", "transfer.scheme=finetune"])
    assert "mtt_sr_news" in leak_warning(chained, "mtt_sr_news_ud", "dev")
    taught = apply_overrides(RunConfig(), ["data.dataset=mtt_hr_sm", "data.task=msd", f"transfer.distill_from=[{source}]"])  # a teacher trained on it
    assert "mtt_sr_news" in leak_warning(taught, "mtt_sr_news_ud", "test")
    multitask = apply_overrides(RunConfig(), ["model.tasks={msd: []}", "multitask.data={msd: 'mtt_sr_news:msd'}"])
    assert "mtt_sr_news" in leak_warning(multitask, "mtt_sr_news_ud", "test")
