"""Using a saved model: translate lines of text (n-best lists with their scores, attention pictures), continue
prompts with a language model, and the web page of scripts/demo.py. scripts/translate.py, generate.py and demo.py
parse their options and call these.

    model, tokenizers = load_translator("outputs/multi30k-gru")   # engine="ctranslate2": an export's folder;
                                                                  # int8=True: quantized for the CPU (quantization)
    for hypotheses in translate_nbest(model, tokenizers, ["A dog runs.", ""], num_beams=5, num_return_sequences=2):
        print(hypotheses)   # [Hypothesis(text=..., score=...), ...]; [] for the empty line

    model, tokenizer = load_language_model("outputs/ptb-lstm")
    print(continue_prompts(model, tokenizer, ["the company said"], seed=0, do_sample=True, top_k=40))
"""

import io
import math
import sys
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, set_seed
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

from ..data.tokenization import CONTINUATION_MARK, SPACE_PIECE, load_tokenizer
from ..models.decoding import decode
from ..models.modeling_utils import SeqModelsPreTrainedModel
from ..storage.safe_loading import load_pretrained
from ..tasks.translation import (
    TranslationTokenizers,
    attention_figure,
    batches_by_length,
    load_tokenizers,
    load_translation_model,
    model_name,
)
from .ctranslate2_export import CTranslate2Translator
from .quantization import quantize_for_serving
from .translations import Hypothesis, check_positive, check_translation_options

__all__ = ["ENGINES", "given", "Hypothesis", "check_model_folder", "load_translator", "load_language_model",
           "read_lines", "check_translation_options", "translate_nbest", "format_translations",
           "save_attention_pictures", "check_sampling_options", "continue_prompts", "translation_demo"]


ENGINES = ("transformers", "ctranslate2")  # what runs a translator: our generate(), or a CTranslate2 export


def given(**options) -> dict:
    """The ``options`` that are set (not None): those left None take the model's saved generation defaults."""
    return {name: value for name, value in options.items() if value is not None}


def check_model_folder(model_dir, made_by: str) -> None:
    """Raise a ValueError unless ``model_dir`` is a folder holding a saved model (its ``config.json``); ``made_by``
    names the script that saves such folders."""
    folder = Path(model_dir)
    if not folder.is_dir():
        raise ValueError(f"{model_dir}: there is no such folder ({folder.absolute()}). Pass a model folder saved by "
                         f"{made_by}.")
    if not (folder / "config.json").is_file():
        raise ValueError(f"{model_dir} holds no model (no config.json in it): pass a model folder saved by "
                         f"{made_by}.")


def load_translator(model_dir, engine: str = "transformers", num_threads: int = 0, int8: bool = False) -> tuple:
    """The translator saved in the folder ``model_dir`` and its `TranslationTokenizers`: with the engine
    "transformers" our model (in eval mode); with "ctranslate2" a `ctranslate2_export.CTranslate2Translator` of the
    export in ``model_dir`` (scripts/export_ctranslate2.py), which `translate_nbest` takes in place of the model.
    ``num_threads``: the CPU threads it runs (torch's intra-op threads, or CTranslate2's); 0 leaves the default.
    ``int8``: our recurrent model quantized for the CPU (`quantization.quantize_for_serving`; a Transformer is a
    ValueError pointing to its CTranslate2 export, which is quantized when exported)."""
    if engine not in ENGINES:
        raise ValueError(f"--engine={engine!r}: choose one of {ENGINES}.")
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 0:
        raise ValueError(f"--num_threads must be an integer of at least 0 (0: the engine's default), got "
                         f"{num_threads!r}.")
    if engine == "ctranslate2":
        if int8:
            raise ValueError("--int8 quantizes our recurrent model (--engine transformers); a CTranslate2 export is "
                             "quantized when it is made (export_ctranslate2.py --quantization int8) or loaded "
                             "(CTranslate2Translator(compute_type='int8')).")
        translator = CTranslate2Translator(model_dir, intra_threads=num_threads)
        return translator, translator.tokenizers
    check_model_folder(model_dir, "scripts/run_translation.py")
    if num_threads:
        torch.set_num_threads(num_threads)
    model = load_translation_model(model_dir).eval()
    return quantize_for_serving(model) if int8 else model, load_tokenizer(model_dir, "model_dir", load_tokenizers)


