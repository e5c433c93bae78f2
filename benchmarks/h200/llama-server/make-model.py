"""A Llama-3.1-8B-shaped model with random weights and SmolLM2's tokenizer, saved as a Hugging Face folder.

Run on the GPU machine (no weights can be downloaded there): python3 make-model.py TOKENIZER_DIR OUT_DIR.
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
started = time.time()
config = LlamaConfig(vocab_size=49152, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                     num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=16384,
                     rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
                     bos_token_id=1, eos_token_id=2)
torch.manual_seed(0)
with torch.device("cuda"):
    model = LlamaForCausalLM(config).to(torch.bfloat16)
params = sum(p.numel() for p in model.parameters())
model.save_pretrained(out, safe_serialization=True)
for item in tokenizer_dir.iterdir():
    shutil.copy(item, out / item.name)
print(json.dumps({"params": params, "embedding_params": 49152 * 4096, "seconds": round(time.time() - started, 1)}))
