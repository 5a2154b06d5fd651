"""The ``scaling`` entry's smoke results: both axes measured for every model, medians with their quartiles, and the
plot written."""


def test_scaling_plot_written(smoke_run):
    out, data = smoke_run
    entry = data["entries"]["scaling"]
    assert (out / entry["figures"][0]).stat().st_size > 0
    varied = {(row["model"], row["varied"]) for row in entry["rows"]}
    assert len(varied) == 2 * len({row["model"] for row in entry["rows"]})
    for row in entry["rows"]:
        low, high = row["ms_per_step_iqr"]
        assert 0 < low <= row["ms_per_step"] <= high