def load_language_model(model_dir, int8: bool = False) -> tuple:
    """The language model saved in the folder ``model_dir`` (through `AutoModelForCausalLM`, in eval mode; with
    ``int8``, quantized for the CPU by `quantization.quantize_for_serving`) and its tokenizer (padding on the left,
    where generation continues). Any other model is a ValueError naming it."""
    check_model_folder(model_dir, "scripts/run_clm.py")
    config = AutoConfig.from_pretrained(model_dir)
    causal_lm = MODEL_FOR_CAUSAL_LM_MAPPING.get(type(config), None)
    if causal_lm is None or causal_lm.__name__ not in (config.architectures or [causal_lm.__name__]):
        raise ValueError(f"{model_dir} holds a {config.model_type!r} model {config.architectures or []}, not a "
                         "language model: pass a folder saved by scripts/run_clm.py.")
    model = load_pretrained(AutoModelForCausalLM, model_dir, config=config).eval()
    return quantize_for_serving(model) if int8 else model, load_tokenizer(model_dir, "model_dir", padding_side="left")


def read_lines(path=None) -> list[str]:
    """The lines of the UTF-8 file ``path`` (standard input when None), without their line ends."""
    if path is None:
        return sys.stdin.read().splitlines()
    if not Path(path).is_file():
        raise ValueError(f"--input={str(path)!r}: no such file.")
    return Path(path).read_text(encoding="utf-8").splitlines()


@torch.no_grad()
def translate_nbest(
    model,
    tokenizers: TranslationTokenizers,
    texts: list[str],
    num_return_sequences: int = 1,
    batch_size: int = 64,
    **generate_kwargs,
) -> list[list[Hypothesis]]:
    """The ``num_return_sequences`` best translations of each of ``texts`` by ``model.generate(**generate_kwargs)``
    (the model's saved generation defaults fill in the rest), best first, with their scores from beam search.
    Texts are translated in batches of similar lengths; the result follows the order of ``texts``, and an empty (or
    blank) text gets no translation (``[]``). ``model`` may be a `ctranslate2_export.CTranslate2Translator`
    (`load_translator` with ``engine="ctranslate2"``), which decodes with the same options."""
    if not isinstance(model, torch.nn.Module):  # it checks the same options
        return model.translate_nbest(texts, num_return_sequences, batch_size, **generate_kwargs)
    check_translation_options(model, generate_kwargs.get("num_beams"), num_return_sequences, batch_size=batch_size,
                              max_new_tokens=generate_kwargs.get("max_new_tokens"))
    # The scores need output_scores, with which generate() by default decodes with GenerationMixin's loop (it then
    # returns per-step scores as GenerationMixin computes them); only sequences_scores is read here, which our loop
    # returns as GenerationMixin does: on our models, it is named.
    loop = {"custom_generate": decode} if isinstance(model, SeqModelsPreTrainedModel) else {}
    results = [[] for _ in texts]
    for batch in batches_by_length(texts, batch_size, [i for i, text in enumerate(texts) if text.strip()]):
        inputs = tokenizers.source([texts[i] for i in batch], padding=True, return_tensors="pt",
                                   return_token_type_ids=False).to(model.device)
        outputs = model.generate(**inputs, num_return_sequences=num_return_sequences, output_scores=True,
                                 return_dict_in_generate=True, **{**loop, **generate_kwargs})
        decoded = tokenizers.target.batch_decode(outputs.sequences, skip_special_tokens=True)
        scores = outputs.get("sequences_scores")  # beam search only
        for k, text in enumerate(decoded):
            score = None if scores is None else scores[k].item()
            results[batch[k // num_return_sequences]].append(Hypothesis(text.strip(), score))
    return results


def format_translations(translations: list[list[Hypothesis]], nbest: bool) -> list[str]:
    """Output lines: the best translation of each sentence, or with ``nbest`` each hypothesis as
    ``<sentence number>\\t<score>\\t<translation>`` (sentences numbered from 0, as fairseq-interactive's ``H-`` lines
    are). A sentence without a translation gives one empty line either way."""
    lines = []
    for number, hypotheses in enumerate(translations):
        if not hypotheses:
            lines.append("")
        elif nbest:
            lines.extend(f"{number}\t{hypothesis.score:.4f}\t{hypothesis.text}" for hypothesis in hypotheses)
        else:
            lines.append(hypotheses[0].text)
    return lines


def save_attention_pictures(model, tokenizers: TranslationTokenizers, texts: list[str], folder,
                            **generate_kwargs) -> list[Path]:
    """Draw the attention of ``model`` over each non-empty text (`attention_figure`) into ``folder/<line number from
    1>.png``; returns the paths written. A model without attention is a ValueError."""
    from matplotlib import pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, text in enumerate(texts, start=1):
        if not text.strip():
            continue
        figure = attention_figure(model, tokenizers, text, **generate_kwargs)
        if figure is None:
            raise ValueError(f"--attention_dir: this {model.config.model_type!r} model returns no attention weights "
                             "(attention_type='none'?), so there is no picture to draw; leave the option out.")
        paths.append(folder / f"{number}.png")
        figure.savefig(paths[-1], dpi=120)
        plt.close(figure)
    return paths


def check_sampling_options(do_sample: bool, num_return_sequences: int, max_new_tokens: int | None,
                           temperature: float | None, top_k: int | None, top_p: float | None) -> None:
    """Raise a ValueError naming the option when a sampling option is out of range, is given without
    ``--do_sample``, or when greedy decoding is asked for more than one continuation."""
    check_positive("num_return_sequences", num_return_sequences)
    check_positive("max_new_tokens", max_new_tokens)
    check_positive("top_k", top_k)
    if temperature is not None and not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"--temperature must be a finite number above 0, got {temperature!r}.")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"--top_p must be in (0, 1], got {top_p!r}.")
    if do_sample:
        return
    given = [f"--{name}" for name, value in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p))
             if value is not None]
    if given:
        raise ValueError(f"{', '.join(given)} shape(s) sampling, and decoding is greedy: add --do_sample.")
    if num_return_sequences > 1:
        raise ValueError(f"--num_return_sequences={num_return_sequences}: greedy decoding gives one continuation "
                         "per prompt; add --do_sample to draw several.")


