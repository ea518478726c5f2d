"""Diagnostic probes of an encoder's layers (To-tune-or-not-to-tune paper, Figure 1).

For a run with a Transformer encoder (``model.encoder``): for every layer (the embeddings and each
of the L layers), a probe learns the run's labels from that layer's vectors on the training set
and is scored on a split. "before" probes the pretrained encoder; for a fine-tuned run, "after"
probes the run's own encoder: how fine-tuning changed what each layer holds.

- tagging runs: a logistic-regression probe (one linear layer, full-batch L-BFGS) on each token's
  vector, scored by token accuracy;
- sentence classification: the same probe on each sentence's vector (the mean of its token
  vectors; a pair A [SEP] B: [u; v; |u - v|; u * v] of the two texts' means, or with
  ``pair_vector="mean"`` the mean over both texts' tokens, the paper's "mean of the hidden
  activations of each token of the sequence(s)"), scored by accuracy;
- regression (STS-B, SICK-R): a linear probe (ridge regression, closed form) on the same sentence
  vectors, scored by Pearson's r (x 100).

For classification runs (tags or sentence labels) the mutual information between each layer's
vectors and the labels on the split is estimated too (the paper's Figure 2;
``analysis/mutual_information.py``), with the same labels shuffled beside it as the paper's sanity
check.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from seqtransfer.analysis.figures import new_figure, save_figure
from seqtransfer.analysis.mutual_information import NEIGHBOURS, estimated_points, mutual_information, random_vectors, sampled, shuffled
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.tsv import PAIR_SEPARATOR
from seqtransfer.embeddings.feature_cache import cached_features
from seqtransfer.embeddings.recurrent_lm import FIRST_CHARACTER, read_vocabulary, texts_apart_arrays, token_layer_arrays
from seqtransfer.embeddings.transformer import encode_sentences_with, encoder_path, tokenizer_of
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_json
from seqtransfer.rundir import encoder_weights, load_run

if TYPE_CHECKING:  # annotations only: matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure


def layer_vectors(run, tokens: list[list[str]], which: str) -> list[np.ndarray]:
    """Per sentence (T, L + 1, H): the pretrained encoder's vectors, or the fine-tuned run's, a pair
    read as the run read it (jointly, or each text alone: ``model.pair_encoding``)."""
    config = run.config.model
    # pairs read the token types the run read: fine-tuning always gave them; features since encoder_segments
    segments = config.encoder_mode == "finetune" or run.vocabularies.encoder_segments
    separate = config.pair_encoding == "separate"  # each text of a pair read alone, as the run read it
    if which == "before":
        return cached_features(config.encoder, tokens, config.encoder_pooling, segments, separate=separate)
    if getattr(type(run.model), "encoder_family", None) == "bilstm_lm":  # our recurrent LM, fine-tuned: its three layers
        characters = {character: index + FIRST_CHARACTER for index, character in enumerate(read_vocabulary(encoder_path(config.encoder))[1])}
        return (texts_apart_arrays if separate else token_layer_arrays)(run.model.encoder, characters, tokens)
    encoder = run.model.encoder
    encoder.config.output_hidden_states = True
    encoder.eval()
    return encode_sentences_with(tokenizer_of(config.encoder), encoder, tokens, config.encoder_pooling, segments, separate)


def probe_accuracy(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor, classes: int, steps: int = 100) -> float:
    """Token accuracy (percent) of a logistic regression trained with L-BFGS (a little l2)."""
    torch.manual_seed(0)
    mean, scale = train_x.mean(0), train_x.std(0) + 1e-6
    train_x, test_x = (train_x - mean) / scale, (test_x - mean) / scale
    probe = torch.nn.Linear(train_x.size(1), classes)
    optimizer = torch.optim.LBFGS(probe.parameters(), max_iter=steps, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(probe(train_x), train_y) + 1e-4 * probe.weight.pow(2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        return 100.0 * float((probe(test_x).argmax(-1) == test_y).float().mean())


def probe_correlation(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor, ridge: float = 1.0) -> float:
    """Pearson's r (x 100) of a ridge regression (standardised inputs, closed form) on the test vectors."""
    mean, scale = train_x.mean(0), train_x.std(0) + 1e-6
    train_x, test_x = (train_x - mean) / scale, (test_x - mean) / scale
    train_x, test_x = (torch.cat([x, x.new_ones(len(x), 1)], 1).double() for x in (train_x, test_x))
    weights = torch.linalg.solve(train_x.T @ train_x + ridge * torch.eye(train_x.size(1), dtype=train_x.dtype), train_x.T @ train_y.double())
    predicted = test_x @ weights
    return 100.0 * float(torch.corrcoef(torch.stack([predicted, test_y.double()]))[0, 1])


