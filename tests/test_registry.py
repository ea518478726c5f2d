"""Dataset registry: a contract over every entry, locating data, custom files, and the MANIFEST counts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from seqtransfer.data.corpus import count_tokens, label_set
from seqtransfer.data.locate import cache_root, find_dataset_folder
from seqtransfer.data.registry import DATASETS, SCHEMES, custom_dataset, get_dataset, load_split
from seqtransfer.data.summary import format_table, summarize
from seqtransfer.errors import SeqTransferError
from seqtransfer.tasks import TASK_KINDS

FIXTURES = Path(__file__).parent / "fixtures"
DATA_ROOT = Path(os.environ.get("SEQTRANSFER_DATA", "/nonexistent"))

# (dataset, split) -> (sentences, tokens), from shared/datasets/MANIFEST.md. Carved splits
# (conll2000, ark) are checked separately: their train + dev must equal the train file.
MANIFEST_COUNTS = {
    ("conll2000", "test"): (2012, 47377),
    ("conll2003", "train"): (14041, 203621),
    ("conll2003", "dev"): (3250, 51362),
    ("conll2003", "test"): (3453, 46435),
    ("ud_ewt", "train"): (12544, 204577),
    ("ud_ewt", "dev"): (2001, 25147),
    ("ud_ewt", "test"): (2077, 25094),
    ("ptb_sample", "train"): (3167, 76109),
    ("ptb_sample", "dev"): (351, 8711),
    ("ptb_sample", "test"): (396, 9264),
    ("tweebank", "train"): (1639, 24753),
    ("tweebank", "dev"): (710, 11759),
    ("tweebank", "test"): (1201, 19095),
    ("tweebank_single_root", "train"): (1639, 24753),
    ("tweebank_single_root", "dev"): (710, 11759),
    ("tweebank_single_root", "test"): (1201, 19095),
    ("wnut17", "train"): (3394, 62730),
    ("wnut17", "dev"): (1009, 15733),
    ("wnut17", "test"): (1287, 23394),
    ("tpos", "train"): (551, 10652),
    ("tpos", "dev"): (118, 2242),
    ("tpos", "test"): (118, 2291),
    ("ark", "test"): (547, 7707),
    ("ark_oct27", "train"): (1000, 14619),
    ("ark_oct27", "dev"): (327, 4823),
    ("ark_oct27", "test"): (500, 7152),
    ("tchunk", "train"): (551, 10652),
    ("tchunk", "dev"): (118, 2242),
    ("tchunk", "test"): (118, 2291),
    # MANIFEST §10 (MTT substitutes)
    ("mtt_sl_news", "train"): (4969, 104840),
    ("mtt_sl_news", "dev"): (1250, 26500),
    ("mtt_sl_news", "test"): (1282, 25442),
    ("mtt_hr_news", "train"): (5040, 112374),
    ("mtt_hr_news", "dev"): (960, 22292),
    ("mtt_hr_news", "test"): (1136, 24260),
    ("mtt_sr_news", "train"): (3177, 70171),
    ("mtt_sr_news", "dev"): (395, 9338),
    ("mtt_sr_news", "test"): (319, 7217),
    ("mtt_sr_news_ud", "train"): (2482, 55646),
    ("mtt_sr_news_ud", "dev"): (536, 11993),
    ("mtt_sr_news_ud", "test"): (520, 11421),
    ("mtt_sl_sm", "train"): (6273, 60956),
    ("mtt_sl_sm", "dev"): (762, 7353),
    ("mtt_sl_sm", "test"): (749, 6980),
    ("mtt_hr_sm", "train"): (6339, 71107),
    ("mtt_hr_sm", "dev"): (815, 8962),
    ("mtt_hr_sm", "test"): (785, 9035),
    ("mtt_sr_sm", "dev"): (691, 9190),
    ("mtt_sr_sm", "test"): (668, 9108),
}
CARVED_TRAIN_FILES = {"conll2000": (8936, 211727), "ark": (1827, 26594)}

# (dataset, split, column) -> label-set size, from the MANIFEST.
MANIFEST_LABELS = {
    ("wnut17", "train", "ner"): 13,
    ("wnut17", "dev", "ner"): 13,
    ("wnut17", "test", "ner"): 13,
    ("tweebank", "train", "upos"): 17,
    ("tweebank", "dev", "upos"): 17,
    ("tweebank", "test", "upos"): 17,
    ("tweebank", "train", "deprel"): 47,  # MANIFEST: DEPREL 47 / 45 / 46 as released, 35 / 34 / 34 converted
    ("tweebank", "dev", "deprel"): 45,
    ("tweebank", "test", "deprel"): 46,
    ("tweebank_single_root", "train", "deprel"): 35,
    ("tweebank_single_root", "dev", "deprel"): 34,
    ("tweebank_single_root", "test", "deprel"): 34,
    ("ud_ewt", "train", "upos"): 17,
    ("ud_ewt", "train", "xpos"): 49,
    ("ud_ewt", "test", "xpos"): 48,
    ("tchunk", "train", "chunk"): 18,
    ("tchunk", "dev", "chunk"): 16,
    ("conll2000", "test", "chunk"): 19,
    ("conll2003", "train", "ner"): 8,
    ("conll2003", "dev", "ner"): 6,
    ("conll2003", "train", "pos"): 45,
    ("conll2003", "train", "chunk"): 17,
    ("ptb_sample", "train", "pos"): 45,
    ("tpos", "dev", "pos"): 42,
    ("ark", "test", "pos"): 25,
    ("ark_oct27", "train", "pos"): 25,
    ("ark_oct27", "dev", "pos"): 23,
    ("mtt_sl_news", "train", "xpos"): 1007,
    ("mtt_sl_news", "dev", "xpos"): 729,
    ("mtt_sl_news", "test", "xpos"): 747,
    ("mtt_hr_news", "train", "xpos"): 664,  # MANIFEST: 1,005 as released; the MTE-v4 tags are mapped when read (data/mtt_mapping.py)
    ("mtt_hr_news", "dev", "xpos"): 447,
    ("mtt_sr_news", "train", "xpos"): 535,
    ("mtt_sl_sm", "train", "xpos"): 891,  # incl. merged (space-joined) tags
    ("mtt_sl_sm", "dev", "xpos"): 424,
    ("mtt_hr_sm", "train", "xpos"): 655,
    ("mtt_hr_sm", "test", "xpos"): 374,
    ("mtt_sr_sm", "dev", "xpos"): 364,
    ("mtt_sr_sm", "test", "xpos"): 362,
}
needs_data = pytest.mark.skipif(not (DATA_ROOT / "wnut17").is_dir(), reason="SEQTRANSFER_DATA not available")


def refuse_network(url: str, target: Path) -> None:
    """Tests never download: a dataset missing from SEQTRANSFER_DATA fails instead."""
    raise OSError(f"test suite does not download {url}")


@pytest.fixture(scope="module")
def loaded():
    """Every split of every registered dataset, read once."""
    splits = [(name, split) for name, spec in DATASETS.items() for split in spec.split_names()]
    return {(name, split): load_split(name, split, downloader=refuse_network) for name, split in splits}


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_spec_contract(name):
    spec = DATASETS[name]
    assert spec.name == name and spec.format in ("conll", "conllu", "tsv")
    assert "test" in spec.splits and ("train" in spec.splits or "dev" in spec.splits)  # an evaluation-only dataset (mtt_sr_sm) has dev and test
    assert ("dev" in spec.splits) != spec.dev_from_train
    assert (spec.columns is None) == (spec.format == "conllu")
    assert spec.columns is None or spec.columns.count("text" if spec.format == "tsv" else "word") == 1
    for task, column in spec.tasks.items():
        assert spec.columns is None or column in spec.columns
        kind = TASK_KINDS[spec.kinds.get(task, "tagging")]
        assert spec.schemes.get(column, "none") in SCHEMES and spec.metric[task] in kind.metrics
    assert set(spec.kinds) <= set(spec.tasks)
    assert set(spec.metric) == set(spec.tasks)
    assert spec.url.startswith("https://") and spec.license and spec.description
    assert not spec.downloads or set(spec.downloads) == set(spec.splits.values())
    assert all(url.startswith("https://") for url in spec.downloads.values())


def test_paper_metrics():
    assert get_dataset("tchunk").metric["chunk"] == "accuracy"
    assert get_dataset("conll2000").metric["chunk"] == "span_f1"
    assert get_dataset("conll2003").schemes["ner"] == "iob1"
    assert get_dataset("conll2003").default_task == "ner"


def test_unknown_dataset_suggests_the_closest_name():
    with pytest.raises(SeqTransferError, match=r"unknown dataset 'wnut' \(did you mean 'wnut17'\? known: conll2000, "):
        get_dataset("wnut")


def test_unknown_split_lists_the_splits():
    with pytest.raises(SeqTransferError, match=r"no split 'validation' \(splits: train, dev, test\)"):
        load_split("conll2000", "validation", data_dir=FIXTURES)


def test_missing_data_names_folders_and_settings(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQTRANSFER_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(SeqTransferError) as caught:
        find_dataset_folder(get_dataset("conll2003"), tmp_path / "root")
    message = str(caught.value)
    assert str(tmp_path / "root" / "conll2003_en") in message and str(tmp_path / "cache") in message
    assert "--data-dir DIR" in message and "SEQTRANSFER_DATA=DIR" in message
    assert "https://www.clips.uantwerpen.be/conll2003/ner/" in message


def test_download_into_cache_with_a_fake_downloader(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQTRANSFER_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fetched = []

    def fake_download(url: str, target: Path) -> None:
        fetched.append(url)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / "conll_tabs.conll", target)

    sentences = load_split("wnut17", "dev", downloader=fake_download)
    assert len(fetched) == 3 and sentences[0].tokens[0] == "@paulwalk"
    assert find_dataset_folder(get_dataset("wnut17")) == cache_root() / "wnut17"  # now cached: no download
    assert len(fetched) == 3


def test_failed_download_is_a_user_error(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQTRANSFER_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def offline(url: str, target: Path) -> None:
        raise OSError("network is unreachable")

    with pytest.raises(SeqTransferError, match=r"downloading https://\S+ failed .*--data-dir DIR"):
        load_split("tweebank", "train", downloader=offline)


def test_custom_dataset_column_file_with_carved_dev():
    spec = custom_dataset(FIXTURES / "conll_docstart.txt", columns="word,pos,chunk,ner", task="ner", scheme="iob1")
    assert spec.tasks == {"ner": "ner"} and spec.metric == {"ner": "span_f1"} and spec.dev_from_train
    assert [len(load_split(spec, split)) for split in ("train", "dev")] == [3, 0]
    inferred = custom_dataset(FIXTURES / "conll_tabs.conll", dev=FIXTURES / "conll_tabs.conll")
    assert inferred.tasks == {"label": "label"} and inferred.metric == {"label": "accuracy"}
    assert load_split(inferred, "dev")[0].columns["label"][0] == "O"


def test_custom_dataset_conllu_and_errors(tmp_path):
    spec = custom_dataset(FIXTURES / "sample.conllup", test=FIXTURES / "sample.conllup", task="xpos")
    assert spec.format == "conllu" and spec.tasks == {"xpos": "xpos"}
    assert load_split(spec, "test")[0].columns["xpos"] == ["I", "Rgp", "Xe"]
    with pytest.raises(SeqTransferError, match=r"missing\.conll: train file not found \(fix: .*--train PATH"):
        custom_dataset(tmp_path / "missing.conll")
    with pytest.raises(SeqTransferError, match="--columns applies to column files only"):
        custom_dataset(FIXTURES / "sample.conllu", columns="word,upos")
    with pytest.raises(SeqTransferError, match="unknown tag scheme 'bio'"):
        custom_dataset(FIXTURES / "conll_tabs.conll", scheme="bio")


def test_format_table_aligns_columns():
    table = format_table([{"split": "train", "tokens": 62730}, {"split": "dev", "tokens": 5, "ner labels": 13}])
    assert table.splitlines() == ["split  tokens  ner labels", "train  62,730           -", "dev         5          13"]


@needs_data
@pytest.mark.slow  # reads every split of every dataset (10 s)
def test_manifest_counts(loaded):
    for (name, split), (sentences, tokens) in MANIFEST_COUNTS.items():
        assert (len(loaded[name, split]), count_tokens(loaded[name, split])) == (sentences, tokens), (name, split)


@needs_data
@pytest.mark.slow  # reads every split of every dataset (10 s)
def test_carved_splits_add_up_to_the_train_file(loaded):
    for name, (sentences, tokens) in CARVED_TRAIN_FILES.items():
        train, dev = loaded[name, "train"], loaded[name, "dev"]
        assert len(train) + len(dev) == sentences and count_tokens(train) + count_tokens(dev) == tokens
        assert len(dev) == sentences // 10
    assert get_dataset("conll2000").split_names() == ["train", "dev", "test"]


@needs_data
@pytest.mark.slow  # reads every split of every dataset (10 s)
def test_manifest_label_sets(loaded):
    for (name, split, column), size in MANIFEST_LABELS.items():
        assert len(label_set(loaded[name, split], column)) == size, (name, split, column)
    carved = label_set(loaded["conll2000", "train"], "chunk") | label_set(loaded["conll2000", "dev"], "chunk")
    assert len(carved) == 22  # the whole train file has 22 chunk tags


@needs_data
@pytest.mark.slow  # reads every split of every dataset (10 s)
def test_every_task_column_is_present(loaded):
    for (name, split), sentences in loaded.items():
        spec = DATASETS[name]
        for task, column in spec.tasks.items():
            per_sentence = spec.kinds.get(task) in ("sentence", "regression")  # one label per sentence, else one per token
            assert all(len(sentence.labels(column)) == (1 if per_sentence else len(sentence.tokens)) for sentence in sentences), (name, split)


@needs_data
def test_summary_rows():
    rows = summarize("wnut17")
    assert [row["split"] for row in rows] == ["train", "dev", "test"]
    assert rows[0] == {"dataset": "wnut17", "split": "train", "sentences": 3394, "tokens": 62730, "ner labels": 13}


@needs_data
@pytest.mark.slow  # reads every split of every dataset (10 s)
def test_every_gold_tree_of_the_parsing_datasets_is_read(loaded):
    """The dependency task checks every tree: EWT and both Tweebank versions pass, roots as MANIFEST says."""
    from seqtransfer.data.trees import read_tree

    for name in ("ud_ewt", "tweebank", "tweebank_single_root"):
        trees = [read_tree(sentence) for split in ("train", "dev", "test") for sentence in loaded[name, split]]
        several = sum(tree.root_count > 1 for tree in trees)
        assert (several > 0) == (name == "tweebank"), name
    train_roots = [read_tree(sentence).root_count for sentence in loaded["tweebank", "train"]]
    assert train_roots.count(1) == 1079  # MANIFEST: 1,079 / 1,639 train tweets have one root


@needs_data
def test_an_evaluation_only_dataset_refuses_training_in_one_line():
    from seqtransfer.config import DataConfig
    from seqtransfer.corpora.task_data import load_task_data

    with pytest.raises(SeqTransferError, match="has no split 'train' \\(splits: dev, test\\)"):
        load_task_data(DataConfig(dataset="mtt_sr_sm", task="msd"))


def test_dev_can_be_carved_from_train_in_place_of_the_datasets_own(tmp_path):
    """data.dev_from_train: every 10th training sentence is the dev set (and leaves training); the
    dataset's own dev split is not read; test stays the dataset's."""
    from seqtransfer.config import DataConfig
    from seqtransfer.corpora.task_data import load_task_data

    train_file = tmp_path / "train.conll"
    train_file.write_text("".join(f"word{index} O\nName{index} B-PER\n\n" for index in range(25)), encoding="utf-8")
    paths = {"train": str(train_file), "dev": str(FIXTURES / "tiny_ner_dev.conll"), "test": str(FIXTURES / "tiny_ner_test.conll")}
    own = load_task_data(DataConfig(dataset=None, columns=["word", "ner"], scheme="iob2", **paths))
    carved = load_task_data(DataConfig(dataset=None, columns=["word", "ner"], scheme="iob2", dev_from_train=True, **paths))
    train = own.splits["train"]
    assert [sentence.tokens for sentence in carved.splits["dev"]] == [sentence.tokens for index, sentence in enumerate(train) if index % 10 == 9]
    assert len(carved.splits["dev"]) == 2 and len(carved.splits["train"]) == 23 and len(train) == 25
    assert [sentence.tokens for sentence in carved.splits["test"]] == [sentence.tokens for sentence in own.splits["test"]]
