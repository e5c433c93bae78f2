"""rigbook: check, launch, verify, measure, compare and publish LLM serving recipes."""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # Looked up on first use: reading the installed metadata scans site-packages, and the `rigbook`
    # command imports this package before it can install its quiet Ctrl-C handler.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("rigbook")
        except PackageNotFoundError:  # a source tree that was never installed
            return "0.0.0+source"
    raise AttributeError(f"module 'rigbook' has no attribute {name!r}")
