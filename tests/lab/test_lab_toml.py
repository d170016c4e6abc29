"""Policies round-trip with Aura's TOML, and a tuned policy pastes into an Aura configuration unchanged.

The ``xfail(strict=True)`` tests pin bugs of the core's ``spill/_toml.py`` reported to the lead:
each fails today and will turn into an error (XPASS) the day the core is fixed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_scratchpad import InvalidArgumentError, SpillPolicy
from jupyter_scratchpad.lab import replay

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# TOML keys of any characters TOML strings can hold (U+007F is the core bug pinned below)
key_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x7f"), max_size=12)
thresholds = st.integers(0, 10**9)
policies = st.builds(
    SpillPolicy,
    min_tokens=thresholds,
    patterns=st.dictionaries(key_text, thresholds, max_size=5),
    min_bytes=st.none() | thresholds,
    server_patterns=st.dictionaries(key_text, st.dictionaries(key_text, thresholds, max_size=4), max_size=3),
    enabled=st.booleans(),
    context_safety_margin=st.floats(0, 0.95),
    max_extraction_tokens=st.integers(1, 10**7),
    turn_depth_bonus=st.integers(0, 100),
)


@settings(max_examples=300, deadline=None)
@given(policies)
def test_policy_to_toml_and_back_is_equal(policy: SpillPolicy) -> None:
    text = policy.to_toml()
    tomllib.loads(text)  # valid TOML on its own
    assert SpillPolicy.from_toml(text) == policy


@settings(max_examples=300, deadline=None)
@given(policies)
def test_parse_then_write_then_parse_is_equal(policy: SpillPolicy) -> None:
    parsed = SpillPolicy.from_toml(policy.to_toml())
    again = SpillPolicy.from_toml(parsed.to_toml())
    assert again == parsed
    assert again.to_toml() == parsed.to_toml()  # the text is stable too


def test_a_realistic_aura_config_is_read_as_it_is(data_dir: Path) -> None:
    path = data_dir / "aura.toml"
    before = path.read_bytes()
    policy = SpillPolicy.from_toml(path)
    assert path.read_bytes() == before
    assert policy == SpillPolicy.from_toml(path.read_text(encoding="utf-8")) == SpillPolicy.from_toml(str(path))
    assert policy.enabled is True
    assert policy.context_safety_margin == 0.25
    assert policy.max_extraction_tokens == 8000
    assert policy.turn_depth_bonus == 4
    assert policy.min_tokens == 5120
    assert policy.server_patterns == {
        "k8s": {"k8s_list_*": 512, "k8s_get_*": 2048, "k8s_logs": 1024},
        "github": {"search_*": 3000},
    }  # the weather server has no scratchpad table, and needs none
    assert policy.threshold_for("k8s_list_pods", server="k8s") == 512
    assert policy.threshold_for("k8s_list_pods", server="github") == 5120  # server tables are per server
    assert policy.threshold_for("search_code", server="github") == 3000
    assert policy.threshold_for("k8s_logs", server="k8s") == 1024


def _without_scratchpad_tables(text: str) -> str:
    """The config with its [agent.scratchpad] and [mcp.servers.*.scratchpad] tables cut out."""
    kept: list[str] = []
    skipping = False
    for line in text.splitlines():
        header = re.match(r"^\s*\[\[?([^\]]+)\]\]?\s*$", line)
        if header:
            name = header.group(1).strip()
            skipping = name == "agent.scratchpad" or bool(re.fullmatch(r"mcp\.servers\.[^.]+\.scratchpad", name))
        if not skipping:
            kept.append(line)
    return "\n".join(kept) + "\n"


def test_a_tuned_policy_pastes_into_an_aura_config(data_dir: Path) -> None:
    original_text = (data_dir / "aura.toml").read_text(encoding="utf-8")
    tuned = SpillPolicy.from_toml(original_text).with_(
        server_patterns={"k8s": {"k8s_list_*": 300, "k8s_get_*": 4000}, "weather": {"get_*": 800}},
        context_safety_margin=0.3,
    )
    pasted = _without_scratchpad_tables(original_text) + "\n" + tuned.to_toml()
    merged = tomllib.loads(pasted)
    assert SpillPolicy.from_toml(pasted) == tuned
    # every other table of the configuration is exactly as it was
    original = tomllib.loads(original_text)
    for doc in (merged, original):
        doc["agent"].pop("scratchpad")
        for server in doc["mcp"]["servers"].values():
            server.pop("scratchpad", None)
    assert merged == original
    assert merged["hooks"]["post_tool"] == [{"match": "k8s_*", "run": "audit-log"}]


def test_a_policy_from_aura_toml_replays_like_the_same_policy(data_dir: Path, tmp_path: Path) -> None:
    trace = data_dir / "trace.jsonl"
    policy = SpillPolicy.from_toml(data_dir / "aura.toml")
    written = tmp_path / "policy.toml"
    written.write_text(policy.to_toml(), encoding="utf-8")
    a = replay(trace, policy, progress=False)
    b = replay(trace, written, progress=False)
    assert a.equals(b)
    assert a.loc[a["tool"] == "k8s_list_pods", "threshold"].item() == 512


def test_bad_values_are_clear_errors() -> None:
    cases = {
        '[agent.scratchpad]\nenabled = "yes"\n': "agent.scratchpad.enabled must be bool",
        "[agent.scratchpad]\nmin_tokens = 1.5\n": "agent.scratchpad.min_tokens must be int",
        '[mcp.servers.k8s.scratchpad]\n"k8s_*" = { min_tokens = -1 }\n': "non-negative integer",
        '[mcp.servers.k8s.scratchpad]\n"k8s_*" = "big"\n': "expected { min_tokens = N }",
        "[agent]\nscratchpad = 5\n": r"\[agent.scratchpad\] must be a table",
        "[agent.scratchpad\n": "not valid TOML",
    }
    for text, message in cases.items():
        with pytest.raises(InvalidArgumentError, match=message):
            SpillPolicy.from_toml(text)


# -- bugs of the core pinned for the lead (spill/_toml.py) -------------------------------------


@pytest.mark.xfail(strict=True, raises=AttributeError, reason="core: a non-table [agent]/[mcp] raises AttributeError")
@pytest.mark.parametrize(
    "text", ["agent = 5\n", "mcp = 5\n", "[mcp]\nservers = 5\n", "[agent.scratchpad]\npatterns = 5\n"]
)
def test_core_bug_non_tables_raise_attribute_error(text: str) -> None:
    with pytest.raises(InvalidArgumentError):
        SpillPolicy.from_toml(text)


@pytest.mark.xfail(strict=True, raises=tomllib.TOMLDecodeError, reason="core: to_toml writes U+007F raw")
def test_core_bug_to_toml_of_a_key_with_delete_is_invalid() -> None:
    policy = SpillPolicy(patterns={"a\x7fb": 5})
    tomllib.loads(policy.to_toml())


@pytest.mark.xfail(strict=True, reason="core: to_toml drops spill_classes, oob_metadata_keys, error_max_bytes")
def test_core_bug_to_toml_drops_fields() -> None:
    policy = SpillPolicy(spill_classes=frozenset({"query", "effect"}), error_max_bytes=4096)
    assert SpillPolicy.from_toml(policy.to_toml()) == policy


@pytest.mark.xfail(strict=True, reason="core: a misspelt { min_token = N } silently becomes 5,120")
def test_core_bug_a_misspelt_entry_is_silently_the_default() -> None:
    with pytest.raises(InvalidArgumentError):
        SpillPolicy.from_toml('[mcp.servers.k8s.scratchpad]\n"k8s_*" = { min_token = 512 }\n')
