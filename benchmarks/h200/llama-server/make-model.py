"""A Llama-3.1-8B-shaped model with random weights and SmolLM2's tokenizer, saved as a Hugging Face folder.

Run on the GPU machine (no weights can be downloaded there): python3 make-model.py TOKENIZER_DIR OUT_DIR [SHAPE].
SHAPE is `llama-3.1-8b` (the default) or `smollm2-135m`: SmolLM2-135M's shape, a drafter for the 8B
one (same vocabulary) whose acceptance the server then sets synthetically (--spec-synth-len).
Speed does not depend on the weights' values, so random weights of this shape give a trained
model's speed; the replies are gibberish.
"""

import json
import shutil
import sys
import time
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

tokenizer_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
shape = sys.argv[3] if len(sys.argv) > 3 else "llama-3.1-8b"
started = time.time()
SHAPES = {
    "llama-3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                         num_key_value_heads=8, rope_theta=500000.0, tie_word_embeddings=False),
    "smollm2-135m": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, rope_theta=100000.0, tie_word_embeddings=True),
}
config = LlamaConfig(vocab_size=49152, max_position_embeddings=16384, rms_norm_eps=1e-5, bos_token_id=1,
                     eos_token_id=2, **SHAPES[shape])
torch.manual_seed(0)
with torch.device("cuda"):
    model = LlamaForCausalLM(config).to(torch.bfloat16)
params = sum(p.numel() for p in model.parameters())
model.save_pretrained(out, safe_serialization=True)
for item in tokenizer_dir.iterdir():
    shutil.copy(item, out / item.name)
print(json.dumps({"params": params, "shape": shape, "embedding_params": 49152 * config.hidden_size, "seconds": round(time.time() - started, 1)}))