def mean_or_zeros(vectors: np.ndarray) -> np.ndarray:
    """(T, L + 1, H) -> (L + 1, H): the mean over tokens (zeros for none)."""
    return vectors.mean(0) if len(vectors) else np.zeros(vectors.shape[1:], dtype=vectors.dtype)


PAIR_VECTORS = ("compared", "mean")  # a pair's probe vector: [u; v; |u - v|; u * v] of its texts' means | the mean over both (the paper's)


def sentence_vectors(vectors: list[np.ndarray], tokens: list[list[str]], pair_vector: str = "compared") -> np.ndarray:
    """Per sentence (L + 1, F): the mean of its token vectors; a pair's [u; v; |u - v|; u * v] of its
    texts' means (``compared``), or the mean over both texts' tokens, the [SEP] left out (``mean``)."""
    rows = []
    for sentence, words in zip(vectors, tokens):
        if PAIR_SEPARATOR in words and pair_vector == "mean":
            rows.append(mean_or_zeros(sentence[[word != PAIR_SEPARATOR for word in words]]))
        elif PAIR_SEPARATOR in words:
            cut = words.index(PAIR_SEPARATOR)
            first, second = mean_or_zeros(sentence[:cut]), mean_or_zeros(sentence[cut + 1 :])
            rows.append(np.concatenate([first, second, np.abs(first - second), first * second], axis=-1))
        else:
            rows.append(mean_or_zeros(sentence))
    return np.stack(rows)


PROBED_KINDS = ("tagging", "sentence", "regression")


def probe_data(run, data, split: str, pair_vector: str = "compared") -> tuple:
    """(the probe's training targets, its test targets, the number of classes or None, per-split vectors from layer vectors)."""
    kind = run.model.task_kind
    sentence = functools.partial(sentence_vectors, pair_vector=pair_vector)
    if kind == "regression":
        targets = [torch.tensor([scores[0] for scores in data.gold(name)], dtype=torch.float32) for name in ("train", split)]
        return (*targets, None, sentence)
    flat = [[label for sentence in data.gold(name) for label in sentence] for name in ("train", split)]
    labels = {label: index for index, label in enumerate(sorted(set(flat[0])))}
    targets = [torch.tensor([labels.get(label, -1) for label in values]) for values in flat]
    vectors = (lambda layers, tokens: np.concatenate(layers)) if kind == "tagging" else sentence
    return (*targets, len(labels), vectors)


def fewest(*limits: int | None) -> int | None:
    """The smallest of the limits given (None: no limit)."""
    given = [limit for limit in limits if limit]
    return min(given) if given else None


def probe_layers(run_directory: str | Path, split: str = "dev", max_train_sentences: int | None = None, data_dir: str | None = None, pair_vector: str = "compared") -> dict:
    """{"layers": L + 1, "metric": ..., "before": [score per layer], "after": [...] for a fine-tuned run;
    for classification, "mutual_information": {"before": [nats per layer], "before_random_labels": [...], ...}}."""
    from dataclasses import replace

    run = load_run(run_directory)
    if not run.config.model.encoder:
        raise SeqTransferError("probes read an encoder's layers (a Transformer or our recurrent LM); this run has none", path=run_directory, hint="pass a run trained with model.encoder")
    if run.model.task_kind not in PROBED_KINDS:
        raise SeqTransferError(
            f"probes learn tags, sentence labels or scores; this is a {run.model.task_kind} run", path=run_directory, hint="pass a tagging, sentence classification or regression run"
        )
    limit = fewest(max_train_sentences, run.config.data.max_train_sentences)  # never more than the run trained on
    data = load_task_data(replace(run.config.data, data_dir=data_dir or run.config.data.data_dir, max_train_sentences=limit), ("train", split))
    if split not in data.splits:
        raise SeqTransferError(f"the run's data has no {split} split", hint="pass --split dev or test")
    train_y, test_y, classes, vectors_of = probe_data(run, data, split, pair_vector)
    metric = "pearson" if classes is None else "accuracy"
    result = {
        "run": str(run_directory),
        "encoder": Path(str(run.config.model.encoder)).name,
        **encoder_weights(run.config.model),  # the fingerprint of the encoder's folder the run read (none in a run trained before runs kept it)
        "task": data.task,
        "split": split,
        "metric": metric,
        "labels": classes,
        "sentence": run.model.task_kind != "tagging",
        "pair_vector": pair_vector,
        "train_sentences": len(data.tokens("train")),  # the run's own training sentences unless asked for fewer
    }
    for which in ("before", "after") if run.config.model.encoder_mode == "finetune" else ("before",):
        train_vectors = vectors_of(layer_vectors(run, data.tokens("train"), which), data.tokens("train")).astype(np.float32)  # (N, L + 1, F)
        test_vectors = vectors_of(layer_vectors(run, data.tokens(split), which), data.tokens(split)).astype(np.float32)
        result["layers"] = train_vectors.shape[1]
        scores = []
        for layer in range(train_vectors.shape[1]):
            train_x, test_x = torch.from_numpy(train_vectors[:, layer]), torch.from_numpy(test_vectors[:, layer])
            score = probe_correlation(train_x, train_y, test_x, test_y) if classes is None else probe_accuracy(train_x, train_y, test_x, test_y, classes)
            scores.append(round(score, 2))
        result[which] = scores
        if classes is not None:
            result.setdefault("mutual_information", {"neighbours": NEIGHBOURS}).update(layer_information(test_vectors, test_y, which, random_vectors_too=which == "before"))
    return result


