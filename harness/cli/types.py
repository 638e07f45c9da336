"""argparse types shared by the commands (kept light: ``hwchaos model`` starts fast)."""

from __future__ import annotations

import argparse

from reference_model.profiles import generation


def profile_type(name: str) -> str:
    """argparse type of ``--profile``/``--kafka``: an era alias or any release profile."""
    try:
        generation(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return name
