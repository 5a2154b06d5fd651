"""The token-classification pipeline of a tagger with a CRF (``config.use_crf``), saved with it as remote code.

A CRF tagger's tags are its Viterbi path, not each token's arg-max: its config lists this pipeline under
``custom_pipelines``, so ``pipeline("token-classification", model=folder, trust_remote_code=True)`` returns the
Viterbi tags, in the stock pipeline's format. The chain runs over the first token of each word, as in training (a word
is an item of a pre-split input, ``is_split_into_words=True``, or else a run of non-space characters); a word's later
tokens take its tag. A token's ``score`` is 1.0: a Viterbi path gives no per-token probability.
"""

import torch
from transformers import TokenClassificationPipeline

CUSTOM_PIPELINES = {
    "token-classification": {"impl": "pipeline_token_classification.CRFTokenClassificationPipeline",
                             "pt": ["AutoModelForTokenClassification"]},
}
OFF_PATH = -10000.0  # the logit of every tag but the Viterbi one, so that the stock postprocessing picks it


class CRFTokenClassificationPipeline(TokenClassificationPipeline):
    """`TokenClassificationPipeline` whose tags are the model's Viterbi path (``model.tags_from_emissions``)."""

    def preprocess(self, sentence, offset_mapping=None, **preprocess_params):
        for model_inputs in super().preprocess(sentence, offset_mapping=offset_mapping, **preprocess_params):
            model_inputs["word_index"] = self._word_index(sentence, model_inputs)
            yield model_inputs

    def _word_index(self, sentence, model_inputs) -> torch.Tensor:
        """``(1, length)``: the index of each token's word, -1 for special tokens."""
        special = model_inputs["special_tokens_mask"][0].bool().tolist()
        if "word_ids" in model_inputs:  # pre-split words
            words = [-1 if word is None else word for word in model_inputs["word_ids"]]
        elif model_inputs.get("offset_mapping") is not None:
            words, count = [], -1
            for (start, end), is_special in zip(model_inputs["offset_mapping"][0].tolist(), special):
                # A token opens a word at the text's start, after a space, or after a special token.
                opens = start == 0 or sentence[start - 1].isspace() or not words or words[-1] == -1
                count += int(opens and not is_special and end > start)
                words.append(-1 if is_special else max(count, 0))
        else:  # a slow tokenizer: every token is a word
            words = list(range(len(special)))
        return torch.tensor([[-1 if is_special else word for word, is_special in zip(words, special)]])

    def _forward(self, model_inputs):
        word_index = model_inputs.pop("word_index")
        outputs = super()._forward(model_inputs)
        changes = torch.cat([torch.ones(1, 1, dtype=torch.bool), word_index[:, 1:] != word_index[:, :-1]], dim=1)
        starts = (word_index >= 0) & changes  # the first token of each word
        tags = self.model.tags_from_emissions(outputs["logits"], starts.to(outputs["logits"].device))
        # Each token takes the tag of its word's first token: the last word start at or before it.
        opened = torch.cummax(torch.where(starts, torch.arange(starts.shape[1]), 0), dim=1).values
        tags = tags.gather(1, opened.to(tags.device)).clamp(min=0)
        logits = torch.full_like(outputs["logits"], OFF_PATH).scatter(2, tags.unsqueeze(2), 0.0)
        return {**outputs, "logits": logits}
