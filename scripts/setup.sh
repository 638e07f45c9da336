#!/usr/bin/env bash
# Set up hwchaos on a fresh machine: a virtualenv with the project and its dependencies,
# and a Java runtime for Spark (and for Kafka brokers, when release trees are configured).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! command -v java >/dev/null 2>&1; then
  echo "setup: no java on PATH; installing a headless JRE (Spark needs one)" >&2
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    echo "setup: install a Java 17 runtime and run again" >&2
    exit 1
  fi
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[spark,dev,docker]'
# The explorer's compiled model (the same source compiled with mypyc, kept in ~/.cache): a
# no-op when the build for the current sources exists; on failure (no C compiler) one line,
# and the explorer runs the pure model.
.venv/bin/hwchaos native build >/dev/null || true
# The docker backend's tests run wherever a daemon can: start one if none answers (root on a
# Debian-like machine: apt-get install docker.io if needed, then dockerd in the background).
if [ -z "${HWCHAOS_NO_DOCKERD:-}" ]; then
  .venv/bin/hwchaos docker up || echo "setup: docker backend unavailable (its tests skip)" >&2
fi
# Network partitions (per-node namespaces, iptables) need iproute2 and iptables.
if { ! command -v ip >/dev/null 2>&1 || ! command -v iptables >/dev/null 2>&1; } \
  && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing iproute2 and iptables (network partitions)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 iptables >/dev/null) \
    || echo "setup: iproute2/iptables unavailable (partition tests skip)" >&2
fi
# Pages (the replay timeline, reports) are checked in a real headless browser.
if ! command -v chromium >/dev/null 2>&1 && [ -z "${HWCHAOS_NO_BROWSER:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing chromium (headless page checks)" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "setup: chromium unavailable (browser checks skip)" >&2
  fi
fi
echo "setup: ok ($(.venv/bin/python --version), $(java -version 2>&1 | head -1))" >&2
