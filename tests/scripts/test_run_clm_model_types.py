"""run_clm.py drives every causal LM family through --model_type and --config_overrides."""

import runpy
import sys

from transformers import AutoModelForCausalLM

from tests.scripts.test_scripts_smoke import RUN_CLM, TINY_CLM, check_clm_output


def test_run_clm_trains_a_transformer_lm(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    overrides = "d_model=16,ffn_dim=32,decoder_layers=1,num_heads=2"
    argv = [str(RUN_CLM), "--output_dir", str(tmp_path / "lm"), "--model_type", "transformer",
            "--config_overrides", overrides, *TINY_CLM]
    monkeypatch.setattr(sys, "argv", argv)
    runpy.run_path(str(RUN_CLM), run_name="__main__")
    check_clm_output(tmp_path / "lm", num_processes=1)
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "lm")
    assert type(model).__name__ == "TransformerForCausalLM"
    assert (model.config.d_model, model.config.num_heads, model.config.decoder_layers) == (16, 2, 1)
