"""An OpenAI-compatible chat-completions healer, and the factory picking a backend.

The model is sent healerd.adapters.prompt's tiered prompt at temperature 0; the first
fenced code block of its answer (```json blueprint or ```python parser) is handled
exactly like a code healer's modified_files, with the same refusals.
"""

from __future__ import annotations

import json
import re

from healerd.adapters.external import Answer, CodeHealerClient, HealerConfig, _ClientBase, candidate_from_files
from healerd.adapters.prompt import build_messages
from healerd.core.diagnosis import DiagnosisContext
from healerd.core.peers import request_url

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)


def chat_url(url: str) -> str:
    """{base}/v1/chat/completions, accepting a base that already ends in /v1 or /chat/completions."""
    u = url.rstrip("/")
    if u.endswith("/chat/completions"):
        return u
    if u.endswith("/v1"):
        return u + "/chat/completions"
    return u + "/v1/chat/completions"


def build_chat_request(ctx: DiagnosisContext, cycle: int, history: list[dict], config: HealerConfig) -> dict:
    return {"model": config.model, "messages": build_messages(ctx, cycle, history, config), "temperature": 0}


def files_from_answer(content: str) -> dict[str, str] | None:
    """The first fenced block as modified files: json -> blueprint.json, python -> parser.py."""
    m = _FENCE.search(content or "")
    if not m:
        return None
    lang, code = m.group(1).lower(), m.group(2)
    if lang in ("json", "jsonc"):
        return {"blueprint.json": code}
    if lang in ("python", "py", "python3"):
        return {"parser.py": code}
    stripped = code.lstrip()
    if stripped.startswith("{"):
        return {"blueprint.json": code}
    if "def parse" in code:
        return {"parser.py": code}
    return {"blueprint.json": code}


class OpenAIHealerClient(_ClientBase):
    """POST {url}/v1/chat/completions; the answer's first fenced block is the candidate."""

    def _request_body(self, ctx: DiagnosisContext, cycle: int, history: list[dict]) -> dict:
        return build_chat_request(ctx, cycle, history, self.config)

    def _endpoint(self) -> str:
        return chat_url(request_url(self.config.url))

    def _read_answer(self, ctx: DiagnosisContext, body: bytes) -> Answer:
        try:
            payload = json.loads(body)
            content = payload["choices"][0]["message"]["content"]
            if not isinstance(content, str):
                raise TypeError("content is not text")
        except (json.JSONDecodeError, UnicodeDecodeError):
            return Answer("bad_response", "the model server's answer is not JSON")
        except (KeyError, IndexError, TypeError) as exc:
            return Answer("bad_response", f"the model server's answer has no choices[0].message.content ({exc})")
        files = files_from_answer(content)
        if files is None:
            return Answer("bad_response", "the model's answer holds no fenced code block")
        cand = candidate_from_files(ctx, files, self.config)
        summary = f"{self.config.model or 'model'}: {'parser' if 'parser.py' in files else 'blueprint'} rewritten"
        return Answer(cand.outcome, cand.reason, cand.blueprint, summary)


def make_client(config: HealerConfig) -> CodeHealerClient | OpenAIHealerClient | None:
    """The backend `config.kind` names; None when no healer URL is configured."""
    if not config.url:
        return None
    if config.kind == "openai":
        return OpenAIHealerClient(config)
    if config.kind in ("code-healer", "", None):
        return CodeHealerClient(config)
    raise ValueError(f"[healer] kind: expected \"code-healer\" or \"openai\", got {config.kind!r}")
