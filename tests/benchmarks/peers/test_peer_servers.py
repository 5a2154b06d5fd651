"""The peers' decoding servers (serve_joeynmt, serve_eole) translate as the peers' own commands do (`joeynmt
test`, `eole predict`, through benchmarks.peers.toolkits.decode), on tiny models trained here for two updates.

They run in the peers' environments (.venv-peers/, made by benchmarks/peers/setup.sh), which CI does not have: each
test is skipped where its environment is missing."""

import dataclasses

import pytest

from benchmarks.peers import decoding_grid, toolkits
from benchmarks.peers.recipe import Recipe
from tests.benchmarks.peers.test_serving import PAIRS, prepared  # noqa: F401  (the fixture)

PEERS = [pytest.param(name, marks=pytest.mark.skipif(
    not (toolkits.PEER_VENVS / name / "bin" / "python").is_file(),
    reason=f"needs .venv-peers/{name} (bash benchmarks/peers/setup.sh {name}), which CI does not make"))
    for name in ("joeynmt", "eole")]


@pytest.mark.slow
@pytest.mark.parametrize("name", PEERS)
def test_a_peer_server_translates_as_the_peers_own_command(name, prepared, tmp_path):  # noqa: F811
    data, _ = prepared
    recipe = dataclasses.replace(Recipe.main_job(len(PAIRS), updates=2), warmup_steps=1, max_new_tokens=8)
    folder = tmp_path / name
    toolkits.train(name, recipe, data, folder, 1, recipe.untuned(name))
    command = decoding_grid.server_command(decoding_grid.own(name), folder / "model", data, recipe, 1, 1)
    server = decoding_grid.Server(name, command, 1, tmp_path / "server.log")
    try:
        ready = server.start()
        assert ready["ready"] and ready["toolkit"] == name and ready["torch_threads"] == 1
        assert "transformers" not in ready["versions"] and ready["versions"]["tokenizers"]
        for batch_size in (1, 8):  # one sentence per batch, or all in one: the command's batches are the same
            expected, _ = toolkits.decode(name, recipe, data, folder, data.folder / "test", batch_size, 1,
                                          f"b{batch_size}")
            measured = server.ask({"batch_size": batch_size, "sentences": len(PAIRS), "round": 0,
                                   "translations": True})
            assert measured["translations"] == expected
            assert measured["sentences"] == len(PAIRS) and measured["toolkit"] == name
    finally:
        server.close()
    assert server.process.returncode == 0
