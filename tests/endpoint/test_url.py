"""The bench's endpoint URL: checked, normalised, and told local or remote (telemetry only for local)."""

from __future__ import annotations

import pytest

from rigbook.endpoint.local import is_local
from rigbook.errors import InputError
from rigbook.openai.urls import base_url


@pytest.mark.parametrize(
    "given, base",
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000"),
        ("https://gpu.example:443/serve/v1/", "https://gpu.example:443/serve"),
    ],
)
def test_base_url_drops_a_trailing_v1(given, base):
    assert base_url(given) == base


@pytest.mark.parametrize(
    "bad", ["notaurl", "ftp://host/x", "http://:80", "http://host:port", "http://[::1"]
)
def test_a_non_url_is_bad_input(bad):
    with pytest.raises(InputError) as caught:
        base_url(bad)
    assert caught.value.code == "E_INPUT"


def test_loopback_and_this_machines_names_are_local_other_hosts_are_not():
    import socket

    assert (
        is_local("http://127.0.0.1:1")
        and is_local("http://localhost:1")
        and is_local("http://[::1]:1")
    )
    assert is_local(f"http://{socket.gethostname()}:1")
    assert not is_local("http://192.0.2.1:8000")  # TEST-NET-1: never this machine
    assert not is_local("http://no-such-host.invalid:8000")
