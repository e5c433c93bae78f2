"""SmolLM2's tokenizer as Hugging Face files, read from a GGUF; checked against llama.cpp's converter.

python make-tokenizer.py MODEL.gguf OUT_DIR LLAMA_CPP/conversion/base.py
transformers reads the GGUF's vocabulary and merges (its GGUF reader wants torch only for tensors,
which are not read here). The files are then made to match SmolLM2's own tokenizer.json: digits
split one by one, byte-level pre-tokenizer, no BOS added. The check: the hash llama.cpp's
convert_hf_to_gguf.py computes to pick the pre-tokenizer must be the one it knows as "smollm".
"""

import ast
import hashlib
import json
import re
import sys
from pathlib import Path

import transformers.modeling_gguf_pytorch_utils as gguf_utils
from transformers import AutoTokenizer

gguf, out, converter = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
gguf_utils.is_torch_available = lambda: True  # metadata only: no tensor is read
AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(out)
(out / "tokenizer.model").unlink(missing_ok=True)  # a copy of the whole GGUF, not a tokenizer

spec = json.loads((out / "tokenizer.json").read_text())
spec["normalizer"] = None
spec["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": True},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
spec["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
# transformers' GGUF reader builds a SentencePiece-style Llama tokenizer (byte fallback, a "▁"
# decoder); SmolLM2's is GPT-2's byte-level BPE, which is also what makes llama.cpp's converter
# write a BPE (gpt2) vocabulary instead of an SPM one.
spec["model"].update(byte_fallback=False, fuse_unk=False, unk_token=None)
spec["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
(out / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
config = json.loads((out / "tokenizer_config.json").read_text())
config.pop("legacy", None)
# PreTrainedTokenizerFast takes tokenizer.json as written (transformers 5's GPT2Tokenizer would
# replace its pre-tokenizer).
config.update(add_bos_token=False, add_eos_token=False, add_prefix_space=False, bos_token="<|im_start|>",
              eos_token="<|im_end|>", tokenizer_class="PreTrainedTokenizerFast")
(out / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1))
(out / "special_tokens_map.json").write_text(json.dumps(
    {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>"}))

source = converter.read_text()
chktxt = ast.literal_eval(re.search(r"\n\s+chktxt = (.*)\n", source).group(1))  # the converter's test string
tokenizer = AutoTokenizer.from_pretrained(out)
chkhsh = hashlib.sha256(str(tokenizer.encode(chktxt)).encode()).hexdigest()
known = re.search(rf'chkhsh == "{chkhsh}":\s*\n\s*#[^\n]*\n\s*res = "(\w+)"', source)
if not known:
    sys.exit(f"convert_hf_to_gguf.py does not know this tokenizer (hash {chkhsh})")
sys.path.insert(0, str(converter.parent.parent / "gguf-py"))
from gguf.vocab import LlamaHfVocab  # noqa: E402 - llama.cpp's own, beside its converter

try:
    LlamaHfVocab(out)
    sys.exit("llama.cpp's converter would read this as a SentencePiece-style Llama vocabulary")
except FileNotFoundError:
    pass  # not a Llama-HF tokenizer: the converter takes the BPE (gpt2) path, as for SmolLM2
print(f"tokenizer: {len(tokenizer)} tokens, pre-tokenizer {known.group(1)!r} by the converter's hash, BPE vocab")
