"""The causal LM's adaptive softmax (`adaptive_softmax_cutoffs`): off by default; its loss, log-probabilities and
generation against recomputations from torch's module; saving and loading; refused configs; training, stateful too."""

import json
import subprocess
import sys

import pytest
import torch

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.models.adaptive_softmax import AdaptiveSoftmaxHead
from hf_seqmodels.tasks.stateful_lm import evaluate_stateful, stream_rows, train_stateful
from hf_seqmodels.training.loop import TrainingArguments

from ..test_modeling_common import REMOTE_CODE_SCRIPT

VOCAB, PAD, EOS = 40, 0, 2
CUTOFFS = [6, 20]
ADAPTIVE = {"adaptive_softmax_cutoffs": CUTOFFS, "tie_word_embeddings": False}


def lm(seed: int = 0, **changes) -> RecurrentForCausalLM:
    torch.manual_seed(seed)
    config = RecurrentConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=16, pad_token_id=PAD, **changes)
    return RecurrentForCausalLM(config).eval()


def ids(batch: int = 3, length: int = 7, seed: int = 1) -> torch.LongTensor:
    return torch.randint(3, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def reference_log_probs(model: RecurrentForCausalLM, input_ids: torch.Tensor) -> torch.Tensor:
    """Log-probabilities ``(batch, length, vocab)`` from the base model's outputs through torch's own
    ``AdaptiveLogSoftmaxWithLoss.log_prob`` (eval mode: no dropout)."""
    hidden = model.model(input_ids=input_ids, use_cache=False).last_hidden_state
    return torch.nn.AdaptiveLogSoftmaxWithLoss.log_prob(model.lm_head, hidden.flatten(0, 1)).view(
        *input_ids.shape, VOCAB)


def mean_nll(log_probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean negative log-probability of the targets not labelled -100, by gathering."""
    scored = targets != -100
    return -log_probs[scored].gather(1, targets[scored].unsqueeze(1)).mean()


def test_off_by_default_the_output_layer_is_the_full_softmax():
    default, explicit = lm(), lm(adaptive_softmax_cutoffs=None, adaptive_softmax_div_value=4.0)
    assert type(default.lm_head) is torch.nn.Linear
    assert default.config.adaptive_softmax_cutoffs is None
    input_ids = ids()
    with torch.no_grad():
        logits = default(input_ids=input_ids).logits
        hidden = default.model(input_ids=input_ids, use_cache=False).last_hidden_state
        projected = hidden @ default.projection.weight.T
        expected = projected @ default.model.embed_tokens.weight.T + default.lm_head.bias  # tied: the embeddings
        torch.testing.assert_close(logits, expected)
        torch.testing.assert_close(explicit(input_ids=input_ids).logits, logits, rtol=0, atol=0)


def test_loss_is_the_mean_negative_log_probability_of_the_targets():
    model, input_ids = lm(**ADAPTIVE), ids()
    labels = input_ids.clone()
    labels[0, 2:5] = -100
    labels[2, -1] = -100
    with torch.no_grad():
        log_probs = reference_log_probs(model, input_ids)
        outputs = model(input_ids=input_ids, labels=labels)
        assert outputs.logits is None
        torch.testing.assert_close(outputs.loss, mean_nll(log_probs[:, :-1].flatten(0, 1), labels[:, 1:].flatten()))

        shift_labels = torch.roll(labels, 1, dims=1)  # targets aligned with the positions, -100 among them
        found = model(input_ids=input_ids, shift_labels=shift_labels).loss
        torch.testing.assert_close(found, mean_nll(log_probs.flatten(0, 1), shift_labels.flatten()))

        scored = (labels[:, 1:] != -100).sum()
        summed = model(input_ids=input_ids, labels=labels, num_items_in_batch=2 * scored).loss
        torch.testing.assert_close(summed, outputs.loss / 2)

        nothing = model(input_ids=input_ids, labels=torch.full_like(labels, -100)).loss
        ignored = torch.full_like(labels[:, 1:], -100).flatten()  # the mean over no target: NaN, as transformers' heads
        torch.testing.assert_close(nothing, mean_nll(log_probs[:, :-1].flatten(0, 1), ignored), equal_nan=True)


def test_labels_out_of_the_vocabulary_are_refused():
    model, input_ids = lm(**ADAPTIVE), ids()
    with pytest.raises(ValueError, match="labels"):
        model(input_ids=input_ids, labels=torch.full_like(input_ids, VOCAB))
    with pytest.raises(ValueError, match="labels"):
        model(input_ids=input_ids, labels=input_ids[:, 1:])


def test_logits_without_labels_are_log_probabilities_that_sum_to_one():
    model, input_ids = lm(**ADAPTIVE), ids()
    with torch.no_grad():
        logits = model(input_ids=input_ids).logits
        torch.testing.assert_close(logits, reference_log_probs(model, input_ids))
    torch.testing.assert_close(logits.exp().sum(-1), torch.ones(input_ids.shape))
    # Every cluster gets a share of the probability: the ids of each are reachable.
    for low, high in zip([0, *CUTOFFS], [*CUTOFFS, VOCAB]):
        assert (logits[..., low:high].exp().sum(-1) > 0).all()


def test_greedy_generation_takes_the_argmax_of_the_log_probabilities_step_by_step():
    model, prompt = lm(**ADAPTIVE), ids(batch=2, length=4)
    with torch.no_grad():
        generated = model.generate(prompt, max_new_tokens=5, do_sample=False)
        expected = prompt
        for _ in range(5):  # the whole prefix each step: no cache
            log_probs = reference_log_probs(model, expected)[:, -1]
            expected = torch.cat([expected, log_probs.argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(generated, expected)


def test_beam_search_scores_are_the_log_probabilities_of_its_sequences():
    model, prompt = lm(**ADAPTIVE), ids(batch=2, length=4)
    new = 4
    with torch.no_grad():
        result = model.generate(prompt, max_new_tokens=new, num_beams=3, num_return_sequences=3, length_penalty=0.0,
                                do_sample=False, return_dict_in_generate=True, output_scores=True)
        sequences = result.sequences
        log_probs = reference_log_probs(model, sequences)
    continuation = sequences[:, -new:].unsqueeze(-1)
    expected = log_probs[:, -new - 1:-1].gather(2, continuation).squeeze(-1).sum(-1)
    torch.testing.assert_close(result.sequences_scores, expected, rtol=0, atol=1e-4)
    assert len({tuple(row) for row in sequences[:3].tolist()}) == 3  # three different beams


def test_save_and_load_keep_the_adaptive_softmax(tmp_path):
    model, input_ids = lm(**ADAPTIVE), ids()
    model.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["adaptive_softmax_cutoffs"] == CUTOFFS and saved["adaptive_softmax_div_value"] == 4.0
    assert (tmp_path / "model.safetensors").exists()
    loaded = RecurrentForCausalLM.from_pretrained(tmp_path).eval()
    assert isinstance(loaded.lm_head, AdaptiveSoftmaxHead)
    state, loaded_state = model.state_dict(), loaded.state_dict()
    assert state.keys() == loaded_state.keys()
    for name, tensor in state.items():
        assert torch.equal(loaded_state[name], tensor), name
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids=input_ids).logits, model(input_ids=input_ids).logits)


def test_a_config_saved_before_the_fields_loads_with_a_full_softmax(tmp_path):
    lm().save_pretrained(tmp_path)
    path = tmp_path / "config.json"
    saved = json.loads(path.read_text())
    del saved["adaptive_softmax_cutoffs"], saved["adaptive_softmax_div_value"]
    path.write_text(json.dumps(saved))
    loaded = RecurrentForCausalLM.from_pretrained(tmp_path)
    assert loaded.config.adaptive_softmax_cutoffs is None and type(loaded.lm_head) is torch.nn.Linear


@pytest.mark.slow
def test_a_saved_folder_loads_and_generates_from_its_own_code(tmp_path):
    """In a process where ``import hf_seqmodels`` fails (the common tests' remote-code script)."""
    model = lm(**ADAPTIVE)
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    inputs = {"input_ids": ids(), "attention_mask": torch.ones(3, 7, dtype=torch.long)}
    generate_kwargs = {"max_new_tokens": 3, "num_beams": 2, "do_sample": False}
    with torch.no_grad():
        case = {"auto_class": "AutoModelForCausalLM", "folder": str(folder), "inputs": inputs,
                "expected": model(**inputs).logits, "state_dict": model.state_dict(), "prompts": inputs,
                "generate_kwargs": generate_kwargs, "generated": model.generate(**inputs, **generate_kwargs)}
    torch.save([case], tmp_path / "cases.pt")
    env = {"PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1", "PYTHONNOUSERSITE": "1"}
    result = subprocess.run([sys.executable, "-c", REMOTE_CODE_SCRIPT, str(tmp_path / "cases.pt")], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "loaded RecurrentForCausalLM" in result.stdout


@pytest.mark.parametrize(
    "changes, match",
    [
        ({"adaptive_softmax_cutoffs": []}, "adaptive_softmax_cutoffs"),
        ({"adaptive_softmax_cutoffs": [0, 10]}, "adaptive_softmax_cutoffs"),
        ({"adaptive_softmax_cutoffs": [10, 10]}, "adaptive_softmax_cutoffs"),
        ({"adaptive_softmax_cutoffs": [20, 10]}, "adaptive_softmax_cutoffs"),
        ({"adaptive_softmax_cutoffs": [10, VOCAB]}, "adaptive_softmax_cutoffs"),
        ({"adaptive_softmax_cutoffs": [10.0]}, "adaptive_softmax_cutoffs"),
        ({"adaptive_softmax_cutoffs": "10,20"}, "adaptive_softmax_cutoffs"),
        ({"adaptive_softmax_div_value": 1.0}, "adaptive_softmax_div_value"),
        ({"adaptive_softmax_div_value": "4"}, "adaptive_softmax_div_value"),
        ({"adaptive_softmax_div_value": 8.0}, "adaptive_softmax_div_value.*fewer"),  # 16 // 8**2 = 0 features
        ({"tie_word_embeddings": True}, "tie_word_embeddings=False"),
    ],
)
def test_bad_adaptive_softmax_configs_are_refused(changes, match):
    with pytest.raises(ValueError, match=match):
        RecurrentConfig(vocab_size=VOCAB, hidden_size=16, **{**ADAPTIVE, **changes})


def test_resizing_the_vocabulary_is_refused():
    with pytest.raises(ValueError, match="adaptive softmax cannot be resized"):
        lm(**ADAPTIVE).resize_token_embeddings(VOCAB + 4)


def test_training_steps_lower_the_loss_with_the_awd_options():
    awd = {"locked_dropout": True, "embedding_dropout": 0.1, "dropout": 0.1, "output_dropout": 0.1,
           "weight_drop": 0.1, "word_type_dropout": 0.05, "activation_regularization": 1.0,
           "temporal_activation_regularization": 1.0}
    model, input_ids = lm(num_layers=2, **ADAPTIVE, **awd), ids(batch=4, length=10)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    def eval_loss() -> float:
        model.eval()
        with torch.no_grad():
            return model(input_ids=input_ids, labels=input_ids).loss.item()

    before = eval_loss()
    model.train()
    for _ in range(20):
        model.train()
        loss = model(input_ids=input_ids, labels=input_ids).loss
        loss.backward()
        assert all(p.grad is not None for p in model.lm_head.parameters())
        optimizer.step()
        optimizer.zero_grad()
    assert eval_loss() < before - 0.5


def test_stateful_language_modelling_with_an_adaptive_softmax(tmp_path):
    model, stream = lm(**ADAPTIVE, eos_token_id=EOS), torch.randint(0, VOCAB, (60,),
                                                                      generator=torch.Generator().manual_seed(2))
    loss, count = evaluate_stateful(model, stream, 3, 5, pad_id=EOS)
    inputs, targets = stream_rows(stream, 3, pad_id=EOS)
    with torch.no_grad():
        expected = mean_nll(reference_log_probs(model, inputs).flatten(0, 1), targets.flatten())
    assert count == len(stream) - 1
    assert abs(loss - expected.item()) < 1e-5

    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=3, learning_rate=1e-2,
                             max_train_steps=4, logging_steps=1)
    weights = model.lm_head.head.weight.clone()
    results = train_stateful(model, stream, args, 5, False, lambda m: evaluate_stateful(m, stream, 3, 5, EOS)[0], EOS)
    assert results["steps"] == 4 and results["eval_loss"] < loss
    assert not torch.equal(model.lm_head.head.weight, weights)


def test_the_word_tokenizer_numbers_words_by_descending_frequency():
    """The adaptive softmax's clusters are id ranges: the tasks' word-level tokenizer must rank words by count."""
    texts = ["b a b c b a d", "c b a e e e e e"]
    tokenizer = train_tokenizer(texts, "word", 100)
    counts = {word: sum(text.split().count(word) for text in texts) for word in "abcde"}
    by_id = sorted(counts, key=tokenizer.convert_tokens_to_ids)
    assert [counts[word] for word in by_id] == sorted(counts.values(), reverse=True)
    assert min(tokenizer.convert_tokens_to_ids(list(counts))) == len(tokenizer.all_special_ids)


def test_autocast_leaves_the_adaptive_softmax_in_its_weights_dtype():
    """torch's module fails on the mixed dtypes of autocast (bf16 on CPU, as --mixed_precision bf16 runs)."""
    model, input_ids = lm(cell_type="gru", **ADAPTIVE), ids()
    with torch.no_grad():
        expected = model(input_ids=input_ids, labels=input_ids).loss
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=input_ids, labels=input_ids).loss
            logits = model(input_ids=input_ids).logits
    assert loss.dtype == logits.dtype == torch.float32
    torch.testing.assert_close(loss, expected, rtol=0, atol=0.05)
    torch.testing.assert_close(logits.exp().sum(-1), torch.ones(input_ids.shape))
