"""Typed run configuration: dataclasses, YAML files and dotted command-line overrides.

The fully filled configuration is saved as ``config.yaml`` in every run directory, so a saved
model never depends on a default that may change later.

The dataclasses live in ``config_sections.py`` and the value checks in ``config_values.py``; this
module imports their names back, so ``from seqtransfer.config import RunConfig`` keeps working.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import re
import types
import typing
from pathlib import Path
from typing import Any

import yaml

from seqtransfer.config_sections import DataConfig, ModelConfig, MultiTaskConfig, RunConfig, TrainConfig, TransferConfig
from seqtransfer.config_values import check_values, fold_of, idle_settings, schedule_names
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import load_yaml, read_yaml_mapping

# The public names, those of config_sections.py and config_values.py included (imported back for callers).
__all__ = [
    "DataConfig",
    "ModelConfig",
    "TrainConfig",
    "TransferConfig",
    "MultiTaskConfig",
    "RunConfig",
    "YAML11_BOOLEANS",
    "SCIENTIFIC",
    "config_from_dict",
    "load_config",
    "apply_overrides",
    "fold_of",
    "schedule_names",
    "idle_settings",
    "check_values",
    "config_to_dict",
    "non_default",
    "result_settings",
    "dump_config",
]


def _field_names(instance: Any) -> list[str]:
    return [item.name for item in dataclasses.fields(instance)]


def _check_key(instance: Any, key: str, where: str, path: str | None) -> None:
    names = _field_names(instance)
    if key not in names:
        close = difflib.get_close_matches(key, names, n=1)
        suggestion = f"did you mean '{close[0]}'? " if close else ""
        raise SeqTransferError(f"unknown config key '{where}{key}'", path=path, hint=f"{suggestion}valid keys of '{where.rstrip('.') or 'config'}': {', '.join(names)}")


YAML11_BOOLEANS = {"yes": True, "no": False, "on": True, "off": False}  # what YAML 1.1 read as booleans besides true / false
SCIENTIFIC = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _coerce(value: Any, annotation: Any, key: str, path: str | None) -> Any:
    """Check ``value`` against a field's type annotation (ints are accepted as floats)."""
    origin = typing.get_origin(annotation)
    allowed = typing.get_args(annotation) if origin in (typing.Union, types.UnionType) else (annotation,)
    if value is None and type(None) in allowed:
        return None
    for option in allowed:
        base = typing.get_origin(option) or option
        if base is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if base is float and isinstance(value, str) and SCIENTIFIC.fullmatch(value.strip()):  # YAML 1.1 reads 1e-5 (no dot) as text
            return float(value)
        if base is list and isinstance(value, str):  # "0,1,3" -> [0, 1, 3] for list[int]; "word,pos" stays text
            parts = [part.strip() for part in value.split(",") if part.strip()]
            return parts if typing.get_args(option) == (str,) else [load_yaml(part) for part in parts]
        if base is bool and isinstance(value, str) and value.lower() in YAML11_BOOLEANS:  # a hand-written yes / no / on / off
            return YAML11_BOOLEANS[value.lower()]
        if isinstance(value, base) and not (base is int and isinstance(value, bool)):
            return value
    expected = " or ".join(getattr(option, "__name__", str(option)) for option in allowed)
    raise SeqTransferError(f"config key '{key}' must be {expected}, got {value!r}", path=path)


@functools.cache
def _type_hints(section: type) -> dict:
    """A section's field types, read once per class (``get_type_hints`` compiles every string
    annotation again at each call: 0.65 ms a section, hundreds of times a grid)."""
    return typing.get_type_hints(section)


def _assign(instance: Any, values: dict, where: str, path: str | None) -> None:
    hints = _type_hints(type(instance))
    for key, value in values.items():
        _check_key(instance, key, where, path)
        current = getattr(instance, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, dict):
                raise SeqTransferError(f"config section '{where}{key}' must be a mapping", path=path)
            _assign(current, value, f"{where}{key}.", path)
        else:
            setattr(instance, key, _coerce(value, hints[key], f"{where}{key}", path))


def config_from_dict(values: dict, path: str | None = None) -> RunConfig:
    """Build a :class:`RunConfig` from nested mappings, rejecting unknown keys."""
    config = RunConfig()
    _assign(config, values or {}, "", path)
    return config


def load_config(path: str | Path) -> RunConfig:
    """Read a YAML configuration file (safe loader: nothing in it is executed)."""
    return config_from_dict(read_yaml_mapping(path, "config file"), str(path))


def apply_overrides(config: RunConfig, overrides: list[str]) -> RunConfig:
    """Apply ``section.key=value`` overrides; values are parsed as YAML scalars."""
    for override in overrides:
        key, separator, raw_value = override.partition("=")
        if not separator or "." not in key:
            raise SeqTransferError(f"override '{override}' is not of the form section.key=value", hint="e.g. train.learning_rate=0.01 or model.classifier=crf")
        section, _, name = key.partition(".")
        _check_key(config, section, "", None)
        name, _, entry = name.partition(".")  # multitask.data.pos=tweebank:upos sets one entry of a mapping
        value = load_yaml(raw_value)
        if entry:
            _check_key(getattr(config, section), name, f"{section}.", None)
            current = getattr(getattr(config, section), name)
            if current is not None and not isinstance(current, dict):
                raise SeqTransferError(f"config key '{section}.{name}' is not a mapping", hint=f"use {section}.{name}=VALUE")
            value = {**(current or {}), entry: value}
        _assign(getattr(config, section), {name: value}, f"{section}.", None)
    return config


def config_to_dict(config: RunConfig) -> dict:
    """The filled configuration as plain nested dicts."""
    return dataclasses.asdict(config)


def non_default(values: dict, defaults: dict) -> dict:
    """The entries of nested ``values`` that differ from ``defaults``."""
    result = {}
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(defaults.get(key, {}), dict):  # a section (a mapping-valued setting with a null default is one value)
            nested = non_default(value, defaults.get(key, {}))
            if nested:
                result[key] = nested
        elif key not in defaults or defaults[key] != value:
            result[key] = value
    return result


def result_settings(config: RunConfig | dict) -> dict:
    """The settings that decide a run's result: those that differ from the defaults (so that adding
    a config field changes nothing saved before it), without where the data lives, how many threads
    or which device run it, whether activations are recorded for analysis or the epochs logged to TensorBoard,
    or how often a long epoch is checkpointed."""
    values = copy.deepcopy(config) if isinstance(config, dict) else config_to_dict(config)
    values.get("data", {}).pop("data_dir", None)
    for key in ("threads", "share_cores", "device", "record_activations", "log_to", "checkpoint_minutes"):
        values.get("train", {}).pop(key, None)
    return non_default(values, config_to_dict(RunConfig()))


def dump_config(config: RunConfig) -> str:
    """The filled configuration as YAML text."""
    return yaml.safe_dump(config_to_dict(config), sort_keys=False)
