#!/bin/sh
# Entrypoint of hwchaos/kafka images: ROLE=zookeeper|broker|controller, config mounted at
# /config, data at /data, logs at /logs. ROLE=tool runs MAIN_CLASS with the container's
# arguments to completion (e.g. kafka.tools.StorageTool format for a KRaft node). Starts the JVM directly (the 0.10 start scripts pass GC
# flags newer JVMs reject) and execs it, so `docker kill --signal` reaches Java itself.
# The JVM is PID 1 of the container (exec), so `docker kill -s STOP|KILL|TERM` and the
# harness's signals reach Java itself. HWCHAOS_JVM_FLAGS replaces the default --add-opens
# list (the harness passes the version catalogue's flags, as the local backend does).
# HWCHAOS_DRY_RUN=1 prints the command instead of running it (used by the tests).
set -eu
KAFKA_HOME=${KAFKA_HOME:-/opt/kafka}
ROLE=${ROLE:-broker}
HEAP=${KAFKA_HEAP_OPTS:--Xms64m -Xmx256m}
CP=""
for jar in "$KAFKA_HOME"/libs/*.jar; do
  case "$jar" in
    *-sources.jar|*-javadoc.jar|*-scaladoc.jar|*-test.jar|*-test-sources.jar) ;;
    *) CP="${CP:+$CP:}$jar" ;;
  esac
done
OPENS=""
JAVA_MAJOR=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
if [ -n "${HWCHAOS_JVM_FLAGS:-}" ]; then
  OPENS=$HWCHAOS_JVM_FLAGS
elif [ "${JAVA_MAJOR:-8}" -ge 9 ] 2>/dev/null; then
  OPENS="--add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED"
fi
case "$ROLE" in
  zookeeper) MAIN=org.apache.zookeeper.server.quorum.QuorumPeerMain; CONF=/config/zookeeper.properties ;;
  broker|controller) MAIN=kafka.Kafka; CONF=/config/server.properties ;;
  tool) MAIN=${MAIN_CLASS:?ROLE=tool needs MAIN_CLASS}; CONF= ;;
  *) echo "kafka-entrypoint: unknown ROLE '$ROLE' (zookeeper, broker, controller or tool)" >&2; exit 2 ;;
esac
[ -z "$CONF" ] || [ -f "$CONF" ] || { echo "kafka-entrypoint: missing $CONF" >&2; exit 2; }
# 4.0 moved to log4j2 (KIP-653): use whichever configuration the release ships.
if [ -f "$KAFKA_HOME/config/log4j2.yaml" ] && [ ! -f "$KAFKA_HOME/config/log4j.properties" ]; then
  LOGCONF=-Dlog4j2.configurationFile=file:$KAFKA_HOME/config/log4j2.yaml
else
  LOGCONF=-Dlog4j.configuration=file:$KAFKA_HOME/config/log4j.properties
fi
[ "$ROLE" = tool ] || set -- "$CONF"
set -- java $HEAP -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
  -Djava.net.preferIPv4Stack=true -Dzookeeper.admin.enableServer=false $OPENS \
  -Dkafka.logs.dir=/logs $LOGCONF -cp "$CP" $MAIN "$@"
if [ "${HWCHAOS_DRY_RUN:-0}" = 1 ]; then echo "$@"; exit 0; fi
exec "$@"
