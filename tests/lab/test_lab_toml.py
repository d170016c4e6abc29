"""Policies round-trip with Aura's TOML, and a tuned policy pastes into an Aura configuration unchanged.

The ``test_core_bug_*`` tests pin bugs once found in the core's ``spill/_toml.py`` (now fixed).
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


# -- bugs once found in the core (spill/_toml.py), kept as regressions -------------------------------------


@pytest.mark.parametrize(
    "text", ["agent = 5\n", "mcp = 5\n", "[mcp]\nservers = 5\n", "[agent.scratchpad]\npatterns = 5\n"]
)
def test_non_tables_are_clear_errors(text: str) -> None:
    with pytest.raises(InvalidArgumentError):
        SpillPolicy.from_toml(text)


def test_to_toml_escapes_control_characters() -> None:
    policy = SpillPolicy(patterns={"a\x7fb": 5, "tab\there": 6})
    assert SpillPolicy.from_toml(policy.to_toml()) == policy
    tomllib.loads(policy.to_toml())


def test_to_toml_keeps_every_field() -> None:
    policy = SpillPolicy(spill_classes=frozenset({"query", "effect"}), error_max_bytes=4096,
                         oob_metadata_keys=frozenset({"receipt"}), internal_tools=frozenset({"ping"}), min_bytes=8192)
    assert SpillPolicy.from_toml(policy.to_toml()) == policy


def test_a_misspelt_entry_is_an_error_naming_the_key() -> None:
    with pytest.raises(InvalidArgumentError, match="did you mean 'min_tokens'"):
        SpillPolicy.from_toml('[mcp.servers.k8s.scratchpad]\n"k8s_*" = { min_token = 512 }\n')


def test_empty_text_is_the_default_policy_and_paths_with_equals_are_paths(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Aura's meaning: an empty file is a disabled, opt-in policy with the default knobs
    assert SpillPolicy.from_toml("") == SpillPolicy(enabled=False, opt_in=True)
    odd = tmp_path / "a=b[1].toml"
    odd.write_text("[agent.scratchpad]\nmax_extraction_tokens = 42\n")
    assert SpillPolicy.from_toml(str(odd)).max_extraction_tokens == 42
    with pytest.raises(InvalidArgumentError, match="cannot read policy file"):
        SpillPolicy.from_toml(str(tmp_path / "missing.toml"))


AURA_OPT_IN = """
[agent.scratchpad]
enabled = true

[mcp.servers.k8s.scratchpad]
"k8s_list_*" = { min_tokens = 512 }
"""


def test_an_aura_file_is_opt_in_per_server_as_in_aura() -> None:
    policy = SpillPolicy.from_toml(AURA_OPT_IN)
    big = "word " * 20_000
    assert policy.explain(big, tool="k8s_list_pods", server="k8s").spill
    unmatched = policy.explain(big, tool="k8s_get_logs", server="k8s")
    assert (unmatched.spill, unmatched.rule) == (False, "no_pattern_for_server")
    other = policy.explain(big, tool="k8s_list_pods", server="github")  # another server's tool
    assert (other.spill, other.rule) == (False, "no_pattern_for_server")
    # our own opt-out policy keeps its default threshold for every tool
    assert SpillPolicy().explain(big, tool="k8s_get_logs", server="k8s").spill


def test_aura_enabled_defaults_to_false_and_disables_everything() -> None:
    policy = SpillPolicy.from_toml(AURA_OPT_IN.replace("enabled = true", ""))
    decision = policy.explain("word " * 20_000, tool="k8s_list_pods", server="k8s")
    assert (decision.spill, decision.rule) == (False, "disabled")
    assert SpillPolicy(enabled=False).explain("x", tool="t", is_error=True).rule == "disabled"


def test_skill_verbs_never_spill() -> None:
    policy = SpillPolicy(min_tokens=1)
    for tool in ("load_skill", "read_skill_file"):
        assert policy.explain("word " * 20_000, tool=tool).rule == "internal_tool"


def test_opt_out_round_trips_through_toml() -> None:
    for policy in (SpillPolicy(), SpillPolicy(opt_in=True), SpillPolicy(enabled=False)):
        assert SpillPolicy.from_toml(policy.to_toml()) == policy
