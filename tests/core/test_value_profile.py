"""The value profile on its own: generated series of ordinary values stay in profile; teasers,
placeholders and translations of them leave it, in any language and script."""

from __future__ import annotations

import random

import pytest

from healerd.core.value_profile import MIN_SCRAPES, check, field_texts, learn, ready, shape

ADJ = ["Blue", "Light", "Trail", "Compact", "Pro", "Classic", "Folding", "Steel", "Mini", "Family", "Ultra", "Eco"]
NOUN = ["Kettle", "Mug", "Torch", "Tent", "Stove", "Bag", "Filter", "Chair", "Lamp", "Bottle", "Pump", "Knife"]


def prices(rng: random.Random) -> list[str]:
    fmt = rng.choice(["${:.2f}", "{:.2f} EUR", "£{:,.2f}", "{:.0f} kr", "€ {:.2f}"])
    return [fmt.format(rng.uniform(2, 400)) for _ in range(rng.randint(4, 20))]


def dates(rng: random.Random) -> list[str]:
    fmt = rng.choice(["{y}-{m:02d}-{d:02d}", "{d}/{m}/{y}", "{mon} {d}, {y}"])
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    return [fmt.format(y=rng.randint(2020, 2026), m=(m := rng.randint(1, 12)), d=rng.randint(1, 28), mon=months[m - 1])
            for _ in range(rng.randint(4, 20))]


def codes(rng: random.Random) -> list[str]:
    prefix = rng.choice(["SKU-", "AB", "item_", "#"])
    return [f"{prefix}{rng.randint(100, 99999)}" for _ in range(rng.randint(4, 20))]


def names(rng: random.Random) -> list[str]:
    return [" ".join(rng.sample(ADJ, rng.randint(0, 2)) + [rng.choice(NOUN)])
            + (f" {rng.randint(1, 60)}L" if rng.random() < 0.2 else "") for _ in range(rng.randint(4, 20))]


def vocab(rng: random.Random) -> list[str]:
    return [rng.choice(["urgent", "high", "normal", "low"]) for _ in range(rng.randint(8, 20))]


SERIES = {"prices": prices, "dates": dates, "codes": codes, "names": names, "vocab": vocab}

# What a page shows where a value was: teasers (with a number), placeholders, walls, in several
# languages and scripts; the same text in every record.
WALLS = ["Sign in to see your price (save 15%)", "Anmelden, um diesen Wert zu sehen",
         "Inicia sesión para ver este valor", "Connectez-vous pour voir ce prix", "ログインして価格を表示",
         "Войдите, чтобы увидеть цену", "Members save up to 20% — log in"]


def learned(series, rng: random.Random, scrapes: int = MIN_SCRAPES + 2) -> dict:
    p = None
    for _ in range(scrapes):
        p = learn(p, series(rng))
    return p


@pytest.mark.parametrize("kind", SERIES)
def test_ordinary_series_stay_in_profile(kind):
    series = SERIES[kind]
    for seed in range(60):
        rng = random.Random(seed)
        p = learned(series, rng)
        for _ in range(20):   # later days: new values of the same kind
            values = series(rng)
            assert check(kind, p, values) is None, (kind, seed, values, p)
            p = learn(p, values)


@pytest.mark.parametrize("kind", ["prices", "dates", "codes", "names", "vocab"])
@pytest.mark.parametrize("wall", WALLS)
def test_walls_in_every_record_leave_the_profile(kind, wall):
    rng = random.Random(7)
    p = learned(SERIES[kind], rng)
    gone = check(kind, p, [wall] * 6)
    assert gone is not None, (kind, wall, p)
    assert gone.field == kind and "left its value profile" in gone.reason
    assert gone.placeholder   # one text in every record: a wall, not another node's data


@pytest.mark.parametrize("wall", WALLS)
def test_a_single_record_price_that_became_a_sentence_leaves(wall):
    p = None
    for day in range(MIN_SCRAPES):
        p = learn(p, [f"${24 + day * 0.5:.2f}"])
    assert check("price", p, [wall]) is not None


def test_a_vocabulary_that_became_one_long_string_leaves():
    p = learned(vocab, random.Random(3))
    assert check("priority", p, ["Please log in to see the ticket's priority"] * 9) is not None
    assert check("priority", p, ["medium", "low", "urgent"] * 3) is None   # a new word of the kind


