"""The equal-architecture table (benchmarks.peers.model_shapes): each toolkit's saved configuration read in the same
words. Ours is a config our package saved; JoeyNMT saves the config it trained with (model/config.yaml); eole's
config.json is given both as our recipe writes its model section and as eole 0.6.4 saved it for the comparison."""

import json
from pathlib import Path

import yaml

from benchmarks.peers import data as peers_data
from benchmarks.peers import model_shapes
from benchmarks.peers import recipe as peers_recipe
from hf_seqmodels.models.configuration_attention_seq2seq import AttentionSeq2SeqConfig

DATA = peers_data.PreparedData(Path("/data"), "en", "de")
RECIPE = peers_recipe.Recipe.main_job(29000)
# The model section of the config.json eole 0.6.4 saved with the comparison's seed-2 model.
EOLE_SAVED = {
    "input_feed": 0, "share_decoder_embeddings": True, "share_embeddings": False, "hidden_size": 294,
    "architecture": "custom",
    "encoder": {"rnn_type": "GRU", "src_word_vec_size": 294, "bridge": False, "hidden_size": 294, "layers": 1,
                "encoder_type": "brnn"},
    "decoder": {"bidirectional_encoder": True, "rnn_type": "GRU", "decoder_type": "rnn", "tgt_word_vec_size": 294,
                "global_attention": "general", "layers": 1, "hidden_size": 294, "with_cross_attn": True},
    "embeddings": {"position_encoding_type": None, "src_word_vec_size": 294, "tgt_word_vec_size": 294,
                   "word_vec_size": 294},
}


def saved(folder: Path, name: str, text: str) -> Path:
    (folder / "model").mkdir(parents=True)
    (folder / "model" / name).write_text(text)
    return folder


def test_the_three_models_read_alike(tmp_path):
    config = AttentionSeq2SeqConfig(vocab_size=6000, **{name: getattr(RECIPE, name) for name in (
        "embedding_size", "hidden_size", "cell_type", "bidirectional_encoder", "encoder_layers", "decoder_layers",
        "attention_type", "input_feeding", "dropout", "tie_word_embeddings")})
    config.save_pretrained(tmp_path / "ours" / "model")
    tuning = RECIPE.untuned("joeynmt")
    joeynmt = saved(tmp_path / "joeynmt", "config.yaml", yaml.safe_dump(
        peers_recipe.joeynmt_config(RECIPE, DATA, tmp_path / "joeynmt" / "model", 1, 64, tuning)))
    written = peers_recipe.eole_config(RECIPE, DATA, tmp_path / "eole" / "model", 1, RECIPE.untuned("eole"))
    eole = saved(tmp_path / "eole", "config.json", json.dumps({"model": written["model"]}))
    shapes = {"ours": model_shapes.shape("ours", tmp_path / "ours"), "joeynmt": model_shapes.shape("joeynmt", joeynmt),
              "eole": model_shapes.shape("eole", eole)}
    assert all(list(shape) == list(model_shapes.FIELDS) for shape in shapes.values())
    size = RECIPE.hidden_size
    for name in ("ours", "joeynmt"):
        assert shapes[name]["encoder"] == f"GRU, 1 layer(s), {size} per direction"
        assert shapes[name]["decoder"] == f"GRU, 1 layer(s), {size}"
        assert shapes[name]["embeddings"] == RECIPE.embedding_size
        assert shapes[name]["decoder's first state"] == "tanh(Linear(encoder's final states))"
    half = peers_recipe.EOLE_HIDDEN_SIZE // 2
    assert shapes["eole"]["encoder"] == f"GRU, 1 layer(s), {half} per direction"
    assert shapes["eole"]["decoder's first state"] == "the encoder's final states"
    for field in ("attention", "input feeding", "output layer tied to the target embeddings", "position encodings"):
        assert len({shape[field] for shape in shapes.values()}) == 1, field
    assert shapes["ours"]["attention"] == model_shapes.LUONG_GENERAL and shapes["ours"]["position encodings"] == "none"
    # eole's own saved file reads as what the recipe wrote for it
    real = saved(tmp_path / "eole-saved", "config.json", json.dumps({"model": EOLE_SAVED}))
    assert model_shapes.shape("eole", real) == shapes["eole"]


def test_the_section_lists_each_toolkits_model_and_fill_records_the_runs_on_disk(tmp_path):
    AttentionSeq2SeqConfig(hidden_size=8, embedding_size=8).save_pretrained(tmp_path / "ours" / "model")
    runs = [{"toolkit": "ours", "seed": seed, "train": {"parameters": 1234, "command": shlex_command(folder)}}
            for seed, folder in ((1, tmp_path / "ours" / "model"), (2, tmp_path / "gone" / "model"))]
    path = tmp_path / "peers.json"
    path.write_text(json.dumps({"runs": runs}))
    assert model_shapes.section(json.loads(path.read_text())) == []
    assert model_shapes.fill(path) == ["ours seed 1"]
    results = json.loads(path.read_text())
    assert results["runs"][0]["train"]["model_shape"]["embeddings"] == 8 and "model_shape" not in results["runs"][1][
        "train"]
    lines = model_shapes.section(results)
    assert lines[0] == "## Equal architecture" and "recorded from: ours seed 1)" in lines[2]
    assert "| embeddings | 8 |" in lines and "| parameters (each toolkit's own count) | 1,234 |" in lines


def shlex_command(model_dir: Path) -> str:
    return f"python scripts/run_translation.py --output_dir {model_dir} --seed 1"
