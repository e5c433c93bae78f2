"""Write the recipes of the reproduce and speculation device runs from the committed F16 ones.

- `...-f16-claimed-...`: the F16 recipe whose claims are the committed F16 run's measured points at
  1, 4 and 16 users (runs/f16/result.json), so `rigbook reproduce` on another card or host checks them.
- `...-f16-spec-synth-L-...`: the F16 recipe with a SmolLM2-135M-shaped drafter (random weights, made by
  make-model.py) and llama-server's synthetic acceptance (--spec-synth-len L): the drafter costs what a
  real one of that size costs; the acceptance is set, not earned.

Run from the repository root: python3 benchmarks/h200/llama-server/make-recipes.py
"""

import copy
import json
from pathlib import Path

HERE = Path(__file__).parent
BASE = HERE / "recipes" / "llama-3-1-8b-shape-synthetic-f16-on-1x-h200-llama-server.json"
RUN = HERE / "runs" / "f16" / "result.json"
LEVELS = (1, 4, 16)
SYNTH_LENGTHS = ("3.0", "1.5")
DRAFTER = "smollm2-135m-shape-synthetic-f16.gguf"


def write(recipe: dict) -> None:
    path = HERE / "recipes" / f"{recipe['slug']}.json"
    path.write_text(json.dumps(recipe, indent=2) + "\n")
    print(path)


base = json.loads(BASE.read_text())
measured = json.loads(RUN.read_text())

claimed = copy.deepcopy(base)
claimed["slug"] = base["slug"].replace("-f16-", "-f16-claimed-")
claimed["title"] = base["title"] + " — with the committed run's numbers as claims"
claimed["perf_points"] = []
for point in measured["perf_points"]:
    if point["concurrency"] in LEVELS:
        claim = copy.deepcopy(point)
        claim["claimed_by"] = "submitter"
        claim["notes"] = f"rigbook's own F16 run on one H200 (benchmarks/h200/llama-server/runs/f16): {point['notes']}"
        claimed["perf_points"].append(claim)
write(claimed)

for length in SYNTH_LENGTHS:
    spec = copy.deepcopy(base)
    tag = length.replace(".", "-")
    spec["slug"] = base["slug"].replace("-f16-", f"-f16-spec-synth-{tag}-")
    spec["title"] = base["title"] + f" — SmolLM2-135M-shaped drafter, synthetic acceptance length {length}"
    spec["rigbook"]["launch"]["args"] = [
        "--model-draft", "${MODELS_DIR}/" + DRAFTER, "--n-gpu-layers-draft", "999",
        "--spec-type", "draft-simple", "--spec-draft-n-max", "3", "--spec-synth-len", length,
    ]
    spec["rigbook"]["speculative"] = {
        "method": "draft-simple",
        "drafter": "SmolLM2-135M-shaped, random weights (make-model.py smollm2-135m); acceptance set by --spec-synth-len",
        "draft_length": 3,
    }
    spec["artifacts"].append({**base["artifacts"][0], "pointer": DRAFTER, "files": [DRAFTER]})
    spec["requirements"]["requires"].append(f"the drafter GGUF at ${{MODELS_DIR}}/{DRAFTER} (run.sh makes it)")
    write(spec)
