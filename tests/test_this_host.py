"""Whether a host or a task's address is this machine: one rule (tfjupyter.distributed.cluster),
used by the runtime (tasks sharing this host's cores, the token of a task of this host), the
cluster driver (binding to loopback, the engines it may reap) and the server extension."""
import socket

import pytest

from tfjupyter.distributed.cluster import (address_host, is_loopback, is_loopback_host,
                                           is_this_host)


@pytest.mark.parametrize("address, host", [("gpu1:2222", "gpu1"), ("127.0.0.1:0", "127.0.0.1"),
                                           ("[::1]:2222", "::1"), ("localhost:80", "localhost")])
def test_address_host(address, host):
    assert address_host(address) == host


@pytest.mark.parametrize("host", ["localhost", "ip6-localhost", "127.0.0.1", "127.1.2.3", "::1",
                                  "[::1]"])
def test_loopback_names_and_addresses(host):
    assert is_loopback_host(host) and is_this_host(host)


@pytest.mark.parametrize("host", ["10.0.0.1", "192.168.1.20", "2001:db8::1", "gpu1.invalid", ""])
def test_other_hosts(host):
    assert not is_loopback_host(host) and not is_loopback_host(host, resolve=True)
    assert not is_this_host(host)


def test_this_machines_own_names_are_this_host():
    assert is_this_host(socket.gethostname())
    assert is_this_host(socket.getfqdn())


def test_resolve_follows_a_name_to_a_loopback_address(monkeypatch):
    monkeypatch.setattr(socket, "gethostbyname",
                        lambda name: {"alias.test": "127.0.1.1"}.get(name, "10.1.1.1"))
    assert not is_loopback_host("alias.test")          # no DNS unless asked
    assert is_loopback_host("alias.test", resolve=True)
    assert not is_loopback_host("remote.test", resolve=True)


@pytest.mark.parametrize("address, loopback", [("127.0.0.1:2222", True), ("[::1]:2222", True),
                                               ("localhost:1", True), ("gpu1:2222", False),
                                               ("10.0.0.1:2222", False)])
def test_is_loopback_reads_the_host_of_an_address(address, loopback):
    assert is_loopback(address) is loopback


def test_local_plans_bind_to_loopback_and_remote_ones_to_every_interface(monkeypatch):
    pytest.importorskip("ipyparallel")
    from tfjupyter.cluster.launch import plan_tasks
    monkeypatch.setattr(socket, "gethostbyname",
                        lambda name: {"here.test": "127.0.1.1"}.get(name, "10.1.1.1"))
    local = plan_tasks(1, 1, "local")
    assert {(p.advertise_host, p.bind_host) for p in local} == {("127.0.0.1", "127.0.0.1")}
    remote = plan_tasks(0, 2, "ssh", hosts=["me@here.test:2222", "gpu2.test"])
    assert [(p.advertise_host, p.bind_host) for p in remote] == [("here.test", "127.0.0.1"),
                                                                  ("gpu2.test", "0.0.0.0")]
