"""out/report.md as one self-contained HTML file: every figure embedded as a data: URI, the style
inline, no script and no external resource, so it opens offline, mails as one attachment and
prints.

No markdown library is a dependency, so this converts exactly the subset the toolkit writes:
ATX headings, paragraphs, `- ` lists, pipe tables (with `---:` alignment), fenced code blocks,
figures on their own line, and inline **bold**, *emphasis*, `code` and [links](url).
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

STYLE = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       max-width: 1100px; margin: 2em auto; padding: 0 1.5em; }
h1 { font-size: 1.7em; border-bottom: 2px solid #ccc; padding-bottom: .2em; }
h2 { font-size: 1.35em; margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.1em; margin-top: 1.5em; }
table { border-collapse: collapse; margin: 1em 0; font-size: .85em; }
th, td { border: 1px solid #ccc; padding: .25em .5em; vertical-align: top; }
th { background: #f3f3f3; }
tr:nth-child(even) td { background: #fafafa; }
code { font: .9em ui-monospace, "DejaVu Sans Mono", monospace; background: #f3f3f3;
       padding: 0 .2em; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: .8em; overflow-x: auto;
      font-size: .8em; line-height: 1.35; }
pre code { background: none; padding: 0; }
figure { margin: 1.2em 0; text-align: center; }
figure img { max-width: 100%; height: auto; }
figcaption { font-size: .85em; color: #555; }
.missing { color: #a00; font-weight: bold; }
@media print {
  body { font-size: 10pt; max-width: none; margin: 0; padding: 0; }
  h2 { break-after: avoid; }
  figure, tr, pre { break-inside: avoid; }
  table { font-size: 8pt; width: 100%; }
  pre { white-space: pre-wrap; }
}
"""

MIME = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}
FIGURE = re.compile(r"^!\[([^\]]*)\]\(([^)\s]+)\)$")
HEADING = re.compile(r"^(#{1,6}) +(.*?) *#*$")
ALIGN = {"l": "left", "r": "right", "c": "center"}
# Inline markup, tried left to right at each position: code first, so that nothing inside
# backticks is touched. Emphasis needs a non-space after the opening mark and a word boundary
# around underscores, so p99_us, rep_1 and "a * b" stay as they are.
INLINE = re.compile(
    r"`(?P<code>[^`]+)`"
    r"|\[(?P<text>[^\]]+)\]\((?P<url>[^)\s]+)\)"
    r"|\*\*(?P<bold>\S(?:.*?\S)?)\*\*"
    r"|(?<![\w*])\*(?P<em>[^\s*](?:[^*]*?[^\s*])?)\*(?![\w*])"
    r"|(?<!\w)_(?P<em2>[^\s_](?:[^_]*?[^\s_])?)_(?!\w)")


def inline(text: str) -> str:
    """One line of markdown text as HTML, everything else escaped."""
    out, pos = [], 0
    for m in INLINE.finditer(text):
        out.append(html.escape(text[pos:m.start()], quote=False))
        if m["code"] is not None:
            out.append(f"<code>{html.escape(m['code'], quote=False)}</code>")
        elif m["url"] is not None:
            out.append(f'<a href="{html.escape(m["url"])}">{inline(m["text"])}</a>')
        elif m["bold"] is not None:
            out.append(f"<strong>{inline(m['bold'])}</strong>")
        else:
            out.append(f"<em>{inline(m['em'] or m['em2'])}</em>")
        pos = m.end()
    out.append(html.escape(text[pos:], quote=False))
    return "".join(out)


def cells(line: str) -> list[str]:
    """The cells of a table row; an escaped pipe (\\|) stays in its cell."""
    line = line.strip().removeprefix("|")
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [part.strip().replace("\\|", "|") for part in re.split(r"(?<!\\)\|", line)]


def alignment(rule: str) -> str:
    rule = rule.strip()
    if rule.startswith(":") and rule.endswith(":"):
        return "c"
    return "r" if rule.endswith(":") else "l"


