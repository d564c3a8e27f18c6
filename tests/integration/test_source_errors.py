"""Clear errors for a wrong password, unreachable hosts and a server that is not a replica set."""

from __future__ import annotations

import socket

import pytest

from connectors.errors import AuthenticationFailed, SourceUnreachable
from connectors.mongodb.topology import discover
from tests.integration.pipeline_harness import connector_config

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_hosts_name_the_hosts(stack):
    port = _free_port()
    config = connector_config("unreachable", f"mongodb://127.0.0.1:{port}/?replicaSet=rs0",
                              mongodb__server__selection__timeout__ms=500)
    with pytest.raises(SourceUnreachable) as error:
        discover(config.mongo_client_options())
    assert f"127.0.0.1:{port}" in str(error.value) and "cannot reach MongoDB" in str(error.value)


def test_wrong_password_names_the_user_never_the_password(stack, mongo_rs):
    if not hasattr(mongo_rs, "step_down"):
        pytest.skip("the emulator refuses every credential; a real server needs a user set up for this test")
    config = connector_config("badauth", mongo_rs.uri, mongodb__user="reporter", mongodb__password="s3cr3t-pw")
    with pytest.raises(AuthenticationFailed) as error:
        discover(config.mongo_client_options())
    assert "'reporter'" in str(error.value) and "mongodb.password" in str(error.value)
    assert "s3cr3t-pw" not in str(error.value)
