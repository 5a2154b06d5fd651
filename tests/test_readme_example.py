"""README's Python example, run as a newcomer runs it (a fresh process, the package imported by name) on a tiny
translator saved as run_translation.py saves one in place of the quick start's folder; what it prints is compared
with the package's own translation of the same sentences (`tasks.translation.translate`) and its pipeline."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from datasets import Dataset
from transformers import AutoModelForSeq2SeqLM

from hf_seqmodels.tasks.translation import train_tokenizers, translate

from .tasks.test_translation import PAIRS, tiny_model

README = Path(__file__).resolve().parents[1] / "README.md"
QUICKSTART_FOLDER = '"outputs/multi30k-gru"'
SENTENCES = ["A man rides a bike.", "Two dogs play in the snow."]


def readme_example() -> str:
    """The first ```python block of README.md."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "README.md has no ```python block"
    return blocks[0]


@pytest.fixture(scope="module")
def translator_dir(tmp_path_factory):
    tokenizers = train_tokenizers(Dataset.from_dict(PAIRS), "en", "de", vocab_size=120)
    model = tiny_model(tokenizers)
    model.generation_config.update(max_new_tokens=6)
    folder = tmp_path_factory.mktemp("translator")
    model.save_pretrained(folder)
    tokenizers.save_pretrained(folder)
    return folder, tokenizers


@pytest.mark.slow
def test_the_readme_example_translates_as_the_package_does(translator_dir):
    folder, tokenizers = translator_dir
    code = readme_example()
    assert QUICKSTART_FOLDER in code and all(repr(sentence).strip("'") in code for sentence in SENTENCES)
    ran = subprocess.run([sys.executable, "-c", code.replace(QUICKSTART_FOLDER, repr(str(folder)))],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})
    assert ran.returncode == 0, ran.stderr
    generated, piped = [ast.literal_eval(line) for line in ran.stdout.strip().splitlines()[-2:]]
    model = AutoModelForSeq2SeqLM.from_pretrained(folder)
    expected = translate(model, tokenizers, SENTENCES, num_beams=5)
    assert generated == expected
    assert piped == [{"translation_text": expected[0]}]


def test_the_example_names_the_quick_starts_folder():
    quickstart = (README.parent / "scripts" / "quickstart.sh").read_text()
    assert f"--output_dir {QUICKSTART_FOLDER.strip(chr(34))}" in quickstart
