"""What a cut network link means to the model (issue 9): pure predicates over ``cuts``.

``PartitionState.cuts`` holds directed links (src, dst) whose packets are dropped. Every
conversation the model knows is a request and its answer over TCP, so a link cut in *either*
direction stops it (a one-way cut drops the requests or the answers; either way the request
times out). The transitions ask these predicates; what each cut then means is written where
it acts, naming the broker code it mirrors:

- broker cut from the controller: LeaderAndIsr/UpdateMetadata (KRaft: the broker's metadata
  fetches) do not reach it; they wait in ``Controller.held`` until the cut heals
  (``transitions.deliver``, ``ControllerChannelManager`` in ZooKeeper mode,
  ``BrokerMetadataListener``/``MetadataLoader`` fetching from the quorum in KRaft);
- broker cut from its *session node* (ZooKeeper in ZooKeeper mode, the controller in KRaft):
  its session can expire, so ``detect`` of a running broker is the controller's failure
  handling; at heal a ZooKeeper-mode broker registers again (``KafkaHealthcheck``/
  ``KafkaZkClient.registerBroker`` on the new session -> ``KafkaController.onBrokerStartup``)
  and a KRaft broker heartbeats again and is unfenced
  (``ReplicationControlManager.handleBrokerUnfenced``);
- broker cut from broker: a follower's Fetch/OffsetsForLeaderEpoch to its leader fails
  (``AbstractFetcherThread`` backs off and retries); a response already in flight waits for
  the heal (TCP retransmits it within the request timeout);
- client cut from a broker: a produce request to it times out.
"""

from __future__ import annotations

from reference_model.events import CLIENT_NODE, CONTROLLER_NODE, ZOOKEEPER_NODE
from reference_model.state import Config

Cuts = frozenset[tuple[int, int]]


def severed(cuts: Cuts, a: int, b: int) -> bool:
    """Whether ``a`` and ``b`` cannot hold a request/response conversation."""
    return bool(cuts) and ((a, b) in cuts or (b, a) in cuts)


def session_node(cfg: Config) -> int:
    """Where a broker's liveness session lives: ZooKeeper, or the KRaft quorum controller."""
    return CONTROLLER_NODE if cfg.generation.kraft else ZOOKEEPER_NODE


def session_cut(cfg: Config, cuts: Cuts, i: int) -> bool:
    """Broker ``i`` cannot keep its session alive (ZooKeeper pings / BrokerHeartbeat)."""
    return severed(cuts, i, session_node(cfg))


def controller_cut(cuts: Cuts, i: int) -> bool:
    """The controller's requests (or, in KRaft, the broker's metadata fetches) fail for ``i``."""
    return severed(cuts, i, CONTROLLER_NODE)


def client_cut(cuts: Cuts, i: int) -> bool:
    """The harness's producer cannot reach broker ``i``."""
    return severed(cuts, i, CLIENT_NODE)


def cut_from_controller(cuts: Cuts, n: int) -> frozenset[int]:
    """Brokers (of ``n``) whose controller link is cut."""
    if not cuts:
        return frozenset()
    return frozenset(i for i in range(n) if controller_cut(cuts, i))