def test_distinct_values_collapsing_to_one_leave():
    p = learned(names, random.Random(5))
    assert check("name", p, ["Trail Kettle"] * 8) is not None
    assert check("name", p, ["Trail Kettle", "Camp Mug", "Trail Kettle", "Head Torch"]) is None


def test_no_judgement_before_enough_history():
    p = learn(None, ["$12.00", "$13.00"])
    assert not ready(p)
    assert check("price", p, ["Sign in to see your price (save 15%)"] * 2) is None
    for _ in range(MIN_SCRAPES - 1):
        p = learn(p, ["$12.00", "$13.00"])
    assert ready(p)
    assert check("price", p, ["Sign in to see your price (save 15%)"] * 2) is not None


def test_a_price_with_a_short_badge_keeps_its_number_and_its_profile():
    p = learned(prices, random.Random(2))
    assert check("price", p, [f"Sale! ${9 + i}.99" for i in range(6)]) is None
    assert check("price", p, ["Members save up to 20% — log in"] * 6) is not None


def test_a_few_odd_values_among_many_are_tolerated():
    p = learned(prices, random.Random(11))
    assert check("price", p, ["$12.00"] * 9 + ["Call us"]) is None


def test_kinds_of_raw_text():
    assert shape("$1,299.00").kind == "money"
    assert shape("12.99 EUR").kind == "money"
    assert shape("2024-01-05").kind == "date"
    assert shape("Jan 5, 2024").kind == "date"
    assert shape("SKU-123").kind == "code"
    assert shape("42").kind == "number"
    assert shape("urgent").kind == "word"
    assert shape("Sign in to see your price (save 15%)").kind == "text"
    assert shape("ログインして価格を表示").scripts == {"KATAKANA", "HIRAGANA", "CJK"}


def test_field_texts_reads_the_raw_text_before_coercion():
    data = [{"price": 15.0}, {"price": 9.5}]
    raw = [{"price": "Sign in (save 15%)"}, {"price": "$9.50"}]
    assert field_texts(data, raw, "price") == ["Sign in (save 15%)", "$9.50"]
    assert field_texts({"t": 3}, None, "t") == [3]


def test_the_profile_switch_of_a_blueprint_field():
    from healerd.core.blueprint import BlueprintError, from_dict

    bp = from_dict({"url": "http://127.0.0.1:9/", "fields": {"a": {"css": "p"}, "b": {"css": "q", "profile": False}}})
    assert bp.fields["a"].profile and not bp.fields["b"].profile
    assert bp.to_dict()["fields"]["b"]["profile"] is False and "profile" not in bp.to_dict()["fields"]["a"]
    assert from_dict(bp.to_dict()).fields["b"].profile is False
    with pytest.raises(BlueprintError, match="fields.b.profile"):
        from_dict({"url": "http://127.0.0.1:9/", "fields": {"b": {"css": "q", "profile": "no"}}})


def test_the_ascii_shortcut_counts_as_the_character_walk_does():
    """Plain ASCII text is counted by C loops; every ASCII character must count as the walk over
    characters counts it (letters, scripts, digits, the one ASCII currency sign)."""
    import random

    from healerd.core import value_profile as vp

    rng = random.Random(7)
    printable = [chr(i) for i in range(32, 127)]
    texts = ["".join(rng.choice(printable) for _ in range(rng.randint(1, 40))) for _ in range(2000)]
    texts += [chr(i) for i in range(1, 128)] + ["$12.99", "EUR 4", "N/A", "2026-11-28", "abc"]
    for text in texts:
        s = vp.shape.__wrapped__(text)
        assert (s.letters, s.scripts, s.digit) == vp._counted(text)[:3], text
        assert ("$" in text) == vp._counted(text)[3], text


def test_a_value_that_comes_often_is_learned_as_often_as_it_came():
    from healerd.core import value_profile as vp

    p = vp.learn(None, ["urgent", "low", "urgent", "urgent", "12", "12"])
    assert p["kinds"] == {"word": 4, "number": 2} and p["values"] == 6 and p["digits"] == 2 and p["with_letters"] == 4
