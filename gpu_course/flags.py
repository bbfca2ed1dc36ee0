"""Every Experiment field as a command-line flag, and back (CLI and SageMaker launcher)."""
from __future__ import annotations

import argparse
from dataclasses import fields

from . import config as _config


def add_config_flags(p: argparse.ArgumentParser) -> None:
    """--batch-size, --num-workers, ...: one flag per Experiment field, default None."""
    group = p.add_argument_group("experiment (every Experiment field)")
    for f in fields(_config.Experiment):
        flag = "--" + f.name.replace("_", "-")
        group.add_argument(flag, dest=f"cfg_{f.name}", default=None, metavar="VALUE",
                           help=f"default: {f.default!r}")


def config_from_args(args: argparse.Namespace, **defaults) -> _config.Experiment:
    """Build an Experiment from parsed flags (strings turned into each field's type)."""
    values = dict(defaults)
    for f in fields(_config.Experiment):
        if (text := getattr(args, f"cfg_{f.name}", None)) is not None:
            values[f.name] = _config.parse_value(f.name, text)
    return _config.Experiment(**values)
