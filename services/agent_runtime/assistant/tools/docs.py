"""`search_documentation` over this project's own docs, and the index it searches.

The runtime indexes `README.md` and `docs/*.md` at start (`index_docs`): one row per section
(`doc_sections`), a Postgres `tsvector` with the heading weighted above the text, rewritten
only where a section's checksum changed. A search ranks sections with `ts_rank`.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import Any

import asyncpg

from services.agent_runtime.assistant.tools.env import Outcome, ToolEnv, error, text_arg

log = logging.getLogger(__name__)

TOP = 5
CONTENT_CHARS = 1500
MAX_QUERY_CHARS = 300
_HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*$")


def sections(path: str, text: str) -> list[tuple[str, str, str]]:
    """`(anchor, title, content)` per heading; text before the first heading is the page's."""
    out: list[tuple[str, str, str]] = []
    title = path
    body: list[str] = []
    in_fence = False

    def flush() -> None:
        content = "\n".join(body).strip()
        if content:
            anchor = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "top"
            while any(a == anchor for a, _, _ in out):
                anchor += "-"
            out.append((anchor, title, content))

    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        found = None if in_fence else _HEADING.match(line)
        if found:
            flush()
            title, body = found.group(2), []
        else:
            body.append(line)
    flush()
    return out


def doc_files(root: Path) -> list[Path]:
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    docs = root / "docs"
    if docs.is_dir():
        files += sorted(p for p in docs.rglob("*.md") if p.is_file())
    return files


async def index_docs(pool: asyncpg.Pool[Any], root: Path) -> int:
    """Bring `doc_sections` in line with the docs under `root`; returns the sections indexed."""
    rows: list[tuple[str, str, str, str, str]] = []
    for file in doc_files(root):
        rel = file.relative_to(root).as_posix()
        for anchor, title, content in sections(rel, file.read_text(errors="replace")):
            digest = hashlib.sha256(f"{title}\n{content}".encode()).hexdigest()
            rows.append((rel, anchor, title, content, digest))
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('doc_sections'))")
        await conn.executemany(
            """INSERT INTO doc_sections (path, anchor, title, content, checksum)
               VALUES ($1, $2, $3, $4, $5)
               ON CONFLICT (path, anchor) DO UPDATE SET title = EXCLUDED.title,
                   content = EXCLUDED.content, checksum = EXCLUDED.checksum
               WHERE doc_sections.checksum <> EXCLUDED.checksum""",
            rows,
        )
        keys = [f"{r[0]}#{r[1]}" for r in rows]
        await conn.execute(
            "DELETE FROM doc_sections WHERE NOT (path || '#' || anchor = ANY($1::text[]))", keys
        )
    log.info("indexed %d documentation sections from %s", len(rows), root)
    return len(rows)


async def search_documentation(env: ToolEnv, args: dict[str, Any]) -> Outcome:
    query = text_arg(args, "query")[:MAX_QUERY_CHARS]
    if not query:
        return error("query must not be empty")
    rows = await env.pool.fetch(
        """SELECT path, anchor, title, content,
                  ts_rank(search, websearch_to_tsquery('english', $1)) AS rank
           FROM doc_sections WHERE search @@ websearch_to_tsquery('english', $1)
           ORDER BY rank DESC, path, anchor LIMIT $2""",
        query,
        TOP,
    )
    if not rows:
        # An all-words query can be too strict: fall back to any of the words.
        words = " OR ".join(re.findall(r"\w+", query)[:12])
        if words:
            rows = await env.pool.fetch(
                """SELECT path, anchor, title, content FROM doc_sections
                   WHERE search @@ websearch_to_tsquery('english', $1)
                   ORDER BY ts_rank(search, websearch_to_tsquery('english', $1)) DESC, path
                   LIMIT $2""",
                words,
                TOP,
            )
    return Outcome(
        {
            "results": [
                {
                    "title": r["title"],
                    "path": f"{r['path']}#{r['anchor']}",
                    "content": r["content"][:CONTENT_CHARS],
                }
                for r in rows
            ]
        }
    )
