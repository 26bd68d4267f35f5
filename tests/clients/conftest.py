"""Fixtures of the clients' tests."""

import pytest


@pytest.fixture
def serve():
    """Starts a fake API (tests/fakes.py, tests/fake_search.py) and stops it after the test; a test
    module with servers of another kind defines its own."""
    servers = []

    def start(server):
        servers.append(server.start())
        return server

    yield start
    for server in servers:
        server.stop()
