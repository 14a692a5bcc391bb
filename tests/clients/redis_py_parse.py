"""Feeds frames to redis-py's own RESP3 parser and maintenance handlers, and says what it did.

Input (stdin): one frame per line, `name<TAB>hex bytes`. Argument: the moving-endpoint-type the
client asked for (redis-py's parser does not look at it; it is accepted for symmetry).
Output: one JSON object per frame: {"name", "outcome": acts|ignores|fails, "detail", "target"}.
`target` is [host, port] as the parser read a MOVING's endpoint, or null.

The frame goes through a real socket pair into redis-py's SocketBuffer and _RESP3Parser; the
maintenance handlers are redis-py's MaintNotificationsConnectionHandler on a stand-in connection.
A handler that was never called means the frame was ignored; an error redis-py logged while
handling the push means it failed.
"""
import json
import logging
import socket
import sys

from redis._parsers.resp3 import _RESP3Parser
from redis._parsers.socket import SocketBuffer
from redis._parsers.encoders import Encoder
from redis.maint_notifications import (
    MaintNotificationsConfig,
    MaintNotificationsConnectionHandler,
    MaintenanceState,
)


class Errors(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.seen = []

    def emit(self, record):
        self.seen.append(record.getMessage())


class StandIn:
    """The attributes and calls MaintNotificationsConnectionHandler uses on a connection."""

    host, port, _sock = "127.0.0.1", 6379, None

    def __init__(self):
        self.maintenance_state = MaintenanceState.NONE
        self.calls = []

    def get_resolved_ip(self):
        return "127.0.0.1"

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.calls.append(name)
        return call


def text(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def run(name, data, errors):
    a, b = socket.socketpair()
    a.sendall(data + b"+OK\r\n")
    a.close()
    parser = _RESP3Parser(65536)
    parser._buffer = SocketBuffer(b, 65536, 5)
    parser.encoder = Encoder("utf-8", "strict", False)
    conn = StandIn()
    handler = MaintNotificationsConnectionHandler(conn, MaintNotificationsConfig())
    got = []

    def moving(n):
        got.append(n)

    def maint(n):
        got.append(n)
        handler.handle_notification(n)

    parser.node_moving_push_handler_func = moving
    parser.maintenance_push_handler_func = maint
    errors.seen.clear()
    out = {"name": name, "target": None}
    try:
        reply = parser.read_response()
    except Exception as e:  # the frame broke the reader itself
        out.update(outcome="fails", detail=f"{type(e).__name__}: {e}")
        return out
    finally:
        b.close()
    if errors.seen:
        out.update(outcome="fails", detail=errors.seen[0])
    elif got:
        n = got[0]
        out.update(outcome="acts", detail=type(n).__name__)
        if hasattr(n, "new_node_host"):
            host = text(n.new_node_host)
            out["target"] = None if host is None else [host, n.new_node_port]
    else:
        out.update(outcome="ignores", detail=f"reply after it: {reply!r}")
    return out


def main():
    errors = Errors()
    logging.getLogger().addHandler(errors)
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        name, hexed = line.split("\t")
        print(json.dumps(run(name, bytes.fromhex(hexed), errors)), flush=True)


main()
