"""From a trained model folder to a Hub repository, in separate steps: `prepare_hub_folder` renders the card from
the model's results and stages a checked folder; `load_check` loads that folder back where ``hf_seqmodels`` cannot
be imported; `upload` sends it with huggingface_hub (``create_repo`` + ``upload_folder``).

``HF_ENDPOINT`` (read by huggingface_hub) selects the Hub server.
"""

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import HfApi
from huggingface_hub.utils import HFValidationError, validate_repo_id

from ..models.pipeline_translation import SOURCE_TOKENIZER_DIR
from ..storage.atomic_folders import MANIFEST
from .catalog import TASKS
from .render import render_card
from .results import find_results_file, load_benchmarks, load_run
from .staging import STAGING_MARKER, check_hub_folder, check_model_dir, stage_hub_folder


@dataclass(frozen=True)
class HubFolder:
    """A staged, checked folder: where it is, its files (sorted) and the run its card states."""

    path: Path
    files: list[str]
    run: dict

    @property
    def auto_class(self) -> str:
        """The transformers Auto class the model loads with."""
        return TASKS[self.run["task"]].auto_class


def check_repo_id(repo_id: str) -> None:
    """Raise a ValueError naming ``--repo_id`` unless ``repo_id`` is a Hub model repository id ``'user/name'``
    (huggingface_hub's ``validate_repo_id``: letters, digits, '-', '_', '.', at most 96 characters...)."""
    if not isinstance(repo_id, str) or repo_id.count("/") != 1 or "" in repo_id.split("/"):
        raise ValueError(f"--repo_id {repo_id!r} is not of the form 'user/name' (your Hub user or organization, a "
                         "slash, the model's name), e.g. 'me/sst2-bilstm'.")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise ValueError(f"--repo_id {repo_id!r} is not a valid Hub repository id: {error}") from error


def prepare_hub_folder(model_dir: str | Path, repo_id: str, results: str | Path | None = None,
                       model: str | None = None, benchmarks: str | Path | None = None, license: str | None = None,
                       staging_dir: str | Path | None = None) -> HubFolder:
    """Stage ``model_dir`` for the Hub repository ``repo_id`` with a card rendered from its run, and check it.

    Args:
        model_dir: the output_dir of a training script.
        results: the results file the card states (`find_results_file`; default: ``<model_dir>/results.json``).
        model: the run's name in a ``results/<suite>.json``; also the card's model name (default: the repo's).
        benchmarks: the ``benchmarks.json`` whose figures on the model's family the card states (`load_benchmarks`:
            default the checkout's, if there; ``""`` for none).
        license: the card's license; default the training data's, else apache-2.0.
        staging_dir: where the folder is written; default ``<model_dir>-hub``.
    """
    check_repo_id(repo_id)
    check_model_dir(model_dir)
    run = load_run(find_results_file(model_dir, results), model)
    card = render_card(run, model_name=model or repo_id.split("/")[-1], license=license,
                       benchmarks=load_benchmarks(benchmarks))
    staging = Path(staging_dir or f"{str(model_dir).rstrip('/')}-hub")
    files = stage_hub_folder(model_dir, staging, card)
    check_hub_folder(staging, run)
    return HubFolder(staging, files, run)


LOAD_CHECK = f"""
import sys
sys.modules["hf_seqmodels"] = None  # `import hf_seqmodels` now fails: the folder must load on its own
import torch, transformers
folder, auto_class = sys.argv[1], sys.argv[2]
model = getattr(transformers, auto_class).from_pretrained(folder, trust_remote_code=True, use_safetensors=True).eval()
# A translation model with a source vocabulary of its own reads its inputs with its source tokenizer.
separate = getattr(model.config, "source_vocab_size", None) is not None
tokenizer = transformers.AutoTokenizer.from_pretrained(folder, subfolder={SOURCE_TOKENIZER_DIR!r} if separate else "",
                                                       trust_remote_code=True)
if model.can_generate() and not model.config.is_encoder_decoder:
    tokenizer.padding_side = "left"
batch = tokenizer(["a short test sentence", "and another"], return_tensors="pt", padding=True)
with torch.no_grad():
    if model.can_generate():  # a batched beam search through the loaded code
        outputs = model.generate(**batch, num_beams=2, max_new_tokens=4)
    else:
        outputs = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
print(type(model).__module__ + "." + type(model).__name__, tuple(outputs.shape))
"""


def load_check(folder: str | Path, auto_class: str) -> str:
    """Load ``folder`` with ``transformers.<auto_class>.from_pretrained(..., trust_remote_code=True)`` and its
    tokenizer in a fresh Python where ``hf_seqmodels`` cannot be imported (offline, empty module cache), and run
    one batch (through ``generate()`` for a generative model). Returns the loaded class's qualified name and the
    outputs' shape; raises RuntimeError on failure."""
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(HF_HOME=home, HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
        result = subprocess.run([sys.executable, "-c", LOAD_CHECK, str(Path(folder).resolve()), auto_class],
                                cwd=home, env=env, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"{folder} does not load with {auto_class}(trust_remote_code=True):\n{result.stderr}")
    return result.stdout.strip().splitlines()[-1]


def upload(folder: str | Path, repo_id: str, commit_message: str, private: bool = False,
           token: str | None = None) -> tuple[str, str]:
    """Create the model repository ``repo_id`` if it does not exist and commit ``folder`` to it. The token is
    ``token``, else ``HF_TOKEN`` or the saved login. Returns the repository's URL and the commit's."""
    check_repo_id(repo_id)
    api = HfApi(token=token)
    url = api.create_repo(repo_id, private=private or None, exist_ok=True)
    commit = api.upload_folder(folder_path=folder, repo_id=repo_id, commit_message=commit_message,
                               ignore_patterns=[STAGING_MARKER, MANIFEST])
    return str(url), commit.commit_url