@torch.no_grad()
def continue_prompts(model, tokenizer, prompts: list[str], num_return_sequences: int = 1, seed: int | None = None,
                     **generate_kwargs) -> list[list[str]]:
    """``num_return_sequences`` continuations of each prompt by ``model.generate(**generate_kwargs)``, each decoded
    with its prompt. Each prompt is read after the tokenizer's eos (as every training sentence of run_clm.py is),
    one prompt at a time; ``seed`` seeds the sampling first, so that the same seed gives the same texts."""
    if seed is not None:
        set_seed(seed)
    start = f"{tokenizer.eos_token} " if tokenizer.eos_token else ""
    continuations = []
    for prompt in prompts:
        inputs = tokenizer(start + prompt, return_tensors="pt", return_token_type_ids=False).to(model.device)
        outputs = model.generate(**inputs, num_return_sequences=num_return_sequences, **generate_kwargs)
        continuations.append([text.strip() for text in tokenizer.batch_decode(outputs, skip_special_tokens=True)])
    return continuations


def _demo_introduction(folder_name: str, config) -> str:
    """The demo page's first paragraph: the model in words (`model_name`) and how to read its attention picture, whose
    axes show the pieces the model reads and writes (`piece_labels`)."""
    name = model_name(config)
    article = "an" if name[0].lower() in "aeiou" else "a"
    introduction = f"Translation by `{folder_name}`, {article} {name} model."
    if getattr(config, "attention_type", None) == "none":
        return introduction + " It has no attention to draw."
    return (f"{introduction} The model reads and writes words in pieces. Each row of the picture shows where it "
            f"looked among the sentence's pieces while writing that piece of its translation; a piece that continues "
            f"a word starts with {CONTINUATION_MARK}, and {SPACE_PIECE} is a piece that is only a space.")


def _figure_image(figure):
    """The matplotlib ``figure`` as a PIL image; the figure is closed."""
    from matplotlib import pyplot as plt
    from PIL import Image

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    plt.close(figure)
    buffer.seek(0)
    return Image.open(buffer)


def translation_demo(model_dir):
    """A gradio page (``gradio.Blocks``) that translates a sentence with the model saved in ``model_dir`` and shows
    its attention picture (none for a model without attention), as a Hub Space would serve it. Its function is the
    page's ``translate_sentence`` attribute. Needs gradio (``pip install "hf-seqmodels[demo]"``)."""
    try:
        import gradio as gr
    except ImportError as error:
        raise ImportError('The demo page needs gradio: pip install "hf-seqmodels[demo]".') from error
    model, tokenizers = load_translator(model_dir)

    def translate_sentence(sentence: str):
        """The sentence's translation and its attention picture (a PIL image; None when the model has none or the
        text is blank)."""
        if not sentence.strip():
            return "", None
        translation = translate_nbest(model, tokenizers, [sentence])[0][0].text
        figure = attention_figure(model, tokenizers, sentence)
        return translation, None if figure is None else _figure_image(figure)

    with gr.Blocks(title=f"Translate with {Path(model_dir).name}") as demo:
        gr.Markdown(_demo_introduction(Path(model_dir).name, model.config))
        sentence = gr.Textbox(label="Sentence")
        button = gr.Button("Translate")
        translation = gr.Textbox(label="Translation", interactive=False)
        picture = gr.Image(label="Attention", type="pil", interactive=False, elem_id="attention")
        for trigger in (button.click, sentence.submit):
            trigger(translate_sentence, inputs=sentence, outputs=[translation, picture])
    demo.translate_sentence = translate_sentence
    return demo
