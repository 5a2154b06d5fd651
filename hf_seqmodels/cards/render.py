"""A run's model card: YAML metadata built with huggingface_hub's `ModelCardData`, text from the task's template.

The templates (``templates/<task>.md``) ship inside the package, so an installed hf_seqmodels renders cards too.
The card states exactly the run's numbers: the values in the YAML ``model-index`` are the results file's floats,
the tables use `format_metric`, as compare.py's tables do. It names the splits the run records (`scored_splits`),
each score under the Hub data set that holds its split, and the license the training data's terms allow.
"""

from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from .catalog import TASKS, Metric, base_model_of, dataset_of, split_set
from .describe import describe_architecture, family_tag, hyperparameters
from .results import SPLIT_OF_PREFIX, format_metric, run_scores, scored_splits, seed_summary
from .speed import speed_lines

TEMPLATE_DIR = Path(__file__).parent / "templates"


def license_fields(dataset: dict, license: str | None) -> dict:
    """The card's license metadata: ``license`` where given, else the training data's; for data that names none
    but has known terms (research use: `catalog.DATASETS`), "other" with the name and link of those terms; else
    apache-2.0 (data the catalog does not know)."""
    if license or dataset["license"]:
        return {"license": license or dataset["license"]}
    if terms := dataset.get("terms"):
        return {"license": "other", "license_name": terms["license_name"], "license_link": terms["license_link"]}
    return {"license": "apache-2.0"}


def evaluation_words(splits: list[str], recorded: bool) -> str:
    """What the card's first sentence says of the evaluation: the ``splits`` of its scores (`scored_splits`), and
    where the run does not record them, that its scores' names say them."""
    if not splits:
        return "with no evaluation in its results"
    words = f"with its evaluation on the {' and '.join(splits)} split{'s' if len(splits) > 1 else ''}"
    return words + ("" if recorded else " (as its scores' names say; its results record no split)")


def eval_result(run: dict, split: str, metric: Metric, value: float) -> EvalResult:
    """One score of the model-index, under the Hub data set that holds its ``split`` (a sacreBLEU score with its
    signature, under the metric's ``args``)."""
    held_by = split_set(dataset_of(run), split)
    return EvalResult(task_type=run["task"], dataset_type=held_by["hub_id"], dataset_name=held_by["name"],
                      dataset_config=held_by["config"], dataset_split=split, metric_type=metric.hub_id,
                      metric_name=metric.name, metric_value=value,
                      metric_args={"signature": run[f"{metric.hub_id}_signature"]}
                      if f"{metric.hub_id}_signature" in run else None)


def card_data(run: dict, model_name: str, license: str | None = None) -> ModelCardData:
    """The card's YAML metadata: model-index with every validation and test score of the run (`eval_result`),
    license, library, tags, data sets."""
    task, dataset = run["task"], dataset_of(run)
    results = [eval_result(run, split, metric, value)
               for prefix, split in SPLIT_OF_PREFIX.items() for metric, value in run_scores(run, prefix)]
    base = base_model_of(run)
    tags = ["hf_seqmodels", family_tag(run), task] + ([] if base else ["custom_code"])
    return ModelCardData(
        model_name=model_name,
        eval_results=results,
        **license_fields(dataset, license),
        library_name="transformers",
        pipeline_tag=task,
        tags=tags,
        datasets=[dataset["hub_id"]],
        language=dataset["language"],
        metrics=sorted({result.metric_type for result in results}),
        base_model=base,
    )


def render_card(run: dict, model_name: str | None = None, license: str | None = None,
                template_dir: str | Path | None = None, benchmarks: dict | None = None) -> ModelCard:
    """The model card of ``run`` from the task's template (``<template_dir>/<task>.md``, by default the package's
    own); with ``benchmarks`` (the results of ``python -m benchmarks.run``), also what they measured on the model's
    family (`speed_lines`)."""
    task = run.get("task")
    if task not in TASKS:
        raise ValueError(f"The run's task {task!r} has no card template; known tasks: {list(TASKS)}.")
    model_name = model_name or run.get("name") or "model"
    data = card_data(run, model_name, license)
    dataset = dataset_of(run)
    splits, recorded = scored_splits(run)
    template = Path(template_dir or TEMPLATE_DIR) / f"{task}.md"

    def table(split: str) -> list[tuple[str, str]]:
        return [(metric.name, format_metric(value, metric.percent)) for metric, value in run_scores(run, split)]

    return ModelCard.from_template(
        data,
        template_path=str(template),
        model_name=model_name,
        architecture=describe_architecture(run),
        dataset_name=dataset["name"],
        dataset_about=dataset["about"],
        license_note=(dataset.get("terms") or {}).get("note"),
        evaluation=evaluation_words(splits, recorded),
        chosen_on=SPLIT_OF_PREFIX["eval"] if SPLIT_OF_PREFIX["eval"] in splits else None,
        limitations=dataset["limitations"],
        labels=run.get("labels", []),
        tag_scheme=run.get("tag_scheme"),
        crf=run.get("arguments", {}).get("use_crf", False),
        hyperparameters=hyperparameters(run),
        scores=table("eval"),
        test_scores=table("test"),
        test_num_beams=run.get("test_num_beams"),
        seed_summary=seed_summary(run),
        languages=run.get("languages"),
        signatures=[(name.upper(), run[f"{name}_signature"]) for name in ("bleu", "chrf")
                    if f"{name}_signature" in run],
        num_parameters=f"{run['num_parameters'] / 1e6:.2f}M",
        train_minutes=f"{run['train_runtime_s'] / 60:.1f}",
        throughput=f"{run['eval_samples_per_second']:.0f}" if "eval_samples_per_second" in run else "n/a",
        device=run.get("device", "unknown"),
        auto_class=TASKS[task].auto_class,
        trust_remote_code=not data.base_model,
        speed=speed_lines(run, benchmarks or {}),
    )
