"""Ports for the launchers the tests imitate (torchrun's MASTER_PORT, and tutti's
rendezvous at MASTER_PORT + 1).

A port the kernel hands out (bind to 0) lies in its ephemeral range and is free only until
the next outgoing connection of any process takes it; the tests beside one another make
many (a store bound such a port after a connection had: EADDRINUSE). So the ports here come
from just below that range, and both ports of a pair bind now."""
import random
import socket


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _binds(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port_pair():
    """A port p such that p and p + 1 both bind now, below the ephemeral range."""
    low = _ephemeral_low()
    for _ in range(200):
        port = random.randrange(max(1024, low - 12000), low - 1)
        if _binds(port) and _binds(port + 1):
            return port
    raise RuntimeError("no free port pair below %d after 200 tries" % low)
