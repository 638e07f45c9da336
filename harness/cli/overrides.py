"""The scenario overrides every command that plays or models a scenario shares.

Why one group: ``run`` once re-declared the overrides and lost ``--rf`` on the way, while the
README promised it. ``model``, ``run`` and ``explore`` take one value per override; ``matrix``
takes comma-separated lists (one cell per combination). Kafka's own names are in the help.
"""

from __future__ import annotations

import argparse

from harness.cli.types import profile_type

ACKS = ["0", "1", "all"]


def add_overrides(
    p: argparse.ArgumentParser,
    *,
    lists: bool = False,
    defaults: dict[str, object] | None = None,
) -> argparse._ArgumentGroup:
    """``--acks --min-insync --unclean --rf --records`` on ``p``.

    ``lists``: each takes a comma-separated list (``matrix``). ``defaults``: a command whose
    search needs concrete settings (``explore``) gives them; otherwise None means "the
    scenario's own".
    """
    d = defaults or {}
    g = p.add_argument_group("scenario overrides")
    if lists:
        g.add_argument(
            "--acks", default="", help="producer acks, e.g. 1,all (default: the scenario's)"
        )
        g.add_argument(
            "--min-insync",
            default="",
            help="min.insync.replicas, e.g. 1,2 (default: the scenario's)",
        )
        g.add_argument(
            "--unclean",
            default="",
            help="unclean.leader.election.enable, e.g. false,true (default: the scenario's)",
        )
        g.add_argument(
            "--rf", default="", help="replication.factor, e.g. 2,3 (scenarios that name no brokers)"
        )
        g.add_argument(
            "--records", default=str(d.get("records", "1")), help="records per produce step"
        )
        return g
    g.add_argument("--acks", choices=ACKS, default=d.get("acks"), help="producer acks")
    g.add_argument(
        "--min-insync", type=int, default=d.get("min_insync"), help="min.insync.replicas"
    )
    g.add_argument(
        "--unclean",
        action=argparse.BooleanOptionalAction,
        default=d.get("unclean"),
        help="unclean.leader.election.enable",
    )
    rf_flags = ["--rf", *(["--replicas"] if "rf" in d else [])]
    g.add_argument(*rf_flags, dest="rf", type=int, default=d.get("rf"), help="replication factor")
    g.add_argument("--records", type=int, default=d.get("records"), help="records per produce step")
    return g


def overrides(args: argparse.Namespace) -> dict[str, object]:
    """The single-valued overrides as ``Scenario.with_overrides`` keywords (None: keep)."""
    return {
        "acks": args.acks,
        "min_insync": args.min_insync,
        "unclean": args.unclean,
        "rf": args.rf,
        "records": args.records,
    }


def add_profile(p: argparse.ArgumentParser, default: str | None, help_: str) -> None:
    """``--profile`` (the one word for a set of rules), ``--protocol`` kept as an alias."""
    p.add_argument(
        "--profile", "--protocol", dest="protocol", type=profile_type, default=default, help=help_
    )