def layer_information(vectors: np.ndarray, labels: torch.Tensor, which: str, random_vectors_too: bool = False) -> dict:
    """{which: [I(H; Y) per layer], which_random_labels: [...]} in nats, on the split's vectors (N, L + 1, F), and
    with ``random_vectors_too`` random_vectors_random_labels: I (the same for every stage: asked of one); labels the
    training set never had (-1) are left out, and a tagging split is sampled to MAX_POINTS. The paper's two sanity
    checks: each layer against shuffled labels, and standard normal vectors of the layers' width against them
    (both near 0)."""
    known = labels >= 0
    vectors, labels = sampled(torch.from_numpy(vectors)[known], labels[known])
    random_labels = shuffled(labels)
    information = {
        "points": estimated_points(labels),
        which: [round(mutual_information(vectors[:, layer], labels), 4) for layer in range(vectors.size(1))],
        f"{which}_random_labels": [round(mutual_information(vectors[:, layer], random_labels), 4) for layer in range(vectors.size(1))],
    }
    if random_vectors_too:
        information["random_vectors_random_labels"] = round(mutual_information(random_vectors(vectors[:, 0].shape), random_labels), 4)
    return information


PROBES_KEYS = ("layers", "before", "metric", "split")


def probes_of(source: str | Path) -> dict:
    """The probes of a run (``probe_layers``), or those ``analyze probes --output`` saved (a probes.json)."""
    path = Path(source)
    if path.suffix != ".json":
        return probe_layers(path)
    if not path.is_file():
        raise SeqTransferError("no such probes file", path=path, hint="pass a run folder, or the probes.json that `analyze probes --output DIR` wrote")
    try:
        result = read_json(path)
    except (ValueError, UnicodeDecodeError) as error:
        raise SeqTransferError(f"not a probes file: {error}", path=path, hint="pass the probes.json that `analyze probes --output DIR` wrote") from None
    missing = [key for key in PROBES_KEYS if not isinstance(result, dict) or key not in result]
    if missing:
        raise SeqTransferError(f"not a probes file: it lacks {', '.join(missing)}", path=path, hint="pass the probes.json that `analyze probes --output DIR` wrote")
    return result


def draw_probes(result: dict, path: Path) -> None:
    """The probes figure as ``path`` .png and .svg."""
    save_figure(probes_figure(result), path.with_suffix(""))


def probes_figure(result: dict) -> Figure:
    """Probe score per layer, before (and after) fine-tuning (the To-tune paper's Figure 1), and beside
    it, for classification, the mutual information with the labels (its Figure 2)."""
    information = result.get("mutual_information")
    figure = new_figure(11 if information else 6, 3.5)
    axes = figure.subplots(1, 2 if information else 1, squeeze=False)
    layers = range(result["layers"])
    measure = "Pearson's r x 100" if result.get("metric") == "pearson" else "accuracy (%)"
    draw_per_layer(axes[0][0], result, layers, f"probe {measure} on {result['split']}")
    if information:
        draw_per_layer(axes[0][1], information, layers, f"I(H; Y) on {result['split']} (nats)", fine_tuned="after" in result)
        for which, colour in (("before", "C0"), ("after", "C1")):  # each stage's colour, dotted and faint
            if f"{which}_random_labels" in information:
                axes[0][1].plot(layers, information[f"{which}_random_labels"], ":", color=colour, alpha=0.6, label=f"{which}, shuffled labels")
        axes[0][1].legend(fontsize="small")
    figure.tight_layout()
    return figure


def draw_per_layer(axis, values: dict, layers: range, label: str, fine_tuned: bool | None = None) -> None:
    """One line per stage ("before", "after") of a per-layer measure."""
    fine_tuned = "after" in values if fine_tuned is None else fine_tuned
    for which, style in (("before", "o-"), ("after", "s--")):
        if which in values:
            axis.plot(layers, values[which], style, label=f"{which} fine-tuning" if fine_tuned else "pretrained encoder")
    axis.set_xticks(list(layers))
    axis.set_xlabel("layer (0 = the embeddings, or our LSTM LM's character CNN)")
    axis.set_ylabel(label)
    axis.legend(fontsize="small")
