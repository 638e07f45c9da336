"""Which Kafka release wrote the logs, and the model generation that replays it.

Why: the model's rules differ by release (truncation to the HW before 0.11, leader epochs
after, KIP-279 in 2.0, KIP-320 in 2.1, ELR as a 4.0 feature level). The release comes from
``--kafka``, the logs' own ``Kafka version`` line, the inter-broker protocol of the config
dump, or, failing all, a guess from the line formats (:mod:`harness.replay.formats`); the
verdict says which.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.db.catalogue.versions import CATALOGUE
from harness.replay.formats import infer_release
from harness.replay.parse import PARTITION_KINDS as _PARTITION_KINDS
from harness.replay.parse import BrokerLogs
from reference_model.profiles import generation


@dataclass
class VersionInfo:
    name: str  # as read from the logs (catalogue name when known)
    release: str
    generation: str
    kraft: bool = False
    ibp: str = ""
    how: str = ""  # how the version was found: --kafka, the logs' own line, or a guess


def _era(release: str) -> str:
    nums = [int(x) for x in re.findall(r"\d+", release)[:2]] + [0, 0]
    major, minor = nums[0], nums[1]
    if (major, minor) < (0, 11):
        return "hw"
    if (major, minor) < (2, 0):
        return "kip101"
    if (major, minor) == (2, 0):
        return "kip279"
    return "kip320"


def _number(text: str) -> tuple[int, ...]:
    m = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def _profile(release: str, kraft: bool, ibp: str) -> tuple[str, str]:
    """(version name, model generation) for a release the catalogue may not list.

    Tries the version profiles (``3.4.0``, ``3.5.1-kraft``, ``2.8.2-ibp0.10``) and falls back
    to the era aliases (``hw``, ``kip101``, ``kip279``, ``kip320``).
    """

    rel = _number(release)
    names = []
    if kraft and rel < (4, 0):
        names.append(f"{release}-kraft")
    ib = _number(ibp)
    if ib and not kraft and ib[:2] < rel[:2]:
        names.append(f"{release}-ibp{'.'.join(str(x) for x in ib[:2])}")
    names.append(release)
    for n in names:
        if n in CATALOGUE:
            return n, CATALOGUE[n].generation
    try:
        for n in names:
            try:
                generation(n)
                return n, n
            except ValueError:
                continue
    except ImportError:  # pragma: no cover - older model without profiles
        pass
    gen = _era(ibp) if ib and ib[:2] < rel[:2] else _era(release)
    return names[0], gen


def detect_version(brokers: Sequence[BrokerLogs], override: str | None) -> VersionInfo:
    """The Kafka version the logs were written by, and the model generation for it."""

    if override:
        if override in CATALOGUE:
            v = CATALOGUE[override]
            return VersionInfo(
                override, v.release, v.generation, "kraft" in override, how="--kafka"
            )
        name, gen = _profile(override, "kraft" in override, "")
        return VersionInfo(override, override, gen, "kraft" in override, how="--kafka")
    replicas = [b for b in brokers if any(f.kind in _PARTITION_KINDS for f in b.facts)]
    seen = [b.version for b in (replicas or list(brokers)) if b.version]
    release = max(set(seen), key=seen.count) if seen else ""
    kraft = any(b.kraft for b in brokers)
    elr = any(b.elr for b in brokers)
    ibps = [b.ibp for b in replicas if b.ibp] or [b.ibp for b in brokers if b.ibp]
    ibp = ibps[0] if ibps else ""
    if not release and ibp:
        # No "Kafka version" line: the inter-broker protocol in the config dump
        # (e.g. 0.10.2-IV0) names the release line; take its catalogue entry.
        stem = ".".join(str(x) for x in _number(ibp))
        known = [v for v in CATALOGUE.values() if stem and v.release.startswith(stem)]
        if known:
            release = known[-1].release
    how = "the logs' 'Kafka version' line" if release else ""
    if release and not seen:
        how = f"inter.broker.protocol.version {ibp} in the config dump"
    if not release:
        guess = infer_release(brokers)
        if guess is None:
            return VersionInfo(
                "unknown", "", "kip320", kraft, ibp, how="not in the logs: assumed 2.1+ rules"
            )
        release, why, cite = guess
        kraft = kraft or release.endswith("-kraft")
        release = release.removesuffix("-kraft")
        how = f"guessed from the line formats: {why} ({cite}); say --kafka to override"
    if elr and _number(release) >= (4, 0):
        # KIP-966's feature is a finalized feature level, not a release: the controller's
        # "finalizedFeatures={... eligible.leader.replicas.version=1 ...}" line says it.
        name, gen = _profile(f"{release}-elr", kraft, ibp)
        how += "; eligible.leader.replicas.version=1 finalized (KIP-966 ELR on)"
        return VersionInfo(name, release, gen, kraft, ibp, how=how)
    name, gen = _profile(release, kraft, ibp)
    return VersionInfo(name, release, gen, kraft, ibp, how=how)
