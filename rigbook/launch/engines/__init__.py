"""Engine adapters, one module per launch kind, behind :class:`~rigbook.launch.engines.base.Engine`."""

from __future__ import annotations

from rigbook.launch.engines.base import Engine
from rigbook.launch.engines.docker import DockerEngine
from rigbook.launch.engines.external import ExternalEngine
from rigbook.launch.engines.llama_cpp import LlamaCppEngine
from rigbook.launch.engines.llama_server import LlamaServerEngine
from rigbook.launch.engines.script_repo import ScriptRepoEngine
from rigbook.launch.engines.sglang import SglangEngine
from rigbook.launch.engines.vllm import VllmEngine

ENGINES: dict[str, Engine] = {
    e.kind: e
    for e in (
        DockerEngine(),
        VllmEngine(),
        SglangEngine(),
        ScriptRepoEngine(),
        LlamaCppEngine(),
        LlamaServerEngine(),
        ExternalEngine(),
    )
}


def engine_for(kind: str) -> Engine:
    """The adapter of a launch kind."""
    return ENGINES[kind]
