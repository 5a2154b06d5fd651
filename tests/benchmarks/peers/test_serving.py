"""The decoding servers' shared part (benchmarks.peers.serving, .pieces) and ours end to end: the batches every
toolkit decodes, the pieces' transform both environments share, serve_ours's translations equal to generate()'s,
and the grid's line protocol and results with our server."""

import argparse
import gzip
import json
import os
import subprocess
import sys

import pytest
from tokenizers import Tokenizer
from transformers import AutoModelForSeq2SeqLM

from benchmarks.peers import data as peers_data
from benchmarks.peers import decoding_grid, pieces, serving, toolkits
from hf_seqmodels.serving.quantization import quantize_for_serving
from hf_seqmodels.tasks import translation
from tests.tasks.test_translation import tiny_model

# Sources with a tab and a no-break space (escaped in their pieces) and no empty line (JoeyNMT refuses one).
PAIRS = [("A man\xa0in a blue shirt.", "Ein Mann\xa0in einem blauen Hemd."),
         ("Two dogs\tplay in the snow!", "Zwei Hunde spielen im Schnee!"),
         ("A girl climbs a wooden playhouse.", "Ein Mädchen klettert in ein Spielhaus aus Holz."),
         ("A dog.", "Ein Hund."), ("Two men talk on a bench in the park.", "Zwei Männer reden im Park.")]
SEARCH = {"num_beams": 3, "length_penalty": 1.0, "max_new_tokens": 8, "early_stopping": True}


def test_batches_sort_by_length_stably_and_come_back_in_order():
    lengths = [3, 1, 3, 2, 1]
    assert serving.batches(lengths, 2) == [[1, 4], [3, 0], [2]]  # ties in the sentences' order
    assert serving.batches(lengths, 1) == [[1], [4], [3], [0], [2]]
    assert serving.batches(lengths, 8) == [[1, 4, 3, 0, 2]]
    order, ordered = serving.in_order(list("abcde"), 2, lengths)
    assert order == [1, 4, 3, 0, 2] and ordered == list("bedac")
    assert serving.restored(order, [f"<{letter}>" for letter in ordered]) == ["<a>", "<b>", "<c>", "<d>", "<e>"]
    assert serving.digest(["a", "b"]) == serving.digest(["a", "b"]) != serving.digest(["a", "c"])


@pytest.mark.parametrize("piece", ["▁Mann", "a\tb", "\xa0", "x\u2003y\n", "<0x41>"])
def test_escaping_round_trips_and_leaves_no_whitespace(piece):
    escaped = pieces.escape(piece)
    assert not any(character.isspace() for character in escaped)
    if "<0x" not in piece:  # a piece that already reads as an escape is not one our vocabulary holds
        assert pieces.unescape(escaped) == piece


