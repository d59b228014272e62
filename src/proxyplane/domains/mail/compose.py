"""Rendering a message: every email has a text part and an HTML part from the templates in templates/
(`link.*` for the single-use account links, `notice.*` for everything else), filled from the same
values with string.Template (stdlib; the domain layer imports no web framework). Every value is escaped
for the HTML part."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from html import escape
from pathlib import Path
from string import Template

HERE = Path(__file__).parent / "templates"
PARAGRAPH = '<p style="font-size:15px;line-height:1.5;margin:0 0 12px">{}</p>'
SMALL = '<p style="font-size:12px;color:#6b7280;margin:4px 0">{}</p>'
BUTTON = (
    '<p style="margin:20px 0"><a href="{url}" style="background:#2f5bea;color:#ffffff;padding:10px 18px;'
    'border-radius:6px;text-decoration:none;display:inline-block">{label}</a></p>'
)


@dataclass(frozen=True)
class Mail:
    """A rendered message for one address (`kind` names why it was sent)."""

    kind: str
    to: str
    subject: str
    text: str
    html: str
    headers: dict[str, str] = field(default_factory=dict)


@cache
def template(name: str) -> Template:
    return Template((HERE / name).read_text(encoding="utf-8"))


def render(
    name: str,
    kind: str,
    to: str,
    subject: str,
    *,
    lines: list[str],
    action_url: str = "",
    action_label: str = "",
    footer: list[str] | None = None,
    unsubscribe_url: str = "",
    headers: dict[str, str] | None = None,
    expires: str = "",
) -> Mail:
    """Both parts of one message. `lines`: its paragraphs (plain text); `action_url`: the one link it is
    about; `unsubscribe_url`: shown in a notification's footer; `expires`: a link's lifetime, said."""
    label = action_label or action_url
    foot = list(footer or [])
    text_foot = foot + ([f"Unsubscribe from these emails: {unsubscribe_url}"] if unsubscribe_url else [])
    html_foot = [SMALL.format(escape(line)) for line in foot]
    if unsubscribe_url:
        link = f'<a href="{escape(unsubscribe_url)}" style="color:#6b7280">Unsubscribe from these emails</a>'
        html_foot.append(SMALL.format(link))
    values = {
        "subject": subject,
        "paragraphs": "\n\n".join(lines),
        "action": f"{label}:\n{action_url}" if action_url else "",
        "expires": expires,
        "footer": "\n".join(text_foot),
    }
    html_values = {
        "subject": escape(subject),
        "paragraphs": "\n".join(PARAGRAPH.format(escape(line)) for line in lines),
        "action": BUTTON.format(url=escape(action_url), label=escape(label)) if action_url else "",
        "url": escape(action_url),
        "expires": escape(expires),
        "footer": (
            '<hr style="border:none;border-top:1px solid #e3e6ea;margin:24px 0 12px">' if html_foot else ""
        )
        + "\n".join(html_foot),
    }
    text = template(f"{name}.txt").substitute(values)
    html = template(f"{name}.html").substitute(html_values)
    return Mail(kind, to, subject, text, html, dict(headers or {}))
