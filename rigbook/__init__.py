"""rigbook: check, launch, verify, measure, compare and publish LLM serving recipes."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("rigbook")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
