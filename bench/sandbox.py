"""Cost of a parser as code: ms per parse of a 100 KB page, fresh confined child vs a pre-started one.

    python bench/sandbox.py [runs]

"fresh" is what run_parser does: start the interpreter, load the allowed modules, confine, read
the page and the code, parse, answer. "pre-started" starts the child first and waits until it
has confined itself (its report line is readable), then times only handing over the payload, the
parse and the answer: the best a pool of idle confined children could do. "in-process" is the same
parse() called directly in this interpreter, for scale (never done by the daemon).
"""

from __future__ import annotations

import json
import select
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from healerd.adapters.sandbox import RUNNER, StartedChild, check_parser_source, interpret, run_parser, runner_argv  # noqa: E402

PARSER = '''
import re
from selectolax.lexbor import LexborHTMLParser

def parse(html):
    out = []
    for row in LexborHTMLParser(html).css("table.stats tr.player"):
        score = re.search(r"[\\d,]+", row.css_first("td.score").text())
        out.append({"name": row.css_first("td.name a").text().strip(),
                    "score": int(score.group(0).replace(",", "")) if score else None})
    return out
'''


def page(target_bytes: int = 100_000) -> str:
    rows, i = [], 0
    while sum(map(len, rows)) < target_bytes - 200:
        rows.append(f'<tr class="player"><td class="name"><a href="/p/{i}">Player number {i}</a></td>'
                    f'<td class="score">{1000 + i:,} pts</td><td class="note">lorem ipsum dolor</td></tr>\n')
        i += 1
    return f"<html><body><table class='stats'>\n{''.join(rows)}</table></body></html>"


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    html = page()
    check_parser_source(PARSER)   # also runs the one-time confinement probe, outside the timings
    expected = run_parser(PARSER, html)
    payload = json.dumps({"code": PARSER, "html": html}).encode()
    argv = runner_argv(5, 256)

    fresh = []
    for _ in range(runs):
        t = time.perf_counter()
        assert run_parser(PARSER, html) == expected
        fresh.append((time.perf_counter() - t) * 1000)

    started = []
    for _ in range(runs):
        child = StartedChild(RUNNER, argv)
        select.select([child.proc.stdout], [], [], 30)   # confined and waiting for its payload
        t = time.perf_counter()
        res = child.finish(payload, wall_seconds=10, max_output=5_000_000)
        assert interpret(res, cpu_seconds=5, memory_mb=256, wall_seconds=10, max_output=5_000_000) == expected
        started.append((time.perf_counter() - t) * 1000)

    env: dict = {}
    exec(compile(PARSER, "parser.py", "exec"), env)
    inproc = []
    for _ in range(runs):
        t = time.perf_counter()
        env["parse"](html)
        inproc.append((time.perf_counter() - t) * 1000)

    print(f"page {len(html) / 1000:.0f} KB, {len(expected)} records, {runs} runs each")
    for label, xs in (("fresh confined child", fresh), ("pre-started confined child", started),
                      ("in-process (for scale)", inproc)):
        print(f"{label:28s} median {statistics.median(xs):7.1f} ms   p99 {percentile(xs, 99):7.1f} ms")


if __name__ == "__main__":
    main()
