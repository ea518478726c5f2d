"""Morphosyntactic tagging of Slovene, Croatian and Serbian (PretRand paper §5, Tables 4–5's MST half).

The VarDial 2018 MTT splits are not available; these entries read the substitutes described in
``../shared/datasets/MANIFEST.md`` §10 (babushka-bench / CLASSLA / UD files). The ``msd`` task is
XPOS, MULTEXT-East MSD tags (``Ncmsn``; social media adds ``Xa`` mention, ``Xh`` hashtag,
``Xe`` emoticon, ``Xw`` URL); Janes-Tag and ReLDI merge 1:n tokens into one token whose tag is
the parts joined by a space (``Q Vmpr1s``), kept as one label (prediction files write the space
as ``_``). The CoNLL-U Plus files name their columns in ``# global.columns`` (Janes-Tag's
trailing empty field is read as no field).

- ``mtt_hr_news``'s training file is SETimes.HR+ in the older MTE-v4 style (10.6 % of its tokens
  carry tags the UD/hr500k dev and test sets never use): its tags are mapped when read
  (``data/mtt_mapping.py``); its CPOS column is not UPOS, so it serves ``msd`` only.
- ``mtt_sr_news`` is SETimes.SR split by babushka-bench (FORM, LEMMA, XPOS only); its training set
  overlaps UD Serbian-SET dev/test, so ``mtt_sr_news_ud`` trains on the deduplicated file and
  evaluates on UD's dev and test.
- ``mtt_sr_sm`` has no training split (ReLDI-NormTagNER-sr's train is not available).
"""

from __future__ import annotations

from seqtransfer.data.dataset_spec import DatasetSpec

CLARIN = "https://www.clarin.si/repository/xmlui/"
BABUSHKA = "https://github.com/clarinsi/babushka-bench"
MSD_UPOS = {"msd": "xpos", "upos": "upos"}


def mtt_spec(
    name: str,
    folder: str,
    splits: dict[str, str],
    tasks: dict[str, str],
    url: str,
    license: str,
    description: str,
    ner: bool = False,
    relabel_train: str | None = None,
    shares_sentences_with: tuple[str, ...] = (),
) -> DatasetSpec:
    """An MTT dataset read as CoNLL-U (Plus): MSD/UPOS accuracy (and, with ``ner``, entity F1 of NER_TYPE)."""
    return DatasetSpec(
        name=name,
        folder=folder,
        format="conllu",
        splits=splits,
        columns=None,
        tasks=tasks,
        schemes={column: ("iob2" if task == "ner" else "none") for task, column in tasks.items()},
        metric={task: ("span_f1" if task == "ner" else "accuracy") for task in tasks},
        url=url,
        downloads={},
        license=license,
        description=description,
        relabel_train=relabel_train,
        shares_sentences_with=shares_sentences_with,
    )


MTT_SL_NEWS = mtt_spec(
    "mtt_sl_news",
    "mtt_sl_news",
    {"train": "derived/train.conllu", "dev": "dev.conllu", "test": "test.conllu"},
    MSD_UPOS,
    "https://github.com/UniversalDependencies/UD_Slovenian-SSJ",
    "train CC BY-NC-SA 4.0 (ssj500k 2.1); dev/test CC BY-SA 4.0",
    "Slovene standard: train = ssj500k 2.1 sample (babushka 10+10 %, minus UD dev/test sentences), dev/test = UD Slovenian-SSJ; MSD, UPOS.",
)
MTT_HR_NEWS = mtt_spec(
    "mtt_hr_news",
    "mtt_hr_news",
    {"train": "derived/train.conll", "dev": "dev.conllu", "test": "test.conllu"},
    {"msd": "xpos"},
    "https://github.com/ffnlp/sethr",
    "CC BY-NC-SA 4.0 (news.hr); dev/test CC BY-SA 4.0",
    "Croatian standard: train = SETimes.HR+ (older MTE-v4 MSDs, mapped to the hr500k tagset: data/mtt_mapping.py), dev/test = UD Croatian-SET; MSD.",
    relabel_train="hr_news_to_hr500k",
)
MTT_SR_NEWS = mtt_spec(
    "mtt_sr_news",
    "mtt_sr_news",
    {"train": "train.conllu", "dev": "dev.conllu", "test": "test.conllu"},
    {"msd": "xpos"},
    BABUSHKA,
    "CC BY-SA 4.0",
    "Serbian standard: SETimes.SR 1.0, babushka-bench random document split; MSD.",
    shares_sentences_with=("mtt_sr_news_ud",),
)  # 334 / 361 of its train sentences are UD Serbian-SET dev / test sentences
MTT_SR_NEWS_UD = mtt_spec(
    "mtt_sr_news_ud",
    "mtt_sr_news",
    {"train": "derived/train.dedup_vs_ud.conllu", "dev": "ud_sr_set/dev.conllu", "test": "ud_sr_set/test.conllu"},
    {"msd": "xpos"},
    "https://github.com/UniversalDependencies/UD_Serbian-SET",
    "CC BY-SA 4.0",
    "Serbian standard for UD evaluation: SETimes.SR train minus the sentences of UD Serbian-SET dev/test; dev/test = UD Serbian-SET; MSD.",
)
MTT_SL_SM = mtt_spec(
    "mtt_sl_sm",
    "mtt_sl_sm",
    {"train": "train.conllup", "dev": "dev.conllup", "test": "test.conllup"},
    MSD_UPOS,
    BABUSHKA,
    "CC BY-SA 4.0",
    "Slovene social media: Janes-Tag 2.1, babushka-bench random sentence split (tweets, blogs, forums, comments); MSD, UPOS.",
)
MTT_HR_SM = mtt_spec(
    "mtt_hr_sm",
    "mtt_hr_sm",
    {"train": "derived/train.conllup", "dev": "derived/dev.conllup", "test": "derived/test.conllup"},
    {**MSD_UPOS, "ner": "ner_type"},
    BABUSHKA,
    "CC BY-SA 4.0",
    "Croatian social media: ReLDI-NormTagNER-hr (repaired babushka files), random text split; MSD, UPOS, NER (IOB2).",
    ner=True,
)
MTT_SR_SM = mtt_spec(
    "mtt_sr_sm",
    "mtt_sr_sm",
    {"dev": "dev.conllu", "test": "test.conllu"},
    MSD_UPOS,
    "https://github.com/clarinsi/classla-training",
    "CC BY-SA 4.0",
    "Serbian social media: ReLDI-NormTagNER-sr, CLASSLA dev/test only (no training split available); MSD, UPOS.",
)
