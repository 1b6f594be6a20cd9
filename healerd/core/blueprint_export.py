"""A source's blueprint taken back out: masked for showing (`status NAME --json`), or as a file
`add` and a sources directory accept (`healerctl export`), with the secret values left out.

Masking applies to the values of secrets (secret headers, cookies, credentials and secret query
values of the URL, those values wherever they occur), never to the blueprint's structure: a
field called `code` or `key`, the top-level `key`, a selector are shown as they are.
"""

from __future__ import annotations

from typing import Any

from healerd.core.blueprint_toml import toml_lines
from healerd.core.sanitize import MASK, is_secret_header, mask_text, mask_url, secret_values


def _literal_masked(value: Any, secrets: list[str]) -> Any:
    """A selector (or list of them), an attribute name: only a source's literal secret values
    masked, nothing else (a long class name is no key)."""
    if isinstance(value, list):
        return [_literal_masked(v, secrets) for v in value]
    if isinstance(value, str):
        for s in sorted(secrets, key=len, reverse=True):
            value = value.replace(s, MASK)
    return value


def _secrets_of(d: dict) -> list[str]:
    return secret_values(d.get("url"), d.get("headers"), d.get("cookies"))


def mask_blueprint(d: dict) -> dict:
    """The blueprint dict (Blueprint.to_dict) to show: secret header values and every cookie value
    `***`, the URL's credentials and secret query values masked, the parser's text masked; fields,
    selectors, `key` and the other settings as they are."""
    secrets = _secrets_of(d)
    out: dict[str, Any] = {}
    for k, v in d.items():
        if k == "url" and isinstance(v, str):
            out[k] = mask_url(v, secrets)
        elif k == "headers" and isinstance(v, dict):
            out[k] = {h: (MASK if is_secret_header(h) else mask_text(str(x), secrets)) for h, x in v.items()}
        elif k == "cookies" and isinstance(v, dict):
            out[k] = {c: MASK for c in v}
        elif k == "parser" and isinstance(v, str):
            out[k] = mask_text(v, secrets)
        elif k == "fields" and isinstance(v, dict):
            out[k] = {name: {fk: _literal_masked(fv, secrets) for fk, fv in spec.items()} if isinstance(spec, dict)
                      else spec for name, spec in v.items()}
        else:
            out[k] = _literal_masked(v, secrets)
    return out


def exportable(d: dict) -> tuple[dict, list[str]]:
    """The blueprint dict as a file to hand out, and the keys whose secret values were left out
    (`headers.Authorization`, `cookies.sid`, `url`). Secret headers and cookies are dropped (a
    person puts theirs back); a URL with a secret in it keeps its shape with `***` there."""
    secrets = _secrets_of(d)
    out: dict[str, Any] = {}
    left_out: list[str] = []
    for k, v in d.items():
        if k == "headers" and isinstance(v, dict):
            kept = {h: x for h, x in v.items() if not is_secret_header(h)}
            left_out += [f"headers.{h}" for h in v if is_secret_header(h)]
            if kept:
                out[k] = kept
        elif k == "cookies" and isinstance(v, dict):
            left_out += [f"cookies.{c}" for c in v]
        elif k == "url" and isinstance(v, str):
            out[k] = mask_url(v, secrets)
            if out[k] != v:
                left_out.append("url")
        elif k == "parser" and isinstance(v, str):
            out[k] = mask_text(v, secrets) if secrets else v
            if out[k] != v:
                left_out.append("parser")
        else:
            out[k] = v
    return out, left_out


def to_toml(d: dict, left_out: list[str] = (), header: str = "") -> str:   # type: ignore[assignment]
    """A blueprint dict as a TOML file: top-level keys, then one table per field (and headers,
    cookies); a comment naming each key whose secret value was left out."""
    lines: list[str] = [f"# {line}" for line in header.splitlines()] if header else []
    for k in left_out:
        lines.append(f"# {k}: a secret value, left out; put yours back before using this file")
    top, tables = toml_lines(d)
    return "\n".join(lines + top + tables) + "\n"
