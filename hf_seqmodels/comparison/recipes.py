"""The models the suites compare, as fields of their tasks' argument dataclasses (by name, as
`tasks.arguments.parse_dict` reads them). Our models train a tokenizer on the training texts; the pretrained encoder
keeps its own. The recipes came from short runs on the validation splits."""

from ..data.paths import data_dir

BERT = str(data_dir() / "models" / "all-MiniLM-L6-v2")
RNN_SST2 = {"model_type": "recurrent", "tokenizer_type": "word", "vocab_size": 16000, "embedding_size": 128,
            "hidden_size": 128, "classifier_pooling": "max", "learning_rate": 2e-3, "per_device_train_batch_size": 64}
RNN_TAGGER = {"model_type": "recurrent", "tokenizer_type": "wordpiece", "vocab_size": 16000, "embedding_size": 128,
              "hidden_size": 256, "learning_rate": 2e-3, "per_device_train_batch_size": 32}
BILSTM = {"cell_type": "lstm", "bidirectional": True}
TRANSFORMER = {"model_type": "transformer", "hidden_size": 128, "num_heads": 4, "num_layers": 2, "ffn_dim": 512,
               "config_overrides": "norm_position=pre", "learning_rate": 5e-4, "num_warmup_steps": 200}
# The BiLSTM whose word embeddings start from the pretrained encoder's rows (found by token string in its own
# vocabulary), as Tai et al. start from GloVe.
PRETRAINED_EMBEDDINGS = {"embeddings_from": BERT}
# The larger BiLSTM of each suite: two layers, wider, more dropout (for --full; slow on a CPU budget).
WIDE = {"num_layers": 2, "embedding_size": 256, "dropout": 0.3}
FINE_TUNED = {"model_name_or_path": BERT, "learning_rate": 1e-4, "num_warmup_steps": 10, "weight_decay": 0.01,
              "per_device_train_batch_size": 32}

# Translation of the Tatoeba English-Mandarin pairs (tatoeba_en_zh, either direction): a WordPiece tokenizer per
# language (each CJK character its own pre-token), as the course notes do.
TATOEBA = {"dataset_name": "tatoeba_en_zh", "vocabulary": "separate", "tokenizer_type": "wordpiece",
           "vocab_size": 8000, "per_device_train_batch_size": 64}
# The Transformer's sizes (our config fields); Marian takes the same ones, post-norm being the only kind it has.
TRANSFORMER_SIZES = "d_model=256,ffn_dim=512,encoder_layers=2,decoder_layers=2,num_heads=4,dropout=0.1"
TRANSFORMER_TRAINING = {"learning_rate": 1e-3, "num_warmup_steps": 200}
TRANSLATORS = {
    "Attention GRU": {"model_type": "attention_seq2seq"},
    "Transformer": {"model_type": "transformer", **TRANSFORMER_TRAINING,
                    "config_overrides": f"{TRANSFORMER_SIZES},norm_position=pre"},
}
# Multi30k: the attention families of the course (Luong's is general attention with input feeding, on an LSTM, as
# in the paper), our Transformer, and transformers' MarianMTModel of the same sizes trained by the same script.
MULTI30K_TRANSLATORS = {
    "Attention GRU": {"model_type": "attention_seq2seq"},
    "Attention LSTM": {"model_type": "attention_seq2seq", "config_overrides": "cell_type=lstm"},
    "Bahdanau": {"model_type": "attention_seq2seq", "config_overrides": "attention_type=bahdanau"},
    "Luong": {"model_type": "attention_seq2seq",
              "config_overrides": "cell_type=lstm,attention_type=luong_general,input_feeding=True"},
    "Transformer": TRANSLATORS["Transformer"],
    "Marian": {"model_type": "marian", **TRANSFORMER_TRAINING, "config_overrides": TRANSFORMER_SIZES},
}

