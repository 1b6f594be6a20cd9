"""Mutation check: plant plausible one-line bugs in the core modules and count those the tests catch.

    python bench/mutation.py [--module NAME ...] [--timeout 300] [--list]

Each mutant is one textual change to one file (a comparison flipped, a guard disabled, a bound
moved, a rule dropped) — the kind of bug a real edit introduces. For each one the bench copies
the source tree (healerd/, tests/, bench/, schema.sql) to a temporary directory once, applies the mutant
to the copy only (the working tree is never touched), runs the tests that cover the module on
the copy (`pytest -x`, the copy first on PYTHONPATH, with a timeout), and restores the file in
the copy. A mutant is *killed* when the tests fail (or time out), *survived* when they pass,
and *not applicable* (n/a) when its text is no longer in the source exactly once, or *invalid* when
the mutated file no longer compiles: either means the list is stale (the code changed: update it),
and the bench then exits 3 so a stale list cannot hide. A baseline run without any mutant must
pass first. Exit status: 0 goal met, 1 goal missed, 2 baseline failed, 3 stale mutants.

Prints one line per mutant, then killed/total per module and overall. The goal is >= 85 %
killed per module; a survivor names a behaviour no test pins down. Slow (a few minutes): it is
not part of the CI run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    module: str     # the behaviour it belongs to (the report groups by it)
    path: str       # file, relative to the repository
    old: str        # exact text, must occur once
    new: str
    what: str


TESTS = {
    "validate": ["tests/core/test_validate.py", "tests/core/test_deploy_judge.py", "tests/core/test_core_edges.py"],
    "extract": ["tests/core/test_extract_contract.py", "tests/core/test_validate.py", "tests/core/test_core_edges.py"],
    "lifecycle": ["tests/store/test_lifecycle.py", "tests/store/test_ledger.py"],
    "sanitize": ["tests/core/test_sanitize.py"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "core").glob("test_mutants_sanitize*.py")),
    "budget": ["tests/core/test_breakers.py", "tests/store/test_ledger.py", "tests/store/test_store_concurrency.py", "tests/core/test_core_edges.py"],
    "heal-refusal": ["tests/core/test_builtin_healer.py", "tests/core/test_heal_matcher.py"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "core").glob("test_mutants_heal*.py")),
    "ladder": sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_ladder*.py")),
}

V, E, L, S = "healerd/core/validate.py", "healerd/core/extract.py", "healerd/store/lifecycle.py", "healerd/core/sanitize.py"
B, LH, LF = "healerd/core/breakers.py", "healerd/store/health_writes.py", "healerd/store/fix_writes.py"
H, HE, HS, HL = ("healerd/core/heal/pipeline.py", "healerd/core/heal/evidence.py", "healerd/core/heal/single_record.py",
                 "healerd/core/heal/listing.py")
HSC, HLC, HLF, HLK = ("healerd/core/heal/fields/single_candidates.py", "healerd/core/heal/records/containers.py",
                      "healerd/core/heal/fields/listing_by_value.py", "healerd/core/heal/records/old_kinds.py")
F = "healerd/store/fixes.py"
LA, LR, LD = "healerd/core/ladder/ladder.py", "healerd/core/ladder/rungs.py", "healerd/core/ladder/diagnose.py"

MUTANTS = [
    # -- validate: the item-count band, empty fields, drift, blocks ---------------------------------
    Mutant("validate", V, "            if n < low:", "            if n <= low:", "band: n < low -> n <= low"),
    Mutant("validate", V, "            elif n > high:", "            elif n >= high:", "band: n > high -> n >= high"),
    Mutant("validate", V, "math.floor(median * BAND_LOW) + 1", "math.floor(median * BAND_LOW)", "band: low bound one lower"),
    Mutant("validate", V, "BAND_HIGH = 10.0 ", "BAND_HIGH = 100.0 ", "band: high factor 10 -> 100"),
    Mutant("validate", V, "and not isinstance(c, bool) and c > 0]", "and not isinstance(c, bool) and c >= 0]",
           "band: zero counts count towards the median"),
    Mutant("validate", V, "        if bad / n <= NULL_TOLERANCE:", "        if bad / n <= 0.5:",
           "null tolerance 10 % -> 50 %"),
    Mutant("validate", V, "    if missing == n:", "    if missing == n and n > 1:", "a single record's missing field passes"),
    Mutant("validate", V, "    if now and all(_plain_words(v) and not (links and is_url_reference(v)) for v in now):",
           "    if now and any(_plain_words(v) for v in now) and len(now) > 99:",
           "drift: numbers turned to words no longer caught"),
    Mutant("validate", V, "        if reason and (strong or p.items):", "        if reason and strong:",
           "a weak block sign with bad data is not BLOCKED"),
    Mutant("validate", V, "    return best if counts[best] / len(shapes) >= SHAPE_MAJORITY else None",
           "    return best", "drift judged without a dominant shape"),
    Mutant("validate", V, "    score = 0.0 if kind == errors.BLOCKED else", "    score = 1.0 if kind == errors.BLOCKED else",
           "a blocked page scores 1.0"),
    # -- extract: the value and number rules ----------------------------------------------------------
    Mutant("extract", E, 'NUMBER = re.compile(r"-?\\d', 'NUMBER = re.compile(r"\\d', "number: minus sign dropped"),
    Mutant("extract", E, r'[\d,]*(\.\d+)?")', r'[\d,]*")', "number: decimals dropped"),
    Mutant("extract", E, 'float(m.group(0).replace(",", ""))', 'float(m.group(0).replace(",", "").lstrip("-"))',
           "number: sign stripped after matching"),
    Mutant("extract", E, "        return int(num)", "        return round(num)", "int: rounded instead of truncated"),
    Mutant("extract", E, '    return " ".join(node.text(deep=True, separator="").split())',
           '    return node.text(deep=True, separator="").strip()', "text: inner whitespace not collapsed"),
    Mutant("extract", E, '    return " ".join(node.text(deep=True, separator="").split())',
           '    return " ".join(node.text(deep=False, separator="").split())', "text: direct text only"),
    Mutant("extract", E, "        return node.attributes.get(attr)", "        return node.attributes.get(attr) or None",
           "attr: an empty attribute becomes null"),
    Mutant("extract", E, "            d, r = _record(item, plan)", "            d, r = _record(tree.root, plan)",
           "items: fields looked up in the whole page"),
    Mutant("extract", E, "    if not m:\n        return None", "    if not m:\n        return 0.0", "no number gives 0 instead of null"),
    # -- lifecycle: transitions and their persistence -----------------------------------------------
    Mutant("lifecycle", L, "    if destination(trigger, before) is None:\n        raise IllegalTransition(model.name, trigger, before)",
           "    if destination(trigger, before) is None:\n        return before, before", "illegal transition returns instead of raising"),
    Mutant("lifecycle", L, '{"trigger": "recover", "source": DEGRADED,', '{"trigger": "recover", "source": [DEGRADED, QUARANTINED],',
           "a quarantined source may recover by itself"),
    Mutant("lifecycle", L, '"source": [ACTIVE, DEGRADED, QUARANTINED], "dest": DEAD', '"source": [ACTIVE, DEGRADED], "dest": DEAD',
           "a quarantined source cannot die"),
    Mutant("lifecycle", L, '{"trigger": "unquarantine", "source": [QUARANTINED, DEAD],', '{"trigger": "unquarantine", "source": [QUARANTINED],',
           "a dead source cannot be unquarantined"),
    Mutant("lifecycle", L, "            if conn.changes() != 1:", "            if conn.changes() > 1:",
           "a state changed elsewhere goes unnoticed"),
    Mutant("lifecycle", L, "        if model.state != before:", "        if False:", "the model is not restored after a failed write"),
    Mutant("lifecycle", L, "    if state not in STATES:\n        raise", "    if False:\n        raise", "unknown states accepted"),
    Mutant("lifecycle", L, '(model.name, before, after, trigger, reason[:2000], at)', '(model.name, after, before, trigger, reason[:2000], at)',
           "audit row records from/to swapped"),
    # -- sanitize: secrets masked ------------------------------------------------------------------------
    Mutant("sanitize", S, "MIN_LITERAL = ", "MIN_LITERAL = 1 + ", "a source's literal secrets one character longer before masked"),
    Mutant("sanitize", S, r'_Rule("bearer_token", r"(\b(?:bearer|basic)\s+)([A-Za-z0-9._~+/-]{8,}=*)"',
           r'_Rule("bearer_token", r"(\b(?:bearer|basic)\s+)([A-Za-z0-9._~+/-]{24,}=*)"', "bearer tokens under 24 characters kept"),
    Mutant("sanitize", S, "    return h >= 4.0 and switches", "    return h >= 4.5 and switches", "key entropy floor raised"),
    Mutant("sanitize", S, "    if len(core) < 32:\n        return False", "    if len(core) < 48:\n        return False",
           "keys under 48 characters kept"),
    Mutant("sanitize", S, r'"(\b(?:set-)?cookie', r'"(\b(?:set-)cookie', "the Cookie header no longer masked"),
    Mutant("sanitize", S, r'"(\b(?:proxy-)?authorization', r'"(\b(?:proxy-)authorization', "the Authorization header no longer masked"),
    Mutant("sanitize", S, r'_Rule("github_token", r"\b(gh[pousr]_)[A-Za-z0-9]{30,}', r'_Rule("github_token", r"\b(gh[p]_)[A-Za-z0-9]{30,}',
           "only ghp_ GitHub tokens masked"),
    Mutant("sanitize", S, r'_Rule("jwt", r"\beyJ', r'_Rule("jwt", r"\beyX', "JWTs no longer masked"),
    Mutant("sanitize", S, "        if len(s) < MIN_LITERAL or s == MASK:\n            continue\n        out.add(s)",
           "        if len(s) < MIN_LITERAL or s == MASK:\n            continue\n        out.add(s.lower())",
           "literal secrets matched lower-cased only"),
    # -- the breakers (pure rules) and what the ledger still decides -------------------------------------
    Mutant("budget", B, "    return 1 if retry_only else max(0, int(max_fix_attempts))",
           "    return 2 if retry_only else max(0, int(max_fix_attempts))", "after a quarantine, two retries instead of one"),
    Mutant("budget", B, "    return failed_in_window >= budget", "    return failed_in_window > budget", "budget: >= -> >"),
    Mutant("budget", B, 'FAILED_OUTCOMES = ("rejected", "error")', 'FAILED_OUTCOMES = ("rejected",)', "errors spend no attempt"),
    Mutant("budget", B, 'FAILED_OUTCOMES = ("rejected", "error")', 'FAILED_OUTCOMES = ("rejected", "error", "promoted")',
           "promotions spend budget"),
    Mutant("budget", B, 'outcome in FAILED_OUTCOMES and state == "DEGRADED" and budget_spent',
           'outcome in FAILED_OUTCOMES and budget_spent', "any state is quarantined when the budget is spent"),
    Mutant("budget", B, "    return success_count is not None and success_count > 0", "    return True",
           "a source that never passed is healed"),
    Mutant("budget", B, "if fp == fingerprint and host}", "if host}", "systemic: other fingerprints count"),
    Mutant("budget", B, "    return hosts if threshold > 0 and len(hosts) >= threshold else None",
           "    return hosts if threshold > 0 and len(hosts) > threshold else None", "systemic halt one host late"),
    Mutant("budget", B, "    return hosts if threshold > 0 and len(hosts) >= threshold else None",
           "    return hosts if len(hosts) >= threshold else None", "threshold 0 halts everything"),
    Mutant("budget", B, "{'s' if failed != 1 else ''}", "{'s' if failed > 1 else ''}", "'0 fix attempt failed'"),
    Mutant("budget", F, "        since = max(since, after)", "        since = min(since, after)", "an unquarantine does not reset the window"),
    Mutant("budget", F, "    since = now - window_s\n", "    since = now - 2 * window_s\n", "the attempt window twice as long"),
    Mutant("budget", LH, "attempts_since = ?, retry_only = 1 ", "attempts_since = attempts_since + 0 * ?, retry_only = 1 ",
           "an expired quarantine keeps the spent budget"),
    Mutant("budget", LH, "quarantine_until IS NOT NULL AND quarantine_until <= ?", "quarantine_until IS NOT NULL AND quarantine_until <= ? - 3600",
           "quarantines expire an hour late"),
    Mutant("budget", LF, "                until = now + self.config.doctor.quarantine_for",
           "                until = now + 2 * self.config.doctor.quarantine_for", "quarantine twice as long"),
    # -- the built-in healer's refusal rules -----------------------------------------------------------
    Mutant("heal-refusal", HS, "        if runner is not None and best.score - runner.score < MARGIN:", "        if False:",
           "ambiguous exact value: refusal disabled"),
    Mutant("heal-refusal", HS, "            if not twin and (runner is None or best.score - runner.score >= MARGIN):", "            if not twin:",
           "ambiguous near value: refusal disabled"),
    Mutant("heal-refusal", HS, "        if likely and (runner is None or best.score - runner.score >= MARGIN):", "        if likely:",
           "ambiguous label match: refusal disabled"),
    Mutant("heal-refusal", HS, 'gone = [n for n, (st, _, _) in decisions.items() if st in ("gone", "ambiguous")]',
           'gone = [n for n, (st, _, _) in decisions.items() if st in ("gone",)]', "single record: ambiguity not refused"),
    Mutant("heal-refusal", HS, "        if best.sim < floor and not vouched:", "        if False:",
           "exact value accepted below the structural floor"),
    Mutant("heal-refusal", HS, "        if check.get(name) != after.value(cand.node, moved.get(name, bp.fields[name].attr)):", "        if False:",
           "single record: verification skipped"),
    Mutant("heal-refusal", HSC, "        if twin <= c.sim + TWIN_MARGIN:", "        if True:",
           "look-alikes of the last good page's distractors kept"),
    Mutant("heal-refusal", HS, "            if na is None or na != nb:\n                continue", "            if True:\n                continue",
           "single record: two fields may take one node"),
    Mutant("heal-refusal", HS, "        if not value:\n            why = f\"optional field not found", "        if True:\n            why = f\"optional field not found",
           "an optional field keeps an old selector that now finds other data"),
    Mutant("heal-refusal", HS, "        if not exact or exact[0].sim < in_place - IN_PLACE_MARGIN:", "        if True:",
           "changed-in-place vs moved: doubt not refused"),
    Mutant("heal-refusal", HE, "MARGIN = 0.12 ", "MARGIN = 0.01 ", "margin over the runner-up 0.12 -> 0.01"),
    Mutant("heal-refusal", HE, "    return len(value) < 4 or", "    return len(value) < 1 or", "short values are not weak evidence"),
    Mutant("heal-refusal", HE, 'or (shape in ("number", "money") and len(value) < 8)', "or False",
           "short numbers are not weak evidence"),
    Mutant("heal-refusal", HLC, "    return [bool(v) and len(v) >= 2 and counts[v] == 1 for v in vals]",
           "    return [bool(v) for v in vals]", "listing: repeated values count as distinctive"),
    Mutant("heal-refusal", HL, "            if same * 2 < max(1, len(sample)):", "            if False:",
           "listing: colliding fields not refused"),
    Mutant("heal-refusal", HLK, "    if runner is not None and best.score - runner.score < MARGIN and not (best.order == 0 and best.css == spec.css):\n        return \"ambiguous\"",
           "    if False:\n        return \"ambiguous\"", "listing: two selectors within the margin not refused"),
    Mutant("heal-refusal", HLC, "        if not nested and best_score - score < MARGIN:", "        if False:",
           "listing: two lists within the margin not refused"),
    Mutant("heal-refusal", HLF, "    if fp is not None and sim < MIN_SIM_EXACT and _is_weak_all(wants) and not _labelled_alike(after, containers, sample, css, fp):", "    if False:",
           "listing: short values in unlike places accepted"),
    Mutant("heal-refusal", HLC, "    if abs(like_a - like_b) >= CONTEXT_MARGIN:", "    if abs(like_a - like_b) >= 0:",
           "listing: a copied block chosen on any difference in surroundings"),
    Mutant("heal-refusal", H, "        if torn:\n", "        if False:\n", "a selector now torn between copies taken as unchanged"),
    Mutant("heal-refusal", HS, "vouched = best.label_match and (not weak or fp.label_kind in STRONG_LABEL_KINDS)",
           "vouched = best.label_match", "a loose label vouches for a short value"),
    Mutant("heal-refusal", HS, "            if not twin and (runner is None", "            if (runner is None",
           "near look-alikes ('... XL' / '... XS') told apart by a loose label"),
    Mutant("heal-refusal", HS, 'and any(after.tags[m] == "a" for m in after.chain_members(best.node))):',
           'and False):', "record: a short value placed on a link's text"),
    Mutant("heal-refusal", H, "    if not holds_values(old_records, blueprint):", "    if False:",
           "records without values healed"),
    Mutant("heal-refusal", HS, "        if lost:\n", "        if False:\n", "no change claimed where the old selectors find nothing"),
    Mutant("heal-refusal", HS, "    if old_key and new_key and old_key != new_key and before.exact(new_key, None):",
           "    if False:", "single record: a neighbouring row slid into a removed row's place kept as changed in place"),
    Mutant("heal-refusal", HLF, "                wrong += 1 if s else 0", "                wrong += 0",
           "listing: a selector finding nothing where the record holds its value not counted as a miss"),
    Mutant("heal-refusal", H, "    if hidden is not None:", "    if False:", "a placeholder read as the field's value"),
    Mutant("heal-refusal", HS, "        if faint and (runner_d is not None or is_weak(value) or best.sim < MIN_SIM_UNIQUE):",
           "        if faint and (is_weak(value) or best.sim < MIN_SIM_UNIQUE):",
           "record: an unlike place taken when another place carries the value too"),
    # -- the healing ladder: breakers, diagnosis, rungs, budgets, the best guess ------------------------
    Mutant("ladder", LA, 'if src["state"] in ("QUARANTINED", "DEAD"):', 'if src["state"] in ("QUARANTINED",):',
           "a dead source is healed"),
    Mutant("ladder", LA, "        if not s.enabled:", "        if False:", "[doctor] enabled = false ignored"),
    Mutant("ladder", LA, "        if halt is not None:", "        if halt:", "a halt without details does not halt"),
    Mutant("ladder", LA, "`healerctl resume-healing` to resume\", release_for=HALT_RETRY_S)",
           "`healerctl resume-healing` to resume\")", "a halted task is completed instead of released for later"),
    Mutant("ladder", LA, '        if not breakers.has_good_past(src["success_count"]):', "        if False:",
           "a source that never passed is healed"),
    Mutant("ladder", LA, 'breakers.attempt_budget(s.max_fix_attempts, src["retry_only"])',
           "breakers.attempt_budget(s.max_fix_attempts, False)", "after a quarantine, the whole budget again"),
    Mutant("ladder", LA, 'reads.failed_attempts(name, s.attempt_window, src["attempts_since"])',
           "reads.failed_attempts(name, s.attempt_window, None)", "an unquarantine does not reset the budget"),
    Mutant("ladder", LA, "        if ctx.error_type is None:\n            ctx = failing_layout(",
           "        if False:\n            ctx = failing_layout(", "the failing layout of the episode is not healed for"),
    Mutant("ladder", LA, "            out.schedule_now(name)\n", "            pass\n",
           "nothing to heal: not scraped again at once"),
    Mutant("ladder", LA, 'reads.recent_attempts(name, src["failing_since"] - 1 if src["failing_since"] else None)',
           "reads.recent_attempts(name, None)", "earlier episodes' attempts told as this one's"),
    Mutant("ladder", LA, 'fingerprint = context.get("fingerprint") or src["last_fingerprint"]',
           'fingerprint = src["last_fingerprint"]', "the task's fingerprint ignored"),
    Mutant("ladder", LA, '        if final == "staged":\n', "        if False:\n", "a staged candidate gets no report for a person"),
    Mutant("ladder", LA, "data_gone=missing if final in breakers.FAILED_OUTCOMES else None", "data_gone=None",
           "data gone not recorded"),
    Mutant("ladder", LA, '                if rung != "memory":\n', "                if True:\n",
           "a memory fix submitted to the memory again"),
    Mutant("ladder", LA, '            if got["outcome"] in ("staged", "declined", "paused"):',
           '            if got["outcome"] in ("staged", "declined"):', "a budget pause spends the attempt"),
    Mutant("ladder", LA, "        guess = self.rungs.best_guess(ctx, att)", "        guess = None",
           "no best guess staged"),
    Mutant("ladder", LA, 'release_for=outcome["retry_in"],', "", "a paused task is completed, not released"),
    Mutant("ladder", LR, '        if res.get("version") is not None and res["outcome"] != "declined":\n            att.deployed += 1',
           "        if False:\n            att.deployed += 1", "a deploy before the budget ran out is forgotten"),
    Mutant("ladder", LR, 'if success or (res["outcome"] == "rejected" and res.get("conclusive", True)):', "if True:",
           "a known fix confirmed on a verdict that judged nothing"),
    Mutant("ladder", LR, '            if res["outcome"] in ("staged", "declined"):\n                return {"outcome": res["outcome"], "strategy": "memory"',
           '            if res["outcome"] in ("declined",):\n                return {"outcome": res["outcome"], "strategy": "memory"',
           "a known fix held for a person does not stop the ladder"),
    Mutant("ladder", LR, "att.best_guess = (result.candidate, result.reason) if result.candidate is not None else None",
           "att.best_guess = None", "a refusal's best guess dropped"),
    Mutant("ladder", LR, "            if gone:\n                att.suggested", "            if False:\n                att.suggested",
           "the report's blueprint not repaired around the gone fields"),
    Mutant("ladder", LR, "        return list(gone) if set(gone) == set(refused) else []", "        return list(gone)",
           "data gone claimed when a refused field is still on the page"),
    Mutant("ladder", LR, 'if not refused and isinstance(items, dict) and items.get("status") in ("gone", "ambiguous"):',
           "if False:", "records gone altogether not checked for data gone"),
    Mutant("ladder", LR, 'f"best guess of a refusal: {refusal}"[:500], 0.0)', 'f"best guess of a refusal: {refusal}"[:500], None)',
           "a best guess deployed without confidence 0 (promotable)"),
    Mutant("ladder", LR, '            if res.outcome == "untrusted":', "            if False:",
           "an untrusted healer called again and not alerted"),
    Mutant("ladder", LR, "range(1, min(s.healer_cycles, len(s.healer_timeouts)) + 1)", "range(1, s.healer_cycles + 1)",
           "more cycles than timeouts"),
    Mutant("ladder", LR, "        if mine.n >= self.settings.daily_budget_per_source:",
           "        if mine.n > self.settings.daily_budget_per_source:", "per-source budget one call late"),
    Mutant("ladder", LR, "        if total.n >= self.settings.daily_budget_total:",
           "        if total.n > self.settings.daily_budget_total:", "global budget one call late"),
    Mutant("ladder", LR, "mine.last or 0.0, (mine.first or since) + DAY)", "mine.last or 0.0, (mine.last or since) + DAY)",
           "a paused task waits for the newest call to leave the window"),
    Mutant("ladder", LR, "max(MIN_PAUSE, frees_at - self.ports.clock())", "frees_at - self.ports.clock()",
           "a pause may retry at once"),
    Mutant("ladder", LR, "        return sent is None or sent < last_call", "        return sent is None or sent <= last_call",
           "BUDGET_PAUSED repeated for the same pause"),
    Mutant("ladder", LR, "        since = self.ports.clock() - DAY", "        since = self.ports.clock() - 2 * DAY",
           "the budget's window two days long"),
    Mutant("ladder", LR, "            if not alike:", "            if False:", "a moved page with other data followed"),
    Mutant("ladder", LR, "            seen_pages.append((ctx.url, ctx.original_html))", "            pass",
           "the last good page's links not followed for a page that moved"),
    Mutant("ladder", LD, "        if kind == DECLINE:\n            return None, f\"the page cannot be fetched",
           "        if False:\n            return None, f\"the page cannot be fetched", "an unfetchable page diagnosed"),
    Mutant("ladder", LD, "    reason = drift(ports, bp, good, html, ex.data) if result.passed else None", "    reason = None",
           "drift that validation passes called nothing to heal"),
    Mutant("ladder", LD, 'if failing is None or failing["fetched_at"] < src["failing_since"]:', "if failing is None:",
           "a failing page from an earlier episode healed for"),
    Mutant("ladder", LD, 'if not src["failing_since"] or src["state"] != "DEGRADED":', 'if not src["failing_since"]:',
           "the failing layout looked for outside DEGRADED"),
    Mutant("ladder", LD, '    return f"drift: {reason}" if reason else None', "    return reason",
           "drift not labelled as such"),
    Mutant("ladder", LD, "    except TrialTooSlow as exc:   # production's own selectors", "    except ZeroDivisionError as exc:   # production's own selectors",
           "production too slow on the page taken for a repair"),
]


def _compiles(text: str, path: str) -> bool:
    """A mutant must stay valid Python: one that breaks the syntax is 'killed' by any test and proves nothing."""
    try:
        compile(text, path, "exec")
    except SyntaxError:
        return False
    return True


def copy_tree(dest: Path) -> None:
    for name in ("healerd", "tests", "bench"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("schema.sql", "pyproject.toml"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)


def run_tests(copy: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    """'passed', 'failed' or 'timeout', and the seconds it took."""
    env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", *tests]
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0
    return ("passed" if r.returncode == 0 else "failed"), time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--module", action="append", choices=sorted(TESTS), help="only these modules (repeatable)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per test run (a timeout counts as killed)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.module or m.module in args.module]
    if args.list:
        for m in chosen:
            print(f"{m.module:<13} {m.path:<26} {m.what}")
        return 0

    with tempfile.TemporaryDirectory(prefix="healerd-mutation-") as tmp:
        copy = Path(tmp)
        copy_tree(copy)
        probe = subprocess.run([sys.executable, "-c", "import healerd; print(healerd.__file__)"], cwd=copy,
                               env=dict(os.environ, PYTHONPATH=str(copy)), capture_output=True, text=True)
        if not probe.stdout.strip().startswith(str(copy)):
            print(f"the copy is not what gets imported ({probe.stdout.strip() or probe.stderr.strip()})")
            return 2
        modules = sorted({m.module for m in chosen}, key=list(TESTS).index)
        for mod in modules:
            status, secs = run_tests(copy, TESTS[mod], args.timeout)
            print(f"baseline {mod:<13} {status} in {secs:.1f}s ({' '.join(TESTS[mod])})")
            if status != "passed":
                print("the tests fail without any mutant: fix them first")
                return 2
        tally: dict[str, dict[str, int]] = {mod: {"killed": 0, "survived": 0, "n/a": 0, "invalid": 0}
                                            for mod in modules}
        survivors, stale = [], []
        for i, m in enumerate(chosen, 1):
            target = copy / m.path
            original = target.read_text(encoding="utf-8")
            if original.count(m.old) != 1:
                verdict, secs = "n/a", 0.0
            elif not _compiles(original.replace(m.old, m.new), m.path):
                verdict, secs = "invalid", 0.0
            else:
                target.write_text(original.replace(m.old, m.new), encoding="utf-8")
                try:
                    status, secs = run_tests(copy, TESTS[m.module], args.timeout)
                finally:
                    target.write_text(original, encoding="utf-8")
                verdict = "survived" if status == "passed" else "killed"
                if status == "timeout":
                    verdict = "killed"
            tally[m.module][verdict] += 1
            if verdict == "survived":
                survivors.append(m)
            elif verdict in ("n/a", "invalid"):
                stale.append((verdict, m))
            print(f"[{i:>2}/{len(chosen)}] {m.module:<13} {verdict:<9} {secs:5.1f}s  {m.what}", flush=True)

    print(f"\n{'module':<13} {'killed':>6} / {'total':<5} {'rate':>6}   n/a+invalid")
    all_k = all_t = 0
    short = []
    for mod in modules:
        t = tally[mod]
        total = t["killed"] + t["survived"]
        all_k, all_t = all_k + t["killed"], all_t + total
        rate = t["killed"] / total if total else 0.0
        if rate < 0.85:
            short.append(mod)
        print(f"{mod:<13} {t['killed']:>6} / {total:<5} {rate:>6.0%}   {t['n/a'] + t['invalid']}")
    print(f"{'all':<13} {all_k:>6} / {all_t:<5} {all_k / max(all_t, 1):>6.0%}")
    for m in survivors:
        print(f"survived: {m.module}: {m.what} ({m.path})")
    for verdict, m in stale:
        why = "its text is not in the file exactly once" if verdict == "n/a" else "the mutated file does not compile"
        print(f"STALE MUTANT ({verdict}): {m.module}: {m.what} ({m.path}): {why}: update the list")
    print(f"goal >= 85 % killed per module: {'met' if not short else 'MISSED for ' + ', '.join(short)}")
    if stale:
        print(f"the mutant list is stale: {len(stale)} mutant(s) do not apply to today's code")
        return 3
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
