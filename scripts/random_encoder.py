"""An encoder folder of random weights in the shape of another, for speed measurements without its weights.

    python scripts/random_encoder.py SHAPE_DIR OUT_DIR [--seed 0]     # build (or reuse) OUT_DIR, then read it back
    python scripts/random_encoder.py --check [--seqtransfer] OUT_DIR  # read it with this interpreter's transformers (and seqtransfer)

Run by scripts/gpu_bench.sh for its ``encoder`` tool: the GPU machine has no network, and MiniLM's
weights (about 90 MB) do not fit the 64 MiB a device call carries, so the bundle holds only
MiniLM's config.json and tokenizer files (SHAPE_DIR). This script draws a model of that config
(``AutoModel.from_config`` after ``torch.manual_seed(SEED)``: the architecture's own initialisation,
nothing trained), saves it with ``save_pretrained`` and copies the tokenizer files beside it, with
RANDOM-WEIGHTS.txt saying so. A training step costs the same whatever the weights' values, so
both tools' speeds are meaningful; their F1 are not. OUT_DIR is reused when it was built from the
same SHAPE_DIR files, seed and script. gpu_bench.sh builds it with the flair venv's python
(transformers 4.x, what flair reads) and checks that the image's transformers 5.x (seqtransfer's)
reads it too (``--check``); the check loads the tokenizer and the weights, and runs one sentence.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
from pathlib import Path

NOTE = "RANDOM-WEIGHTS.txt"
DIGEST = ".shape-digest"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx", ".ckpt")


def shape_files(shape: Path) -> list[Path]:
    """SHAPE_DIR's plain files except weights: config.json and the tokenizer's."""
    return sorted(path for path in shape.iterdir() if path.is_file() and not path.name.endswith(WEIGHT_SUFFIXES))


def digest(shape: Path, seed: int) -> str:
    hashed = hashlib.sha256(f"seed {seed}\n".encode() + Path(__file__).read_bytes())
    for path in shape_files(shape):
        hashed.update(path.name.encode() + b"\0" + path.read_bytes())
    return hashed.hexdigest()[:16]


def build(shape: Path, out: Path, seed: int) -> None:
    import torch
    import transformers
    from transformers import AutoConfig, AutoModel

    if not (shape / "config.json").is_file():
        raise SystemExit(f"random_encoder: {shape} has no config.json")
    wanted = digest(shape, seed)
    if (out / DIGEST).is_file() and (out / DIGEST).read_text().strip() == wanted:
        print(f"random_encoder: {out} already holds the random weights of {shape} (seed {seed}): reused", flush=True)
        return
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    torch.manual_seed(seed)
    config = AutoConfig.from_pretrained(str(shape), local_files_only=True)
    model = AutoModel.from_config(config)
    model.save_pretrained(str(out))
    for path in shape_files(shape):
        if path.name != "config.json":  # save_pretrained wrote the config (in this transformers' own format)
            shutil.copy2(path, out / path.name)
    parameters = sum(parameter.numel() for parameter in model.parameters())
    (out / NOTE).write_text(
        f"Random weights in the shape of {shape} ({config.model_type}, {config.num_hidden_layers} layers, hidden {config.hidden_size}, "
        f"{parameters:,} parameters): AutoModel.from_config after torch.manual_seed({seed}), saved by transformers {transformers.__version__}; "
        "nothing trained. For speed measurements only (scripts/random_encoder.py): F1 after fine-tuning these is not meaningful.\n",
        encoding="utf-8",
    )
    (out / DIGEST).write_text(wanted + "\n")
    print(f"random_encoder: {out}: random weights of {shape}'s shape, {parameters:,} parameters, seed {seed}, transformers {transformers.__version__}", flush=True)


def check(out: Path, seqtransfer: bool = False) -> None:
    """Read OUT_DIR with this interpreter's transformers (a fast tokenizer, every weight) and encode one
    sentence; ``seqtransfer``: then load it as seqtransfer does (``check_encoder``: its own checks of the folder)."""
    import torch
    import transformers
    from transformers import AutoModel, AutoTokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not (out / NOTE).is_file():
        raise SystemExit(f"random_encoder: {out} is not a folder this script built (no {NOTE})")
    tokenizer = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    model, loading = AutoModel.from_pretrained(str(out), local_files_only=True, output_loading_info=True)
    if loading.get("missing_keys") or loading.get("unexpected_keys") or loading.get("mismatched_keys"):
        raise SystemExit(f"random_encoder: transformers {transformers.__version__} reads {out} with missing/unexpected weights: {loading}")
    if not getattr(tokenizer, "is_fast", False):
        raise SystemExit(f"random_encoder: transformers {transformers.__version__} reads no fast tokenizer from {out}")
    with torch.no_grad():
        states = model(**tokenizer(["A check of the random encoder ."], return_tensors="pt")).last_hidden_state
    print(f"random_encoder: transformers {transformers.__version__} (torch {torch.__version__}) reads {out}: {type(model).__name__}, states {tuple(states.shape)}", flush=True)
    if seqtransfer:
        import seqtransfer as package
        from seqtransfer.embeddings.transformer import check_encoder

        check_encoder(str(out))
        print(f"random_encoder: seqtransfer {package.__version__} loads {out} as an encoder", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="SHAPE_DIR OUT_DIR (build), or OUT_DIR (--check)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true", help="only read OUT_DIR (with this interpreter's transformers)")
    parser.add_argument("--seqtransfer", action="store_true", help="with --check: also load OUT_DIR with seqtransfer's encoder loader")
    arguments = parser.parse_args(argv)
    if arguments.check:
        if len(arguments.folders) != 1:
            parser.error("--check takes one folder")
        check(arguments.folders[0], arguments.seqtransfer)
        return
    if len(arguments.folders) != 2:
        parser.error("give SHAPE_DIR and OUT_DIR")
    build(*arguments.folders, arguments.seed)
    check(arguments.folders[1])


if __name__ == "__main__":
    sys.exit(main())
