"""`zotsync status` as text: the report app.status builds, one line per count and problem."""

from __future__ import annotations

from typing import Any


def format_text(report: dict[str, Any]) -> str:
    lib, cat = report["library"], report["catalogue"]
    name = f' "{lib["name"]}"' if lib["name"] else ""
    ident = lib["id"] or f"({lib['kind']})"  # a local database has no library id
    lines = [
        f"library: {lib['type']} {ident}{name} from {lib['source']}, "
        f"version {lib['version']}, last sync {lib['last_sync_at'] or 'never'}; {lib['items']} items "
        f"({lib['trashed']} in the trash), {lib['collections']} collections",
        f"catalogue: {cat['entries']} entries in {cat['categories']} categories; read {cat['read']}, "
        f"unread {cat['unread']}; {cat['matched']} of the curated papers matched in Zotero",
    ]
    sections = (
        ("unmatched curated entries", report["unmatched"], _unmatched),
        (
            "fuzzy matches to review",
            report["fuzzy_matches"],
            lambda f: f"{f['title']} ↔ {f['zotero_title']} [{f['zotero_key']}] {f['score']}",
        ),
        (
            "ambiguous matches",
            report["ambiguous"],
            lambda a: f"{' | '.join(a['titles'])} ↔ {', '.join(a['zotero_keys'])} (by {a['rule']})",
        ),
        (
            "duplicates in Zotero",
            report["duplicates"],
            lambda d: f"{d['title']}: {', '.join(d['zotero_keys'])} ({d['reason']})",
        ),
        (
            "near-duplicate category names",
            report["near_duplicate_categories"],
            lambda n: " ≈ ".join(n["names"]),
        ),
        (
            "status disagreements",
            report["status_conflicts"],
            lambda s: f"{s['title']}: curated {s['curated']}, Zotero {s['zotero']}",
        ),
        (
            "items without a title (the page shows a placeholder; give them one in Zotero)",
            report["untitled"],
            lambda u: f"{u['zotero_key']} in {', '.join(u['categories'])}",
        ),
        ("inbox items not yet curated", report["inbox"], lambda i: f"{i['title']} [{i['zotero_key']}]"),
    )
    for heading, rows, show in sections:
        lines.append(f"{heading}: {len(rows)}")
        lines += [f"  - {show(row)}" for row in rows]
    lines.append(f"items no curated entry claims: {lib['uncurated']} (`zotsync list --uncurated` lists them)")
    return "\n".join(lines)


def _unmatched(entry: dict[str, Any]) -> str:
    nearest = "; ".join(f"{c['title']} [{c['zotero_key']}] {c['score']}" for c in entry["nearest"])
    return f"{entry['title']} ({entry['reason']})" + (f" — nearest: {nearest}" if nearest else "")
