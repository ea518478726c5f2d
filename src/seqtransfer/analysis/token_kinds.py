"""Where a run's mistakes fall by kind of token: Twitter markup, numbers, symbols or ordinary words.

A source model trained on news or web text has never seen how a tweet treebank labels its
markup (TweeBank tags an @mention PROPN or X, "RT" X, a hashtag by its role), and no label-free
method can teach it: every model it trains agrees with the source there. This analysis shows how
much of a run's error those tokens make. Each token gets the first kind whose rule matches:

1. ``url``: starts with ``http://``, ``https://`` or ``www.`` (any case);
2. ``mention``: ``@`` or ``＠`` then a letter, digit or underscore;
3. ``hashtag``: ``#`` or ``＃`` then a letter, digit or underscore;
4. ``retweet``: ``RT`` in any case, with or without a colon (``rt``, ``RT:``);
5. ``number``: digits, optionally signed or with a currency sign, with ``,``, ``.``, ``:``, ``/``
   or ``-`` between them, and an optional ``%`` (1,000.50, 12:30, -5, $5, 1/2, 5%, .5);
6. ``symbol``: no letter or digit at all (punctuation, emoticons, emoji);
7. ``word``: anything else.

Pseudo-labelled data (a self-labelling round's ``pseudo-I.conll``, word TAB label) is checked the
same way against the gold labels of the split it was drawn from (``--gold DATASET[:TASK]``): each
pseudo-labelled sentence is looked up by its tokens, and the first gold sentence with those tokens
gives its labels.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from seqtransfer.analysis.predictions import Predictions, predictions_path, read_predictions
from seqtransfer.data.tokenize import HASHTAG, MENTION, URL_START
from seqtransfer.errors import SeqTransferError, warn

KINDS = ("url", "mention", "hashtag", "retweet", "number", "symbol", "word")
_RULES = (
    ("url", re.compile("^" + URL_START, re.IGNORECASE)),
    ("mention", re.compile("^" + MENTION)),
    ("hashtag", re.compile("^" + HASHTAG)),
    ("retweet", re.compile(r"^RT:?$", re.IGNORECASE)),
    ("number", re.compile(r"^[-+±$€£]?\d*[.,]?\d+(?:[.,:/-]\d+)*%?$")),
    ("symbol", re.compile(r"^[\W_]+$")),
)


def token_kind(token: str) -> str:
    """The first kind whose rule ``token`` matches (``word`` when none does)."""
    return next((kind for kind, rule in _RULES if rule.search(token)), "word")


def run_predictions(path: str | Path, split: str) -> Predictions:
    """A run's predictions of ``split``: those of the one other dataset it was scored on (its
    ``test-on-*`` folder: a grid cell's score when the target sets ``test_on``), else its own
    ``predictions/``; or a prediction file given directly."""
    path = Path(path)
    if path.is_file():
        return read_predictions(path)
    elsewhere = sorted(path.glob(f"test-on-*/{split}.conll"))
    if len(elsewhere) > 1:
        raise SeqTransferError(f"the run was scored on {len(elsewhere)} other datasets", path=path, hint=f"pass one prediction file, e.g. {elsewhere[0]}")
    return read_predictions(elsewhere[0] if elsewhere else predictions_path(path, split))


def read_pseudo_labels(path: str | Path) -> tuple[list[list[str]], list[list[str]]]:
    """(tokens, labels) of a ``word TAB label`` file, sentences separated by blank lines."""
    path = Path(path)
    if not path.is_file():
        raise SeqTransferError("pseudo-labelled file not found", path=path, hint="pass a self-labelling round's pseudo-I.conll")
    sentences: list[list[list[str]]] = [[]]
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                if sentences[-1]:
                    sentences.append([])
                continue
            fields = line.split("\t")
            if len(fields) != 2:
                raise SeqTransferError(f"expected 'word TAB label', found {len(fields)} fields", path=path, line=number, hint="pass a self-labelling round's pseudo-I.conll")
            sentences[-1].append(fields)
    sentences = [sentence for sentence in sentences if sentence]
    return [[word for word, _ in sentence] for sentence in sentences], [[label for _, label in sentence] for sentence in sentences]


def checked_pseudo_labels(path: str | Path, gold_tokens: list[list[str]], gold_labels: list[list[str]]) -> Predictions:
    """A pseudo-labelled file as predictions: each sentence's gold labels are those of the first gold
    sentence with the same tokens; sentences found nowhere are left out (with a warning)."""
    gold_of: dict[tuple, list[str]] = {}
    for tokens, labels in zip(gold_tokens, gold_labels):
        gold_of.setdefault(tuple(tokens), labels)
    tokens, labels = read_pseudo_labels(path)
    found = [index for index, sentence in enumerate(tokens) if tuple(sentence) in gold_of]
    if not found:
        raise SeqTransferError(f"none of the {len(tokens)} pseudo-labelled sentences is in the gold data", path=path, hint="pass as --gold the dataset (and task) the unlabelled sentences came from")
    if len(found) < len(tokens):
        warn(f"{path}: {len(tokens) - len(found)} of {len(tokens)} pseudo-labelled sentences are not in the gold data; they are left out")
    return Predictions(Path(path), [tokens[index] for index in found], [gold_of[tuple(tokens[index])] for index in found], [labels[index] for index in found])


def errors_by_kind(predictions: Predictions) -> dict:
    """Per kind: tokens, their share of all tokens, accuracy, and share of all errors (percentages)."""
    tokens, wrong = Counter(), Counter()
    for sentence, gold, predicted in zip(predictions.tokens, predictions.gold, predictions.predicted):
        for token, gold_label, predicted_label in zip(sentence, gold, predicted):
            kind = token_kind(token)
            tokens[kind] += 1
            wrong[kind] += gold_label != predicted_label
    total, errors = sum(tokens.values()), sum(wrong.values())
    if not total:
        raise SeqTransferError("no tokens in the prediction file", path=predictions.path, hint="pass a run scored on a labelled split")
    kinds = {
        kind: {
            "tokens": tokens[kind],
            "share_of_tokens": 100.0 * tokens[kind] / total,
            "accuracy": 100.0 * (tokens[kind] - wrong[kind]) / tokens[kind],
            "share_of_errors": 100.0 * wrong[kind] / errors if errors else 0.0,
        }
        for kind in KINDS
        if tokens[kind]
    }
    return {"file": str(predictions.path), "tokens": total, "accuracy": 100.0 * (total - errors) / total if total else 0.0, "kinds": kinds}


def kinds_table(results: dict[str, dict]) -> list[str]:
    """Markdown: one row per kind, for each run its accuracy and share of the errors."""
    names = list(results)
    kinds = [kind for kind in KINDS if any(kind in result["kinds"] for result in results.values())]
    first = results[names[0]]
    header = ["kind", "share of tokens", *(f"{name}: acc. / share of errors" for name in names)]
    rows = [["all", "100.0 %", *(f"{results[name]['accuracy']:.2f} / 100 %" for name in names)]]
    for kind in kinds:
        cells = [f"{results[name]['kinds'][kind]['accuracy']:.1f} / {results[name]['kinds'][kind]['share_of_errors']:.1f} %" if kind in results[name]["kinds"] else "–" for name in names]
        share = first["kinds"].get(kind, {}).get("share_of_tokens")
        rows.append([kind, "–" if share is None else f"{share:.1f} %", *cells])
    read = [f"{name}: {result['file']}" for name, result in results.items()]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(row) + " |" for row in rows), "", "Read: " + "; ".join(read) + "."]
