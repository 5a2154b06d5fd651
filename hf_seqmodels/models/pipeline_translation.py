"""A translation pipeline for sequence-to-sequence models, saved with them as remote code.

transformers 5 removed its own "translation" pipeline; a model folder whose config lists this one under
``custom_pipelines`` still works with ``pipeline("translation", model=folder, trust_remote_code=True)``, and returns
what the old one did: ``[{"translation_text": ...}]`` per input text. A model with a source vocabulary of its own
(``config.source_vocab_size`` set) reads its inputs with the tokenizer saved in the folder's (or Hub repository's)
``source_tokenizer/``; otherwise the folder's tokenizer does both sides.
"""

from transformers import AutoTokenizer, Pipeline

SOURCE_TOKENIZER_DIR = "source_tokenizer"
CUSTOM_PIPELINES = {"translation": {"impl": "pipeline_translation.TranslationPipeline",
                                    "pt": ["AutoModelForSeq2SeqLM"]}}


class TranslationPipeline(Pipeline):
    """Translate texts with ``model.generate()``; generation options (``num_beams``, ``max_new_tokens``, ...) are
    passed through, the model's saved generation config supplying the rest."""

    _load_tokenizer = True
    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.source_tokenizer = self.tokenizer
        if (source_vocab_size := getattr(self.model.config, "source_vocab_size", None)) is not None:
            try:
                self.source_tokenizer = AutoTokenizer.from_pretrained(self.model.name_or_path,
                                                                      subfolder=SOURCE_TOKENIZER_DIR)
            except (OSError, ValueError) as error:  # no such folder, or one without tokenizer files
                raise ValueError(
                    f"The model reads a source vocabulary of its own (source_vocab_size={source_vocab_size}), but "
                    f"{self.model.name_or_path!r} has no {SOURCE_TOKENIZER_DIR}/ to read it with: save the source "
                    "tokenizer there (run_translation.py does)."
                ) from error

    def __call__(self, texts, **generate_kwargs):
        """``texts``: a string -> ``[{"translation_text": ...}]`` (one per returned sequence); a list of strings ->
        one such list per string, or one dict per string when each has one translation (as transformers 4 did)."""
        results = super().__call__(texts, **generate_kwargs)
        if isinstance(texts, list) and all(len(result) == 1 for result in results):
            return [result[0] for result in results]
        return results

    def _sanitize_parameters(self, **generate_kwargs):
        return {}, generate_kwargs, {}

    def preprocess(self, text: str):
        encoded = self.source_tokenizer(text, return_tensors="pt")
        return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}

    def _forward(self, model_inputs, **generate_kwargs):
        return {"output_ids": self.model.generate(**model_inputs, **generate_kwargs)}

    def postprocess(self, model_outputs):
        texts = self.tokenizer.batch_decode(model_outputs["output_ids"], skip_special_tokens=True)
        return [{"translation_text": text.strip()} for text in texts]
