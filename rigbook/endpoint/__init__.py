"""Whether an endpoint runs on this machine.

What rigbook says to an endpoint (URLs, discovery, bodies, streams, the smoke test) is
:mod:`rigbook.openai`.
"""

from rigbook.endpoint.local import is_local

__all__ = ["is_local"]
