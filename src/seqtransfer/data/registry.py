"""The dataset registry: one :class:`DatasetSpec` per dataset, in the plain dict ``DATASETS``.

Adding a dataset = one ``DatasetSpec`` plus one line in ``DATASETS``. Folder names are those of
the shared data root (``SEQTRANSFER_DATA``); see ``locate.py`` for how the root is found.

Datasets without an official dev split set ``dev_from_train``: their dev set is carved from the
train file deterministically, dev = every 10th sentence (sentence index % 10 == 9, 0-based),
train = the other sentences (see ``locate.carve_dev``).

:func:`load_split` reads one split of a registered dataset or of :func:`custom_dataset` (a user's
own files, built in ``user_files.py`` and imported back here); ``locate.py`` finds and reads the
files, and ``mtt_mapping.py`` maps the training tags of a spec with ``relabel_train``.

``downloads`` is filled only when direct URLs give exactly the files of every split; derived
files (made for this project) and research-only corpora (CoNLL-2003, Penn Treebank, CoNLL-2000's
WSJ text, shipped only gzipped) have none, and their ``url`` says where to obtain them.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from seqtransfer.data.corpus import Sentence
from seqtransfer.data.dataset_spec import CARVE_NOTE, CONLLU_EXTENSIONS, DEPENDENCY, SCHEMES, TRAIN_DEV_TEST, DatasetSpec, standard_splits  # noqa: F401 - re-exported
from seqtransfer.data.locate import Downloader, read_split
from seqtransfer.data.mtt import MTT_HR_NEWS, MTT_HR_SM, MTT_SL_NEWS, MTT_SL_SM, MTT_SR_NEWS, MTT_SR_NEWS_UD, MTT_SR_SM
from seqtransfer.data.mtt_mapping import relabelled
from seqtransfer.data.user_files import are_scores, choose_label_column, custom_columns, custom_dataset, custom_tsv_dataset, existing_paths, tsv_field_values
from seqtransfer.errors import SeqTransferError

# The public names, those of dataset_spec.py and user_files.py included (imported back for callers).
__all__ = [
    "UD_EWT_RAW",
    "TWEEBANK_RAW",
    "WNUT17_RAW",
    "ARK_RAW",
    "CONLL2000",
    "CONLL2003",
    "UD_EWT",
    "PTB_SAMPLE",
    "TWEEBANK",
    "TWEEBANK_SINGLE_ROOT",
    "WNUT17",
    "TPOS",
    "ARK",
    "ARK_OCT27",
    "TCHUNK",
    "TREC6",
    "SST2",
    "MRPC",
    "SICK",
    "STSB",
    "DATASETS",
    "get_dataset",
    "resolve_spec",
    "load_split",
    "existing_paths",
    "custom_dataset",
    "custom_tsv_dataset",
    "tsv_field_values",
    "are_scores",
    "custom_columns",
    "choose_label_column",
    "CARVE_NOTE",
    "CONLLU_EXTENSIONS",
    "DEPENDENCY",
    "SCHEMES",
    "TRAIN_DEV_TEST",
    "DatasetSpec",
    "standard_splits",
]

UD_EWT_RAW = "https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/r2.16/"
TWEEBANK_RAW = "https://raw.githubusercontent.com/Oneplus/Tweebank/2bdd029fb16321c715c00480b7df58df22901e18/"
WNUT17_RAW = "https://raw.githubusercontent.com/leondz/emerging_entities_17/e52a2d2a71ac1a051ca2d532eef28653c5c02603/"
ARK_RAW = "https://raw.githubusercontent.com/brendano/ark-tweet-nlp/72755ccd1b29ba8e1dbbb49efe57ba9723c0013b/data/twpos-data-v0.3/"
CONLL2000 = DatasetSpec(
    name="conll2000",
    folder="conll2000",
    format="conll",
    splits={"train": "train.txt", "test": "test.txt"},
    columns=("word", "pos", "chunk"),
    tasks={"chunk": "chunk", "pos": "pos"},
    schemes={"chunk": "iob2", "pos": "none"},
    metric={"chunk": "span_f1", "pos": "accuracy"},
    url="https://www.clips.uantwerpen.be/conll2000/chunking/",
    downloads={},  # only train.txt.gz / test.txt.gz are published (and the WSJ text is LDC's)
    license="research use only (WSJ text, (C) LDC; redistributed by NLTK)",
    description="CoNLL-2000 chunking, WSJ sections 15-18 (train) / 20 (test); IOB2 chunk tags." + CARVE_NOTE,
    dev_from_train=True,
)

CONLL2003 = DatasetSpec(
    name="conll2003",
    folder="conll2003_en",
    format="conll",
    splits={"train": "train.txt", "dev": "dev.txt", "test": "test.txt"},
    columns=("word", "pos", "chunk", "ner"),
    tasks={"ner": "ner", "pos": "pos", "chunk": "chunk"},
    schemes={"ner": "iob1", "chunk": "iob1", "pos": "none"},
    metric={"ner": "span_f1", "pos": "accuracy", "chunk": "span_f1"},
    url="https://www.clips.uantwerpen.be/conll2003/ner/",
    downloads={},  # Reuters RCV1 text: needs the Reuters/NIST agreement, never shipped
    license="research use only (Reuters RCV1 agreement); do not re-publish",
    description="CoNLL-2003 English NER (Reuters news), eng.train/testa/testb; NER and chunk tags are IOB1.",
)

UD_EWT = DatasetSpec(
    name="ud_ewt",
    folder="ud_english_ewt",
    format="conllu",
    splits=standard_splits("conllu"),
    columns=None,
    tasks={"upos": "upos", "xpos": "xpos", DEPENDENCY: "deprel"},
    schemes={"upos": "none", "xpos": "none"},
    metric={"upos": "accuracy", "xpos": "accuracy", DEPENDENCY: "attachment"},
    url="https://github.com/UniversalDependencies/UD_English-EWT/tree/r2.16",
    downloads={f"{split}.conllu": f"{UD_EWT_RAW}en_ewt-ud-{split}.conllu" for split in TRAIN_DEV_TEST},
    license="CC BY-SA 4.0",
    description="UD English Web Treebank v2.16 (web text): UPOS, XPOS, dependency trees (single root).",
    kinds={DEPENDENCY: DEPENDENCY},
)

PTB_SAMPLE = DatasetSpec(
    name="ptb_sample",
    folder="ptb_wsj_nltk_sample",
    format="conll",
    splits={"train": "derived/train.tsv", "dev": "derived/dev.tsv", "test": "derived/test.tsv"},
    columns=("word", "pos"),
    tasks={"pos": "pos"},
    schemes={"pos": "none"},
    metric={"pos": "accuracy"},
    url="https://github.com/nltk/nltk_data/blob/gh-pages/packages/corpora/treebank.zip",
    downloads={},  # derived split of the NLTK sample, made for this project
    license="non-commercial use only (10% fragment of the Penn Treebank, (C) LDC 1995, via NLTK)",
    description="Penn Treebank WSJ 10% sample (NLTK 'treebank'), traces removed; derived 80/10/10 document split.",
)

TWEEBANK = DatasetSpec(
    name="tweebank",
    folder="tweebank_v2",
    format="conllu",
    splits=standard_splits("conllu"),
    columns=None,
    tasks={"upos": "upos", DEPENDENCY: "deprel"},
    schemes={"upos": "none"},
    metric={"upos": "accuracy", DEPENDENCY: "attachment"},
    url="https://github.com/Oneplus/Tweebank",
    downloads={f"{split}.conllu": f"{TWEEBANK_RAW}en-ud-tweet-{split}.conllu" for split in TRAIN_DEV_TEST},
    license="CC BY-NC-SA 4.0",
    description="Tweebank v2 (Liu et al. 2018), UD-annotated tweets; original files (several roots per tweet).",
    kinds={DEPENDENCY: DEPENDENCY},
)

TWEEBANK_SINGLE_ROOT = DatasetSpec(
    name="tweebank_single_root",
    folder="tweebank_v2",
    format="conllu",
    splits={split: f"converted_single_root/{split}.conllu" for split in TRAIN_DEV_TEST},
    columns=None,
    tasks={DEPENDENCY: "deprel", "upos": "upos"},
    schemes={"upos": "none"},
    metric={DEPENDENCY: "attachment", "upos": "accuracy"},
    url="https://github.com/Oneplus/Tweebank/tree/dev/converted",
    downloads={f"converted_single_root/{split}.conllu": f"{TWEEBANK_RAW}converted/en-ud-tweet-{split}.fixed.conllu" for split in TRAIN_DEV_TEST},
    license="CC BY-NC-SA 4.0",
    description="Tweebank v2 converted by R. van der Goot (MaChAmp): one tree per tweet (extra roots attached "
    "with parataxis), relation subtypes stripped; what the official CoNLL 2018 evaluator accepts.",
    kinds={DEPENDENCY: DEPENDENCY},
)

WNUT17 = DatasetSpec(
    name="wnut17",
    folder="wnut17",
    format="conll",
    splits=standard_splits("conll"),
    columns=("word", "ner"),
    tasks={"ner": "ner"},
    schemes={"ner": "iob2"},
    metric={"ner": "span_f1"},
    url="https://github.com/leondz/emerging_entities_17",
    downloads={"train.conll": WNUT17_RAW + "wnut17train.conll", "dev.conll": WNUT17_RAW + "emerging.dev.conll", "test.conll": WNUT17_RAW + "emerging.test.annotated"},
    license="CC BY 4.0",
    description="WNUT-17 emerging and rare entities (tweets, Reddit, YouTube, StackExchange); 6 types, some with hyphens (creative-work).",
)

TPOS = DatasetSpec(
    name="tpos",
    folder="tpos_ritter",
    format="conll",
    splits={"train": "derived/train.dedup.conll", "dev": "dev.conll", "test": "test.conll"},
    columns=("word", "pos"),
    tasks={"pos": "pos"},
    schemes={"pos": "none"},
    metric={"pos": "accuracy"},
    url="https://github.com/aritter/twitter_nlp",
    downloads={},  # train is derived (duplicates removed), made for this project
    license="GPL-3.0 (repository licence of aritter/twitter_nlp; no separate data licence)",
    description="T-POS (Ritter et al. 2011) with the Derczynski et al. 2013 split; train deduplicated (derived).",
)

ARK = DatasetSpec(
    name="ark",
    folder="ark_twpos",
    format="conll",
    splits={"train": "oct27.conll", "test": "daily547.conll"},
    columns=("word", "pos"),
    tasks={"pos": "pos"},
    schemes={"pos": "none"},
    metric={"pos": "accuracy"},
    url="https://github.com/brendano/ark-tweet-nlp",
    downloads={"oct27.conll": ARK_RAW + "oct27.conll", "daily547.conll": ARK_RAW + "daily547.conll"},
    license="CC BY (data, ark-tweet-nlp README v0.2.1+)",
    description="ARK Twitter POS, Owoputi et al. 2013 setting: train = OCT27 (all), test = DAILY547." + CARVE_NOTE,
    dev_from_train=True,
)

ARK_OCT27 = DatasetSpec(
    name="ark_oct27",
    folder="ark_twpos",
    format="conll",
    splits=standard_splits("conll"),
    columns=("word", "pos"),
    tasks={"pos": "pos"},
    schemes={"pos": "none"},
    metric={"pos": "accuracy"},
    url="https://github.com/brendano/ark-tweet-nlp",
    downloads={f"{split}.conll": f"{ARK_RAW}oct27.splits/oct27.{split}" for split in TRAIN_DEV_TEST},
    license="CC BY (data, ark-tweet-nlp README v0.2.1+)",
    description="ARK Twitter POS, Gimpel et al. 2011 OCT27 train/dev/test splits.",
)

TCHUNK = DatasetSpec(
    name="tchunk",
    folder="tchunk_ritter",
    format="conll",
    splits={"train": "derived/train.txt", "dev": "derived/dev.txt", "test": "derived/test.txt"},
    columns=("word", "chunk"),
    tasks={"chunk": "chunk"},
    # Lower-case IOB2-style tags (b-np, i-vp, o), but the original annotation has 17 chunks that
    # start with i- (10 train, 2 dev, 5 test), so the tags are declared as plain labels rather
    # than rejected as broken IOB2; chunk F1 (conlleval rules) still reads them correctly.
    schemes={"chunk": "none"},
    metric={"chunk": "accuracy"},  # the paper reports token accuracy for T-Chunk
    url="https://github.com/aritter/twitter_nlp",
    downloads={},  # derived split (tweets assigned to the T-POS splits), made for this project
    license="GPL-3.0 (repository licence of aritter/twitter_nlp; no separate data licence)",
    description="T-Chunk (Ritter et al. 2011), lower-case IOB2-style tags with 17 i- chunk starts; derived split following T-POS.",
)

TREC6 = DatasetSpec(
    name="trec6",
    folder="trec6",
    format="tsv",
    splits={"train": "derived/train.tsv", "test": "derived/test.tsv"},
    columns=("coarse", "fine", "text"),
    header=True,
    tasks={"coarse": "coarse", "fine": "fine"},
    schemes={},
    metric={"coarse": "accuracy", "fine": "accuracy"},
    kinds={"coarse": "sentence", "fine": "sentence"},
    url="https://cogcomp.seas.upenn.edu/Data/QA/QC/",
    downloads={},  # derived TSV (UTF-8, from the Latin-1 originals), made for this project
    license="none stated",
    description="TREC question classification (Li & Roth 2002): 6 coarse / 50 fine question types." + CARVE_NOTE,
    dev_from_train=True,
)

SST2 = DatasetSpec(
    name="sst2",
    folder="sst2",
    format="tsv",
    splits={"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
    columns=("text", "label"),
    tasks={"sentiment": "label"},
    schemes={},
    metric={"sentiment": "accuracy"},
    kinds={"sentiment": "sentence"},
    url="https://nlp.stanford.edu/sentiment/",
    downloads={},
    license="none stated",
    description="SST-2, binary sentiment of movie-review sentences (0 negative, 1 positive); labelled test (SentEval).",
)

MRPC = DatasetSpec(
    name="mrpc",
    folder="mrpc",
    format="tsv",
    splits={"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
    columns=("quality", "_id1", "_id2", "text", "text_b"),
    header=True,
    tasks={"paraphrase": "quality"},
    schemes={},
    metric={"paraphrase": "accuracy"},  # per-class F1 of "1" is the paraphrase F1
    kinds={"paraphrase": "sentence"},
    url="https://www.microsoft.com/en-us/download/details.aspx?id=52398",
    downloads={},
    license="Microsoft Shared Source License (LICENSE-SOURCE.htm)",
    description="MRPC (GLUE split; labelled original test): sentence pairs, 1 = paraphrase; untokenised text split at spaces.",
)

SICK = DatasetSpec(
    name="sick",
    folder="sick",
    format="tsv",
    splits={"train": "train.txt", "dev": "dev.txt", "test": "test.txt"},
    columns=("_pair", "text", "text_b", "relatedness", "entailment"),
    header=True,
    tasks={"entailment": "entailment", "relatedness": "relatedness"},
    schemes={},
    metric={"entailment": "accuracy", "relatedness": "correlation"},
    kinds={"entailment": "sentence", "relatedness": "regression"},
    url="https://marcobaroni.org/composes/sick.html",
    downloads={},
    license="CC BY-NC-SA 3.0",
    description="SICK (SemEval-2014 Task 1): sentence pairs, entailment (NEUTRAL / ENTAILMENT / CONTRADICTION) and relatedness (1-5).",
)

STSB = DatasetSpec(
    name="stsb",
    folder="stsb",
    format="tsv",
    splits={"train": "train.csv", "dev": "dev.csv", "test": "test.csv"},
    columns=("_genre", "_file", "_year", "_id", "score", "text", "text_b"),
    extra_fields=True,  # some rows carry two more source fields
    tasks={"similarity": "score"},
    schemes={},
    metric={"similarity": "correlation"},
    kinds={"similarity": "regression"},
    url="https://ixa2.si.ehu.eus/stswiki/index.php/STSbenchmark",
    downloads={},
    license="mixed sources, research use (LICENSE-SOURCE.txt)",
    description="STS Benchmark (Cer et al. 2017): sentence pairs scored 0-5 for similarity (TAB-separated despite .csv).",
)

DATASETS: dict[str, DatasetSpec] = {
    "conll2000": CONLL2000,
    "conll2003": CONLL2003,
    "ud_ewt": UD_EWT,
    "ptb_sample": PTB_SAMPLE,
    "tweebank": TWEEBANK,
    "tweebank_single_root": TWEEBANK_SINGLE_ROOT,
    "wnut17": WNUT17,
    "tpos": TPOS,
    "ark": ARK,
    "ark_oct27": ARK_OCT27,
    "tchunk": TCHUNK,
    "trec6": TREC6,
    "sst2": SST2,
    "mrpc": MRPC,
    "sick": SICK,
    "stsb": STSB,
    "mtt_sl_news": MTT_SL_NEWS,
    "mtt_hr_news": MTT_HR_NEWS,
    "mtt_sr_news": MTT_SR_NEWS,
    "mtt_sr_news_ud": MTT_SR_NEWS_UD,
    "mtt_sl_sm": MTT_SL_SM,
    "mtt_hr_sm": MTT_HR_SM,
    "mtt_sr_sm": MTT_SR_SM,
}


def get_dataset(name: str) -> DatasetSpec:
    """The registered dataset called ``name``; an unknown name suggests the closest ones."""
    if name in DATASETS:
        return DATASETS[name]
    close = difflib.get_close_matches(name, DATASETS, n=1, cutoff=0.5)
    suggestion = f"did you mean '{close[0]}'? " if close else ""
    raise SeqTransferError(f"unknown dataset '{name}' ({suggestion}known: {', '.join(DATASETS)})", hint="pick a registered name, or pass your own files with --train/--dev/--test")


def resolve_spec(name_or_spec: str | DatasetSpec) -> DatasetSpec:
    """A registered name or an already-built spec (e.g. from :func:`custom_dataset`)."""
    return get_dataset(name_or_spec) if isinstance(name_or_spec, str) else name_or_spec


def load_split(name_or_spec: str | DatasetSpec, split: str, data_dir: str | Path | None = None, downloader: Downloader | None = None) -> list[Sentence]:
    """Read one split of a dataset with the right reader, carving dev from train when needed and
    mapping the training tags of a spec with ``relabel_train`` (``mtt_mapping.py``)."""
    spec = resolve_spec(name_or_spec)
    sentences = read_split(spec, split, data_dir, downloader)
    if spec.relabel_train and split == "train":
        sentences = relabelled(spec, sentences, data_dir)
    return sentences