def is_rule_row(line: str) -> bool:
    return bool(re.fullmatch(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?", line.strip()))


def table(rows: list[str]) -> str:
    head, aligns = cells(rows[0]), [alignment(c) for c in cells(rows[1])]

    def row(tag: str, values: list[str]) -> str:
        return "<tr>" + "".join(
            f'<{tag} style="text-align:{ALIGN[a]}">{inline(v)}</{tag}>'
            for v, a in zip(values, aligns + ["l"] * (len(values) - len(aligns)))) + "</tr>"

    body = "\n".join(row("td", cells(r)) for r in rows[2:])
    return f"<table>\n<thead>{row('th', head)}</thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def figure(alt: str, src: str, base_dir: Path, missing: list[str]) -> str:
    path = base_dir / src
    mime = MIME.get(path.suffix.lower())
    if mime is None or not path.is_file():
        missing.append(src)
        return f'<p class="missing">figure missing: {html.escape(src)}</p>'
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img src="data:{mime};base64,{data}" alt="{html.escape(alt)}">'
            f"<figcaption>{inline(alt)}</figcaption></figure>")


def slug(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^\w]+", "-", text.lower()).strip("-") or "section"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def body(markdown_text: str, base_dir: Path, missing: list[str]) -> str:
    lines, out, ids = markdown_text.splitlines(), [], set()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")),
                       len(lines))
            code = "\n".join(lines[i + 1:end])
            out.append(f"<pre><code>{html.escape(code, quote=False)}</code></pre>")
            i = end + 1
        elif m := HEADING.match(line):
            level, text = len(m[1]), m[2]
            out.append(f'<h{level} id="{slug(text, ids)}">{inline(text)}</h{level}>')
            i += 1
        elif m := FIGURE.match(line.strip()):
            out.append(figure(m[1], m[2], base_dir, missing))
            i += 1
        elif line.startswith("|") and i + 1 < len(lines) and is_rule_row(lines[i + 1]):
            end = i + 2
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            out.append(table(lines[i:end]))
            i = end
        elif line.startswith("- "):
            items = []
            while i < len(lines) and (lines[i].startswith("- ") or
                                      (items and lines[i].startswith("  ") and lines[i].strip())):
                if lines[i].startswith("- "):
                    items.append(lines[i][2:].strip())
                else:  # a continuation line of the item above
                    items[-1] += " " + lines[i].strip()
                i += 1
            out.append("<ul>\n" + "\n".join(f"<li>{inline(t)}</li>" for t in items) + "\n</ul>")
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not starts_block(lines, i):
                para.append(lines[i].strip())
                i += 1
            out.append(f"<p>{inline(' '.join(para))}</p>")
    return "\n".join(out)


def starts_block(lines: list[str], i: int) -> bool:
    line = lines[i]
    return (line.startswith(("```", "- ", "#")) or bool(FIGURE.match(line.strip()))
            or (line.startswith("|") and i + 1 < len(lines) and is_rule_row(lines[i + 1])))


def render(markdown_text: str, base_dir: Path, title: str | None = None) -> tuple[str, list[str]]:
    """The whole HTML document and the image paths (as written in the markdown) that were
    missing. title: the <title>; default the text of the first '# ' heading."""
    missing: list[str] = []
    content = body(markdown_text, Path(base_dir), missing)
    if title is None:
        first = next((line[2:] for line in markdown_text.splitlines() if line.startswith("# ")),
                     "Report")
        title = re.sub(r"[*`]", "", first).strip()
    page = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"{content}\n</body>\n</html>\n")
    return page, missing


def write_html(md_path: Path, html_path: Path) -> list[str]:
    """Render md_path (figures relative to its folder) into html_path; return the missing
    figures."""
    page, missing = render(md_path.read_text(), md_path.parent)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    html_path.write_text(page)
    return missing
