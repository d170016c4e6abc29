"""Exact, offline token counts: reference values, tiktoken equivalence, hazards, early exit."""

from __future__ import annotations

import ast
import hashlib
import inspect
import math
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_scratchpad import count_tokens
from jupyter_scratchpad.errors import TokenizerDataError
from jupyter_scratchpad.tokens import _count, _encodings, encoding_for_model, load_encoding, tokenizer_for


def test_reference_ids_and_counts() -> None:
    # The example of OpenAI's cookbook for cl100k_base.
    assert load_encoding("cl100k_base").encode_ordinary("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    assert count_tokens("tiktoken is great!", model="gpt-4") == 6
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0


def test_hashes_are_tiktokens_own_pins() -> None:
    from tiktoken_ext import openai_public

    source = inspect.getsource(openai_public)
    pinned = {
        node.value.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.keyword) and node.arg == "expected_hash" and isinstance(node.value, ast.Constant)
    }
    assert set(_encodings.EXPECTED_SHA256.values()) <= pinned


def test_encoding_data_verified_and_never_downloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken.load

    def no_network(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("tiktoken tried to download")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    ranks = _encodings.read_verified_ranks("o200k_base")
    assert len(ranks) == 199_998
    assert load_encoding("o200k_base").n_vocab >= 200_000


def test_tampered_data_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_encodings.EXPECTED_SHA256, "cl100k_base", hashlib.sha256(b"other").hexdigest())
    with pytest.raises(TokenizerDataError, match="expected"):
        _encodings.read_verified_ranks("cl100k_base")
    with pytest.raises(TokenizerDataError, match="no offline data"):
        _encodings.read_verified_ranks("p50k_base")


@pytest.mark.parametrize(
    ("model", "encoding", "estimate"),
    [
        ("gpt-4o", "o200k_base", False),
        ("gpt-4o-mini", "o200k_base", False),
        ("gpt-4.1", "o200k_base", False),
        ("gpt-5", "o200k_base", False),
        ("o3-mini", "o200k_base", False),
        ("o1", "o200k_base", False),
        ("gpt-4", "cl100k_base", False),
        ("gpt-3.5-turbo", "cl100k_base", False),
        ("claude-sonnet-4-5", "cl100k_base", True),
        ("claude-3-opus-20240229", "cl100k_base", True),
        ("mystery-model", "o200k_base", False),
        ("gemini-2.5-pro", "o200k_base", False),
    ],
)
def test_model_rules(model: str, encoding: str, estimate: bool) -> None:
    rule = encoding_for_model(model)
    assert (rule.encoding, rule.is_estimate) == (encoding, estimate)


def test_claude_is_ceil_of_cl100k_times_1_1() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 37
    raw = len(load_encoding("cl100k_base").encode_ordinary(text))
    assert count_tokens(text, model="claude-sonnet-4") == math.ceil(raw * 1.1)
    assert count_tokens("hello world", model="claude-3-haiku") == 3  # ceil(2 * 1.1)


def test_special_token_text_is_ordinary_text() -> None:
    n = count_tokens("before <|endoftext|> after <|endofprompt|>")
    assert n == len(load_encoding("o200k_base").encode_ordinary("before <|endoftext|> after <|endofprompt|>"))
    assert n > 3


def test_long_texts_equal_whole_text_tiktoken() -> None:
    import json

    enc = load_encoding("o200k_base")
    doc = json.dumps(
        [{"id": i, "name": f"item-{i}", "tags": ["a", "b/c"], "v": i * 1.5} for i in range(20_000)], indent=2
    )
    assert len(doc) > 4 * _count.CHUNK_CHARS
    assert count_tokens(doc) == len(enc.encode_ordinary(doc))
    minified = doc.replace("\n", "").replace("  ", "")
    assert count_tokens(minified) == len(enc.encode_ordinary(minified))


def test_pathological_runs_are_counted_exactly_and_fast() -> None:
    # 'A' * N is one piece; tiktoken is super-linear on it. The linear counter takes it.
    enc = load_encoding("o200k_base")
    text = "A" * 300_000
    assert count_tokens(text) == len(enc.encode_ordinary(text))
    assert count_tokens("B" * 4_000_000) == tokenizer_for("gpt-4o").count("B" * 4_000_000)


def test_million_whitespace_does_not_panic() -> None:
    # tiktoken raises pyo3's PanicException (a BaseException) on this; we must not.
    for text in (" " * 1_000_000, "\n" * 1_000_000, " \t" * 600_000):
        n = count_tokens(text)
        assert 0 < n < len(text)


