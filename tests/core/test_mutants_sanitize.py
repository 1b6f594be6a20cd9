"""Masking rules at the edges a one-line bug would move (see bench/mutation.py): literal
secrets of a source, the entropy floor of keys, every GitHub token prefix, mixed case."""

from __future__ import annotations

import pytest

from healerd.core.sanitize import looks_like_key, mask_text, shannon_entropy, source_secrets


def test_short_header_and_cookie_values_of_a_source_are_its_secrets():
    assert {"abcd12", "k7Q2x"} <= set(source_secrets({"X-Api-Key": "abcd12"}, {"sid": "k7Q2x"}))


@pytest.mark.parametrize("secret", ["k7Q2x", "AbCdEf9", "Zz9-Qq8"])
def test_a_five_character_or_longer_source_secret_is_masked_as_written(secret):
    out = mask_text(f"the request sent {secret} and failed", [secret])
    assert secret not in out and "***" in out
    assert out.startswith("the request sent ") and out.endswith(" and failed")


def test_a_key_with_moderate_entropy_is_still_a_key():
    key = "7e4dbe8g1626X5Z4YZ6Zh3a1Wf3YZZdgZ12dc88c"   # 20 symbols: about 4.1 bits per character
    assert 4.0 <= shannon_entropy(key) < 4.5 and looks_like_key(key)
    assert mask_text(f"key {key} here") == "key *** here"


@pytest.mark.parametrize("prefix", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"])
def test_every_github_token_prefix_is_masked(prefix):
    token = prefix + "a1B2" * 9
    out = mask_text(f"clone with {token} please")
    assert token not in out and prefix + "***" in out


def test_a_four_character_source_secret_is_kept_and_masked_but_a_three_character_one_is_not():
    # four characters is the documented floor: at it a secret is masked, one below it is left alone
    assert "k7Q2" in source_secrets({"X-Api-Key": "k7Q2"}, None)
    assert mask_text("the request sent k7Q2 and failed", ["k7Q2"]) == "the request sent *** and failed"
    assert "k7Q" not in source_secrets({"X-Api-Key": "k7Q"}, None)
