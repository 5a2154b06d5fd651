"""Data: loading the text data sets and batching them (`loading`), their checks (`checks`), tokenizers
(`tokenization`), pretrained word vectors (`pretrained_embeddings`), and where the data lives (`paths`)."""
