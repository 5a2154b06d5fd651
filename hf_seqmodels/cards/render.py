"""A run's model card: YAML metadata built with huggingface_hub's `ModelCardData`, text from the task's template.

The templates (``templates/<task>.md``) ship inside the package, so an installed hf_seqmodels renders cards too.
The card states exactly the run's numbers: the values in the YAML ``model-index`` are the results file's floats,
the tables use `format_metric`, as compare.py's tables do.
"""

from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from .catalog import TASKS, base_model_of, dataset_of
from .describe import describe_architecture, family_tag, hyperparameters
from .results import format_metric, run_scores, seed_summary
from .speed import speed_lines

TEMPLATE_DIR = Path(__file__).parent / "templates"


SPLITS = {"eval": "validation", "test": "test"}  # a run's score prefix -> the model-index's dataset split


def card_data(run: dict, model_name: str, license: str | None = None) -> ModelCardData:
    """The card's YAML metadata: model-index with every validation and test score of the run (a sacreBLEU score
    with its signature, under the metric's ``args``), license, library, tags, data sets."""
    task, dataset = run["task"], dataset_of(run)
    results = [
        EvalResult(task_type=task, dataset_type=dataset["hub_id"], dataset_name=dataset["name"],
                   dataset_config=dataset["config"], dataset_split=split, metric_type=metric.hub_id,
                   metric_name=metric.name, metric_value=value,
                   metric_args={"signature": run[f"{metric.hub_id}_signature"]}
                   if f"{metric.hub_id}_signature" in run else None)
        for prefix, split in SPLITS.items() for metric, value in run_scores(run, prefix)
    ]
    base = base_model_of(run)
    tags = ["hf_seqmodels", family_tag(run), task] + ([] if base else ["custom_code"])
    return ModelCardData(
        model_name=model_name,
        eval_results=results,
        license=license or dataset["license"] or "apache-2.0",
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