# The taggers of the walkthrough: a BiLSTM with a softmax per token, the same with a CRF (Viterbi decoding), BERT.
TAGGERS = {"BiLSTM": {**RNN_TAGGER, **BILSTM}, "BiLSTM-CRF": {**RNN_TAGGER, **BILSTM, "use_crf": True}}
# UD English-EWT's UPOS taggers: the character CNN of Ma & Hovy (2016) over each piece's spelling and the pretrained
# encoder's embeddings, chosen on validation (results/upos_recipe_search.md).
UPOS_TAGGER = {"spelling_features": 32, "embeddings_from": BERT}
# WNUT-17's 3,394 training tweets: a smaller vocabulary and model, and the character CNN of Ma & Hovy (2016) over
# each piece's spelling; chosen on validation (results/wnut17_recipe_search.md, with the suite's 30 epochs).
WNUT17_TAGGER = {"vocab_size": 8000, "hidden_size": 128, "dropout": 0.3, "learning_rate": 2e-3, "spelling_features": 32}
WORD_VECTORS = "<the suite's word vectors>"  # a model field's value: the file the suite's word_vectors run wrote

# PTB language models: one layer of 256, trained statefully (truncated BPTT of 35 over the text as one stream);
# AWD-LSTM's regularisers (Merity et al. 2018) against plain dropout (`ptb_lm`'s variants take these two). Every
# model of the suite has the full softmax tied to its embeddings, as the Transformer does.
PTB_SIZES = {"embedding_size": 256, "hidden_size": 256, "num_layers": 1}
PTB_PLAIN = {"embedding_dropout": 0.1, "dropout": 0.0, "output_dropout": 0.3}
PTB_AWD = {"locked_dropout": True, "embedding_dropout": 0.2, "dropout": 0.2, "output_dropout": 0.3, "weight_drop": 0.2,
           "word_type_dropout": 0.05, "activation_regularization": 2.0, "temporal_activation_regularization": 1.0}
PTB_TRAINING = {"per_device_train_batch_size": 20, "per_device_eval_batch_size": 10, "learning_rate": 1e-2,
                "lr_scheduler_type": "linear", "num_warmup_steps": 100, "max_grad_norm": 0.25, "logging_steps": 50}
STATEFUL = {"lm_protocol": "stateful", "block_size": 35}
# The RNN and the GRU take a smaller learning rate: at 1e-2 the RNN diverged (validation perplexity 1305 after 10
# minutes) and the GRU sat at the unigram loss for 600 steps. Four minutes on one thread, seed 42, validation
# perplexity: RNN 1e-3 316, 3e-3 261; GRU 1e-3 332, 3e-3 222. The LSTMs keep 1e-2 (the same trial: LSTM 1e-2 204,
# 3e-3 223; AWD-LSTM 1e-2 217, 3e-3 267).
PTB_SLOWER = {"learning_rate": 3e-3}
PTB_LANGUAGE_MODELS = {
    "RNN": {"cell_type": "rnn", **PTB_SIZES, **PTB_PLAIN, **STATEFUL, **PTB_SLOWER},
    "LSTM": {"cell_type": "lstm", **PTB_SIZES, **PTB_PLAIN, **STATEFUL},
    "GRU": {"cell_type": "gru", **PTB_SIZES, **PTB_PLAIN, **STATEFUL, **PTB_SLOWER},
    # A Transformer has no state to carry: it trains on blocks and is scored by a sliding window, every token once
    # with at least eval_stride tokens of context.
    "Transformer": {"model_type": "transformer", "lm_protocol": "blocks", "block_size": 128, "eval_stride": 64,
                    "config_overrides": "d_model=256,ffn_dim=1024,decoder_layers=2,num_heads=4,norm_position=pre,"
                                        "dropout=0.2",
                    "learning_rate": 1e-3, "num_warmup_steps": 200},
    "AWD-LSTM": {"cell_type": "lstm", **PTB_SIZES, **PTB_AWD, **STATEFUL},
}
