"""The flair side of ``compare_flair_encoder.py``: run with the python of the flair venv, never imports seqtransfer.

    benchmarks/.flair-venv/bin/python benchmarks/flair_encoder_runner.py --input DIR --epochs 3 --predictions PATH

``DIR/data.json`` is written by ``compare_flair_encoder.py``: tokens and gold spans of each
split, the encoder folder (the same one seqtransfer fine-tunes) and seqtransfer's settings.

The model mirrors seqtransfer's fine-tuned encoder tagger: ``TransformerWordEmbeddings`` over
the folder (fine-tuned, last layer, each token's first sub-word) in a ``SequenceTagger`` with no
RNN, no CRF and no re-projection, so a dropout and one linear layer over the token vectors.
Trained with ``ModelTrainer.train_custom``: AdamW with seqtransfer's rate, betas and weight decay,
gradient clipping, batches and epochs, and seqtransfer's linear warm-up then decay set before
every batch by a plugin. No dev split, so nothing is evaluated between epochs. Prints one JSON
line of measurements; dev and test predictions (IOB2 tags per token) go to ``--predictions``.
"""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path

import flair
import torch
import transformers
from budget import Budget, deadline_of
from flair.data import Corpus
from flair.embeddings import TransformerWordEmbeddings
from flair.models import SequenceTagger
from flair.trainers import ModelTrainer
from flair.trainers.plugins.base import TrainerPlugin
from flair_runner import BUDGET_HELP, LABEL_TYPE, BudgetPlugin, measure, read_corpus, runner_parser, seed_everything, serve


class LinearWarmupPlugin(TrainerPlugin):
    """seqtransfer's ``linear_warmup`` schedule, set before each batch (over all ``epochs`` as planned:
    a time budget that cuts the run short leaves it unfinished, as it does seqtransfer's).

    The rate of step k (1-based, over all epochs) is lr * k / w during the first w = int(warmup * total)
    steps, then lr * (total - k) / (total - w), reaching 0 at the last step. (flair's own
    ``LinearSchedulerPlugin`` computes the same line one step later: its first batch trains at rate 0.)
    """

    def __init__(self, learning_rate: float, warmup: float, epochs: int) -> None:
        super().__init__()
        self.learning_rate, self.warmup, self.epochs = learning_rate, warmup, epochs

    def factor(self, epoch: int, batch: int, batches_per_epoch: int) -> float:
        total = max(self.epochs * batches_per_epoch, 1)
        done = (epoch - 1) * batches_per_epoch + batch + 1
        warmup = max(int(self.warmup * total), 1)
        if done <= warmup:
            return done / warmup
        return max(0.0, (total - done) / max(total - warmup, 1))

    @TrainerPlugin.hook
    def before_training_batch(self, batch_no: int, total_number_of_batches: int, epoch: int, **kwargs) -> None:
        for group in self.trainer.optimizer.param_groups:
            group["lr"] = self.learning_rate * self.factor(epoch, batch_no, total_number_of_batches)


def once_applied_dropout(rate: float) -> float:
    """flair's dropout rate that equals one dropout of ``rate``.

    Without an RNN, ``SequenceTagger.forward`` applies its dropout twice to the same vectors
    (before and after where the RNN would be). Two inverted dropouts of rate q keep a value with
    probability (1 - q)^2 and scale it by 1 / (1 - q)^2: one dropout of rate 1 - (1 - q)^2.
    seqtransfer applies ``rate`` once, so q = 1 - sqrt(1 - rate).
    """
    return 1.0 - (1.0 - rate) ** 0.5


def build_tagger(data: dict, corpus: Corpus) -> SequenceTagger:
    settings = data["settings"]
    embeddings = TransformerWordEmbeddings(
        data["encoder"],  # a local folder: nothing is downloaded (HF_HUB_OFFLINE=1 as well)
        fine_tune=True,
        layers="-1",
        subtoken_pooling=settings["pooling"],
        allow_long_sentences=True,
        use_context=False,
        use_context_separator=False,  # else flair adds a [FLERT] sub-word (one more embedding row) that only context uses
    )
    return SequenceTagger(
        embeddings=embeddings,
        tag_dictionary=corpus.make_label_dictionary(LABEL_TYPE, add_unk=False),
        tag_type=LABEL_TYPE,
        tag_format="BIO",  # = IOB2, the tags seqtransfer trains on
        use_rnn=False,
        use_crf=False,
        reproject_embeddings=False,
        dropout=once_applied_dropout(settings["dropout"]),
        word_dropout=0.0,
        locked_dropout=0.0,
    )


def train_timed(tagger: SequenceTagger, corpus: Corpus, settings: dict, epochs: int, base_path: Path, deadline: float | None = None) -> Budget:
    timing = BudgetPlugin(epochs, deadline)
    ModelTrainer(tagger, corpus).train_custom(
        base_path=base_path,
        learning_rate=settings["learning_rate"],
        mini_batch_size=settings["batch_size"],
        max_epochs=epochs,
        optimizer=torch.optim.AdamW,
        betas=tuple(settings["betas"]),  # train_custom hands its other keyword arguments to the optimizer
        weight_decay=settings["weight_decay"],  # torch's AdamW default is 0.01; seqtransfer's is 0
        max_grad_norm=settings["gradient_clip"],
        shuffle=True,
        embeddings_storage_mode="none",
        use_final_model_for_eval=True,
        save_final_model=False,
        create_file_logs=False,
        create_loss_file=False,
        plugins=[LinearWarmupPlugin(settings["learning_rate"], settings["warmup"], epochs), timing],
    )
    return timing.budget


def run(arguments: argparse.Namespace) -> dict:
    deadline = deadline_of(arguments.time_budget, arguments.started_at)
    data = json.loads((Path(arguments.input) / "data.json").read_text(encoding="utf-8"))
    if data["settings"]["epochs"] != arguments.epochs:
        raise SystemExit(f"--epochs {arguments.epochs}, but seqtransfer's schedule runs over {data['settings']['epochs']} epochs")
    flair.device = torch.device(arguments.device)
    seed_everything(data["settings"]["seed"], arguments.threads)
    corpus, *sentences = read_corpus(data)
    tagger = build_tagger(data, corpus)
    result = measure(arguments, data, tagger, corpus, tuple(sentences), functools.partial(train_timed, deadline=deadline))
    return {**result, "transformers": transformers.__version__, "attention": tagger.embeddings.model.config._attn_implementation}


def main(argv: list[str] | None = None) -> dict:
    parser = runner_parser(__doc__.split("\n\n")[0], "folder with data.json", "must equal data.json's settings (the schedule's length)")
    parser.add_argument("--time-budget", type=float, default=None, help=BUDGET_HELP)
    return serve(run, parser, argv)


if __name__ == "__main__":
    main()
