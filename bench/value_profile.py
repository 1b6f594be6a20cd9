"""False alarms and catches of the value profile (healerd.core.value_profile).

    python bench/value_profile.py CORPUS_DIR [--scrapes 10000] [--seed 1]

Two kinds of sources, each learning its fields' profiles from its first good scrapes and then
judged scrape after scrape (a scrape that passes is learned from, as the daemon does):

- pages: each corpus case's last good page (bench/heal_fuzz.py's base cases), one day after
  another made by heal_fuzz's ordinary generators — the records' own values changed
  (`m_values_changed`: numbers bumped, names given a suffix) and whitespace and entities
  rewritten — then extracted by the case's blueprint;
- series: generated value columns (prices in several formats, dates, codes, product names,
  a priority vocabulary) over listings whose length varies from day to day.

A false alarm is an ordinary scrape refused. Then, on the learned profiles, each field's values
replaced by a wall in every record (heal_fuzz's placeholders and teasers, translations of them
in other languages and scripts) must leave the profile: the catch rate. Prints one table and,
as its last line, one JSON object {"ordinary_scrapes", "false_alarms", "per_10000", "walls",
"walls_caught"}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heal_fuzz as fz  # noqa: E402

from healerd.core.extract import extract  # noqa: E402
from healerd.core.value_profile import MIN_SCRAPES, check, field_texts, learn  # noqa: E402

WALLS = fz.PLACEHOLDERS[:2] + fz.PLACEHOLDERS[4:] + [
    "Sign in to see your price (save 15%)", "Anmelden, um diesen Wert zu sehen", "Inicia sesión para ver este valor",
    "Connectez-vous pour voir ce prix", "ログインして価格を表示", "Войдите, чтобы увидеть цену",
    "Members save up to 20% — log in"]
ADJ = ["Blue", "Light", "Trail", "Compact", "Pro", "Classic", "Folding", "Steel", "Mini", "Family", "Ultra", "Eco"]
NOUN = ["Kettle", "Mug", "Torch", "Tent", "Stove", "Bag", "Filter", "Chair", "Lamp", "Bottle", "Pump", "Knife"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def series_source(rng: random.Random):
    """A generated source: a function giving one day's records (dicts of raw texts)."""
    price_fmt = rng.choice(["${:.2f}", "{:.2f} EUR", "£{:,.2f}", "{:.0f} kr", "€ {:.2f}", "{:.2f}"])
    date_fmt = rng.choice(["{y}-{m:02d}-{d:02d}", "{d}/{m}/{y}", "{mon} {d}, {y}", "{d}.{m}.{y}"])
    prefix = rng.choice(["SKU-", "AB", "item_", "#", ""])
    catalogue = [" ".join(rng.sample(ADJ, rng.randint(0, 2)) + [rng.choice(NOUN)]) for _ in range(40)]
    base = {n: rng.uniform(2, 400) for n in catalogue}

    def day(k: int) -> list[dict]:
        n = rng.randint(3, 25)
        out = []
        for name in rng.sample(catalogue, min(n, len(catalogue))):
            m = rng.randint(1, 12)
            out.append({"name": name + (f" {rng.randint(2, 60)}L" if rng.random() < 0.1 else ""),
                        "price": price_fmt.format(base[name] * rng.uniform(0.7, 1.3)),
                        "date": date_fmt.format(y=rng.randint(2020, 2026), m=m, d=rng.randint(1, 28),
                                                mon=MONTHS[m - 1]),
                        "code": f"{prefix}{rng.randint(100, 99999)}",
                        "priority": rng.choice(["urgent", "high", "normal", "low"])})
        return out
    return day


def page_source(case_bp, before: str, rng: random.Random):
    """A corpus page's source: day k is the last good page with heal_fuzz's ordinary changes."""
    tree = fz.LexborHTMLParser(before)
    fz.mark(tree, case_bp)
    marked = tree.html or before

    def day(k: int) -> list[dict]:
        w = fz.Work(marked, case_bp, rng)
        if k:
            fz.m_values_changed(w)
        html = fz.strip_marks(w.tree.html or "")
        if k and rng.random() < 0.5:
            html = fz._whitespace_entities(html, rng)
        raw = extract(html, case_bp).raw
        return raw if isinstance(raw, list) else [raw]
    return day


def run_source(day, fields: list[str], days: int, stats: dict, label: str) -> dict:
    """Learn, then judge day after day; the learned profiles."""
    profiles: dict[str, dict | None] = dict.fromkeys(fields)
    for k in range(days):
        recs = day(k)
        texts = {f: field_texts(recs, recs, f) for f in fields}
        if k >= MIN_SCRAPES:
            stats["ordinary"] += 1
            gone = [d for f in fields if (d := check(f, profiles[f], texts[f])) is not None]
            if gone:
                stats["false"] += 1
                if len(stats["examples"]) < 8:
                    stats["examples"].append(f"{label} day {k}: {gone[0].reason}")
                continue
        for f in fields:
            profiles[f] = learn(profiles[f], texts[f])
    return profiles


def walls_caught(profiles: dict, n: int, stats: dict, label: str) -> None:
    for f, p in profiles.items():
        for wall in WALLS:
            stats["walls"] += 1
            if check(f, p, [wall] * n) is not None:
                stats["caught"] += 1
            elif len(stats["missed"]) < 40:
                stats["missed"].append(f"{label}.{f}: {wall!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", help="a corpus directory (cases with case.json); none: series only")
    ap.add_argument("--scrapes", type=int, default=10000, help="ordinary scrapes judged, per kind of source")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    table = []
    total = {"ordinary": 0, "false": 0, "walls": 0, "caught": 0}
    kinds = [("series", None)]
    if args.corpus:
        kinds.insert(0, ("pages", fz.base_cases(args.corpus, None)))
    for kind, cases in kinds:
        stats = {"ordinary": 0, "false": 0, "walls": 0, "caught": 0, "examples": [], "missed": []}
        i = 0
        while stats["ordinary"] < args.scrapes:
            if kind == "pages":
                case, before, bp, raw = cases[i % len(cases)]
                label, day, fields = case.get("id", "?"), page_source(bp, before, rng), list(bp.fields)
                n = len(raw) if isinstance(raw, list) else 1
                days = MIN_SCRAPES + 25
            else:
                label, day, fields, n, days = f"series{i}", series_source(rng), \
                    ["name", "price", "date", "code", "priority"], 8, MIN_SCRAPES + 50
            profiles = run_source(day, fields, days, stats, label)
            walls_caught(profiles, max(1, n), stats, label)
            i += 1
        table.append((kind, stats))
        for k in total:
            total[k] += stats[k]
    print(f"{'sources':8} {'ordinary':>9} {'false':>6} {'per 10k':>8} {'walls':>6} {'caught':>7}")
    for kind, s in table:
        print(f"{kind:8} {s['ordinary']:9d} {s['false']:6d} {1e4 * s['false'] / max(1, s['ordinary']):8.2f} "
              f"{s['walls']:6d} {s['caught'] / max(1, s['walls']):7.1%}")
        for e in s["examples"]:
            print("  false alarm:", e)
        for m in s["missed"]:
            print("  missed wall:", m)
    print(json.dumps({"ordinary_scrapes": total["ordinary"], "false_alarms": total["false"],
                      "per_10000": round(1e4 * total["false"] / max(1, total["ordinary"]), 2),
                      "walls": total["walls"], "walls_caught": round(total["caught"] / max(1, total["walls"]), 3)}))


if __name__ == "__main__":
    main()