def test_the_peers_environments_get_our_tokenizers_version():
    """The servers cut pieces with the tokenizers library of the peer's environment: setup.sh pins the version our
    environment locks."""
    locked = next(line for line in (toolkits.REPO_ROOT / "constraints" / "locked.txt").read_text().splitlines()
                  if line.startswith("tokenizers=="))
    setup = (toolkits.REPO_ROOT / "benchmarks" / "peers" / "setup.sh").read_text()
    for peer in ("joeynmt", "eole"):
        packages = next(line for line in setup.splitlines() if line.strip().startswith(f"[{peer}]="))
        assert locked in packages.split("=", 1)[1].strip('"').split(), (peer, locked)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """benchmarks.peers.data's folder for ``PAIRS`` (every split), with a tiny translator saved with its tokenizer
    in ``ours/``."""
    folder = tmp_path_factory.mktemp("decoding")
    for split in ("train", "validation", "test"):
        with gzip.open(folder / f"{split}.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.writelines(json.dumps({"en": en, "de": de}) + "\n" for en, de in PAIRS)
    data_args = translation.DataArguments(
        dataset_name=None, train_file=str(folder / "train.jsonl.gz"),
        validation_file=str(folder / "validation.jsonl.gz"), test_file=str(folder / "test.jsonl.gz"), vocab_size=120)
    data = peers_data.prepare(folder / "data", data_args)
    tokenizers = translation.load_tokenizers(data.tokenizer_dir)
    tiny_model(tokenizers, attention_type="luong_general").save_pretrained(folder / "ours")
    tokenizers.save_pretrained(folder / "ours")
    return data, folder / "ours"


def test_the_servers_pieces_are_the_ones_the_peers_were_trained_on(prepared):
    """The tokenizers library alone (a peer's environment) cuts and joins as benchmarks.peers.data did with
    transformers' tokenizer: the files' pieces, and the raw text back from them."""
    data, _ = prepared
    backend = Tokenizer.from_file(str(data.tokenizer_dir / "tokenizer.json"))
    tokenizer = data.tokenizer()
    for lang in (data.source_lang, data.target_lang):
        for text, line in zip(data.lines("test", lang), data.lines("test", lang, pieces=True), strict=True):
            assert pieces.pretokenize(backend, text) == line
            assert " ".join(map(pieces.escape, tokenizer.tokenize(text))) == line
            assert pieces.detokenize(backend, line) == text == tokenizer.decode(
                tokenizer.convert_tokens_to_ids([pieces.unescape(piece) for piece in line.split()]),
                skip_special_tokens=True).strip()
    line, text = data.lines("test", data.target_lang, pieces=True)[0], data.lines("test", data.target_lang)[0]
    assert pieces.detokenize(backend, f"<unk> {line} </s> not-a-piece") == text  # specials and unknowns dropped


def serve(model_dir, data, commands: list[dict], threads: int = 1, options: tuple[str, ...] = ()) -> list[dict]:
    """serve_ours in a fresh process (with ``options``), given ``commands`` on its input: its ready line and
    measurements."""
    command = [sys.executable, "-m", "benchmarks.peers.serve_ours", "--model", str(model_dir), "--source",
               str(data.raw("test", data.source_lang)), "--tokenizer", str(data.tokenizer_dir / "tokenizer.json"),
               "--threads", str(threads), "--num_beams", str(SEARCH["num_beams"]), "--length_penalty",
               str(SEARCH["length_penalty"]), "--max_new_tokens", str(SEARCH["max_new_tokens"]), *options]
    done = subprocess.run(command, input="".join(json.dumps(line) + "\n" for line in commands), capture_output=True,
                          text=True, timeout=300, cwd=toolkits.REPO_ROOT, check=False,
                          env={**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.slow
def test_serve_ours_translates_as_generate_does(prepared):
    data, model_dir = prepared
    ready, *measured = serve(model_dir, data, [{"batch_size": size, "sentences": count, "round": 0,
                                                "translations": True} for size, count in ((1, 5), (2, 5), (8, 3))])
    assert ready["ready"] and ready["toolkit"] == "ours" and ready["torch_threads"] == 1
    assert ready["source_sentences"] == len(PAIRS) and ready["versions"]["hf_seqmodels"]
    # plain generate(), one sentence at a time, in this process
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
    tokenizers = translation.load_tokenizers(model_dir)
    sources = data.lines("test", data.source_lang)
    expected = [tokenizers.target.decode(model.generate(**tokenizers.source([text], return_tensors="pt"),
                                                        **SEARCH)[0], skip_special_tokens=True).strip()
                for text in sources]
    assert any(expected) and len(set(expected)) > 1
    backend = Tokenizer.from_file(str(data.tokenizer_dir / "tokenizer.json"))
    for line, count in zip(measured, (5, 5, 3), strict=True):
        assert line["translations"] == expected[:count]  # batched as alone, in the sources' order
        assert line["sentences"] == count and line["seconds"] > 0
        assert line["sha1"] == serving.digest(expected[:count])
        assert line["output_pieces"] == sum(len(pieces.pretokenize(backend, text).split())
                                            for text in expected[:count])
    assert [line["batch_size"] for line in measured] == [1, 2, 8]


def test_serve_ours_int8_translates_as_the_model_quantized_for_serving(prepared):
    """``--int8``: the translations of our model quantized in this process, one sentence at a time (an int8 model's
    outputs depend on its batch)."""
    data, model_dir = prepared
    ready, measured = serve(model_dir, data, [{"batch_size": 1, "sentences": 4, "round": 0, "translations": True}],
                            options=("--int8",))
    model = quantize_for_serving(AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval())
    assert any(type(module).__module__.startswith("torch.ao.nn.quantized") for module in model.modules())
    tokenizers = translation.load_tokenizers(model_dir)
    expected = [tokenizers.target.decode(model.generate(**tokenizers.source([text], return_tensors="pt"),
                                                        **SEARCH)[0], skip_special_tokens=True).strip()
                for text in data.lines("test", data.source_lang)[:4]]
    assert ready["ready"] and measured["translations"] == expected and any(expected)


@pytest.mark.slow
def test_the_grid_interleaves_rounds_and_writes_its_results(prepared, tmp_path, capsys):
    data, model_dir = prepared
    out = tmp_path / "peers_decoding.json"
    results = decoding_grid.main(["--models", f"ours={model_dir}", "--engines", "ours", "--data", str(data.folder),
                                  "--batch_sizes", "1",
                                  "4", "--threads", "1", "--rounds", "2", "--sentences", "2", "--work",
                                  str(tmp_path / "work"), "--out", str(out)])
    assert json.loads(out.read_text()) == results
    assert [(m["round"], m["batch_size"], m["sentences"]) for m in results["measurements"]] == [
        (0, 1, 2), (0, 4, 5), (1, 1, 2), (1, 4, 5)]  # batch 1 on the first --sentences, the others on all
    assert all(row["same_output"] for row in results["summary"])
    assert results["servers"]["ours"]["1"]["ready"] and results["tokenizer_is_the_pieces"]
    assert results["command"].startswith("python -m benchmarks.peers.decoding_grid --models ours=")
    assert results["provenance"]["commit"] is not None
    assert results["search"] == {"num_beams": 5, "max_new_tokens": 64, "length_penalty": {"ours": 1.0}}
    assert "| 4 | 1 | ours | 5 |" in capsys.readouterr().out
    assert (tmp_path / "work" / "ours.threads1.log").read_text().startswith("$ ")


# A server of the protocol whose decoding is to upper-case the lines, printing on the way (a toolkit's chatter must
# not reach the protocol); ``sys.argv[1]`` names it.
FAKE = """import sys
from benchmarks.peers import serving

def load(args):
    def decode(texts, batch_size):
        print(f"chatter on the standard output: {len(texts)} at batch {batch_size}")
        return [text.upper() for text in texts]
    return decode

args = serving.parser("fake").parse_args(sys.argv[2:])
serving.serve(sys.argv[1], args, load, {"fake": "1"})
"""


def fake_server(name: str, data, tmp_path) -> decoding_grid.Server:
    command = [sys.executable, "-c", FAKE, name, "--model", "none", "--source", str(data.raw("test", "en")),
               "--tokenizer", str(data.tokenizer_dir / "tokenizer.json"), "--threads", "1"]
    return decoding_grid.Server(name, command, 1, tmp_path / f"{name}.log")


def test_the_protocol_takes_turns_item_by_item(prepared, tmp_path):
    data, _ = prepared
    servers = {name: fake_server(name, data, tmp_path) for name in ("ours", "joeynmt")}
    try:
        for server in servers.values():
            ready = server.start()
            assert ready["ready"] and ready["source_sentences"] == len(PAIRS) and ready["versions"] == {"fake": "1"}
        args = argparse.Namespace(rounds=2, batch_sizes=[1, 4], sentences=2)
        measured = decoding_grid.grid(servers, args, sentences=len(PAIRS))
    finally:
        for server in servers.values():
            server.close()
    assert [(m["round"], m["batch_size"], m["toolkit"], m["sentences"]) for m in measured] == [
        (0, 1, "ours", 2), (0, 1, "joeynmt", 2), (0, 4, "ours", 5), (0, 4, "joeynmt", 5),
        (1, 1, "ours", 2), (1, 1, "joeynmt", 2), (1, 4, "ours", 5), (1, 4, "joeynmt", 5)]
    expected = [en.upper() for en, _ in PAIRS]
    backend = Tokenizer.from_file(str(data.tokenizer_dir / "tokenizer.json"))
    for line in measured:
        assert line["sha1"] == serving.digest(expected[:line["sentences"]])
        assert line["output_pieces"] == sum(len(backend.encode(text, add_special_tokens=False).tokens)
                                            for text in expected[:line["sentences"]])
        assert line["seconds"] > 0 and line["threads"] == 1 and "load_before" in line
    # before the timed rounds, each server decodes one untimed batch of each size (after its own warm-up at load)
    calls = [line.split(": ")[1] for line in (tmp_path / "ours.log").read_text().splitlines()
             if line.startswith("chatter")]
    assert calls == ["5 at batch 8", "1 at batch 1", "4 at batch 4"] + ["2 at batch 1", "5 at batch 4"] * 2
    assert all(server.process.returncode == 0 for server in servers.values())


def test_a_server_that_ends_says_where_its_log_is(tmp_path):
    script = "import sys; print('broken', file=sys.stderr); sys.exit(3)"
    server = decoding_grid.Server("ours", [sys.executable, "-c", script], 1, tmp_path / "ours.log")
    with pytest.raises(RuntimeError, match=r"(?s)ours server ended \(exit 3\).*ours.log.*broken"):
        server.start()