def test_counting_50mb_does_not_hold_a_list_of_ids() -> None:
    text = ("lorem ipsum dolor sit amet 12345, " * 40 + "\n") * 40_000  # ~54 MB
    tok = tokenizer_for("gpt-4o")
    tracemalloc.start()
    try:
        n = tok.count(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n > 10_000_000
    # A list of 10M+ ints would need > 80 MB of pointers alone; chunks keep it to a few MB.
    assert peak < 30 * 1024 * 1024


def test_early_exit_reads_only_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    tok = tokenizer_for("gpt-4o")
    seen: list[int] = []
    original = tok._raw_chunk

    def spy(chunk: str) -> int:
        seen.append(len(chunk))
        return original(chunk)

    monkeypatch.setattr(tok, "_raw_chunk", spy)
    text = "word " * 2_000_000  # 10 MB
    count, exact = tok.count_upto(text, 5120)
    assert count >= 5120 and not exact
    assert sum(seen) < 200_000  # a few chunks, not 10 MB

    seen.clear()
    small = "x" * 1000
    assert tok.count_upto(small, 5000) == (tok.count(small), True)  # under the byte bound: exact


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_a_large_text_reaches_the_limit_by_its_bytes_alone(encoding: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # no token of either encoding is longer than MAX_TOKEN_BYTES, so n bytes are >= n / 128 tokens
    ranks = load_encoding(encoding)._mergeable_ranks
    longest = max(ranks, key=len)
    assert len(longest) == _count.MAX_TOKEN_BYTES
    tok = _count.Tokenizer(_count.ModelTokens("t", encoding))
    # the densest text there is: the longest token over and over
    dense = longest.decode("utf-8", errors="replace") * 100
    full = tok.count(dense)
    assert full >= len(dense.encode()) / _count.MAX_TOKEN_BYTES
    for limit in (full - 1, full, full + 1, full * 2):
        count, exact = tok.count_upto(dense, limit)
        assert (count >= limit) == (full >= limit) and exact == (full < limit)

    def no_counting(*_args: object) -> None:
        raise AssertionError("counted")

    monkeypatch.setattr(_count, "load_linear_counter", no_counting)
    assert tok.count_upto("x" * (5120 * 128), 5120) == (5120, False)


def test_upto_agrees_with_full_count_at_the_boundary() -> None:
    tok = tokenizer_for("gpt-4o")
    text = "alpha beta gamma\n" * 3000
    full = tok.count(text)
    assert tok.reaches(text, full)
    assert not tok.reaches(text, full + 1)


_ALPHABET = st.sampled_from(list("ab Z9 0\n\n\r\t/.,:;'\"{}[]-_é漢😀\u00a0\u2028") + ["  ", "\n/", "1a", "'s", "//"])


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(_ALPHABET, min_size=0, max_size=200), encoding=st.sampled_from(["o200k_base", "cl100k_base"]))
def test_chunked_count_is_exact_on_adversarial_text(parts: list[str], encoding: str) -> None:
    text = "".join(parts)
    enc = load_encoding(encoding)
    rule = _count.ModelTokens("t", encoding)
    tok = _count.Tokenizer(rule)
    saved = (_count.CHUNK_CHARS, _count.SEARCH_CHARS)
    # Tiny chunks so that every example is cut many times.
    _count.CHUNK_CHARS, _count.SEARCH_CHARS = 3, 4
    try:
        assert tok.count(text) == len(enc.encode_ordinary(text))
    finally:
        _count.CHUNK_CHARS, _count.SEARCH_CHARS = saved


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(_ALPHABET, max_size=120),
    limit=st.integers(1, 80),
    model=st.sampled_from(["gpt-4o", "gpt-4", "claude-sonnet-4"]),
)
def test_count_upto_decides_like_the_full_count(parts: list[str], limit: int, model: str) -> None:
    text = "".join(parts) * 3
    tok = tokenizer_for(model)
    full = tok.count(text)
    saved = (_count.CHUNK_CHARS, _count.SEARCH_CHARS)
    _count.CHUNK_CHARS, _count.SEARCH_CHARS = 5, 5
    try:
        count, exact = tok.count_upto(text, limit)
    finally:
        _count.CHUNK_CHARS, _count.SEARCH_CHARS = saved
    assert (count >= limit) == (full >= limit)
    if full < limit:
        assert (count, exact) == (full, True)
