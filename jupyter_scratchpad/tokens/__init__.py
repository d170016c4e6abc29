"""Exact, offline token counting (tiktoken, with bpe-openai's data and linear counter)."""

from ._count import ModelTokens, Tokenizer, count_tokens, encoding_for_model, tokenizer_for
from ._encodings import load_encoding

__all__ = [
    "ModelTokens",
    "Tokenizer",
    "count_tokens",
    "encoding_for_model",
    "load_encoding",
    "tokenizer_for",
]
