"""A GitHub Actions workflow that runs `zotsync sync --exit-code` on a schedule and commits the exports
when they changed; with `pages`, it also builds the MkDocs site and deploys it to GitHub Pages. Paths in
it are relative to the repository root: the folder it is written from."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..config import Config
from ..errors import ConfigError
from ..text import one_line
from . import fill, fit_for_a_job, template

# What the runner installs to build the site: MkDocs with the Material theme (its docs are the recipe).
SITE_INSTALL = "mkdocs-material>=9.5,<10"


def workflow(
    config: Config, root: Path, cron: str, when: str, install: str | None = None, pages: bool = False
) -> str:
    if config.source.type == "local":
        raise ConfigError(
            "a GitHub runner cannot read the Zotero database on this computer: use source.type web"
        )
    exports = fit_for_a_job("exports folder", _inside(root, config.exports.dir, "exports.dir"))
    _inside(root, config.catalog, "catalogue")  # the runner checks out the repository, nothing else
    if config.source.type == "snapshot" and config.source.path is not None:
        _inside(root, config.source.path, "snapshot")
    config_path = fit_for_a_job("config file", _inside(root, config.path, "config file"))
    store = fit_for_a_job("store", _inside(root, config.store, "store"))
    mkdocs = fit_for_a_job("MkDocs config", site_config(root, config)) if pages else ""
    # What the steps name reaches them as data: a YAML string in the job's `env:`, read by the shell as
    # "$ZOTSYNC_…" (never code), and by GitHub as text as long as it holds no `${{` expression.
    env = {
        "ZOTSYNC_INSTALL": ("install spec", fit_for_a_job("install spec", install or default_install(root))),
        "ZOTSYNC_CONFIG": ("config file", config_path),
        "ZOTSYNC_EXPORTS": ("exports folder", exports),
    }
    if pages:
        env |= {
            "ZOTSYNC_SITE_INSTALL": ("site install", SITE_INSTALL),
            "ZOTSYNC_MKDOCS": ("MkDocs config", mkdocs),
        }
    for what, value in [*env.values(), ("store", store)]:
        if "${{" in value:
            raise ConfigError(
                f"the {what} {value} holds `${{{{`, which GitHub would evaluate as an expression (a secret "
                "would land in the commit); nothing was written"
            )
    text = fill(
        template("zotsync-pages.yml" if pages else "zotsync.yml"),
        cron=cron,
        when=when,
        store=yaml_string(store),
        **{name.removeprefix("ZOTSYNC_").lower(): yaml_string(value) for name, (_, value) in env.items()},
    )
    check_reads_back(text, {name: value for name, (_, value) in env.items()}, store, cron)
    return text


def yaml_string(value: str) -> str:
    """`value` as a YAML double-quoted scalar: JSON's escapes are YAML's, and nothing in it (`: `, ` #`,
    quotes) ends it early."""
    return json.dumps(value, ensure_ascii=False)


def check_reads_back(text: str, env: Mapping[str, str], store: str, cron: str) -> None:
    """The workflow as GitHub will read it names exactly what it was written with: else it is refused,
    so that the command never reports success for a file that is not the workflow it meant."""
    import yaml

    try:
        workflow = yaml.safe_load(text)
        job = workflow["jobs"]["sync"]
        cache = next(step for step in job["steps"] if str(step.get("uses", "")).startswith("actions/cache@"))
        read = (job["env"], cache["with"]["path"], workflow[True]["schedule"][0]["cron"])
    except (yaml.YAMLError, KeyError, TypeError, StopIteration) as exc:
        read, problem = None, f"it is not valid YAML ({one_line(str(exc))})"
    else:
        problem = "it names other values than those it was written with"
    if read != (dict(env), store, cron):
        raise ConfigError(f"the workflow would not read back as written: {problem}; nothing was written")


def site_config(root: Path, config: Config) -> str:
    """The site's mkdocs.yml (at the repository's root), checked to publish the exports: they must lie in
    its docs folder, or the site would not show the page."""
    path = root / "mkdocs.yml"
    if not path.is_file():
        raise ConfigError(
            f"--pages builds the MkDocs site of {path}, which does not exist: write one "
            "(docs/publishing.md has one to start from)"
        )
    docs = root / (_docs_dir(path) or "docs")
    try:
        config.exports.dir.resolve().relative_to(docs.resolve())
    except ValueError:
        raise ConfigError(
            f"exports.dir {config.exports.dir} is outside the site's docs folder {docs}: the site would not "
            "show the page; put exports.dir inside it (e.g. docs/reading-list)"
        ) from None
    return path.relative_to(root).as_posix()


def _docs_dir(path: Path) -> str | None:
    """`docs_dir` of an mkdocs.yml."""
    value = mkdocs_settings(path).get("docs_dir")
    return value if isinstance(value, str) else None


def mkdocs_settings(path: Path) -> dict[str, Any]:
    """An mkdocs.yml's settings; its tags (`!!python/name:…`, `!ENV`) are read as nothing. ConfigError
    when it cannot be read."""
    import yaml

    class _Tolerant(yaml.SafeLoader):
        pass

    _Tolerant.add_multi_constructor("", lambda loader, suffix, node: None)
    try:
        settings = yaml.load(path.read_text(encoding="utf-8"), Loader=_Tolerant)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return settings if isinstance(settings, dict) else {}


def default_install(root: Path) -> str:
    """What the runner installs when `--install` does not say: exactly this zotsync, or nothing. `.` when
    the repository is a clone of zotsync itself (the quick start's layout); else the https git
    repository and commit this zotsync came from. Never a bare `zotsync==<version>`: no package index
    serves zotsync, so that fails on the first run, and whoever registered the name there would run
    their code with write access and the API key. Neither known: refused, asking for `--install`."""
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        project = {}
    if project.get("name") == "zotsync":
        return "."
    origin = installed_from()
    if origin is None:
        raise ConfigError(
            "cannot tell the runner which zotsync to install: this one was not installed from an https git "
            "repository at a known commit (a wheel, a copied folder, a checkout with uncommitted changes or "
            "without an https origin); give --install SPEC, e.g. --install "
            "'zotsync @ git+https://github.com/OWNER/zotsync@COMMIT'"
        )
    return origin.spec


@dataclass(frozen=True, slots=True)
class Origin:
    """The public git repository and the commit a zotsync was installed from."""

    url: str  # https, without credentials
    commit: str  # 40 hex digits

    @property
    def spec(self) -> str:
        return f"zotsync @ git+{self.url}@{self.commit}"


def installed_from(direct_url: Mapping[str, Any] | None = None, package: Path | None = None) -> Origin | None:
    """Where this zotsync came from: pip's record of a git install (PEP 610 `direct_url.json`, which
    names the URL and the commit), else the git checkout the running package lives in (an editable
    install, or a run from source): its `origin` remote and HEAD, when the package's files there are
    all committed. None when neither names an https repository at a commit."""
    if direct_url is None:
        from importlib import metadata

        try:
            direct_url = json.loads(metadata.distribution("zotsync").read_text("direct_url.json") or "{}")
        except (metadata.PackageNotFoundError, ValueError):
            direct_url = {}
    vcs = direct_url.get("vcs_info") or {}
    if vcs.get("vcs") == "git":
        return _origin(str(direct_url.get("url", "")), str(vcs.get("commit_id", "")))
    return checkout_origin(Path(__file__).resolve().parents[1] if package is None else package)


def checkout_origin(package: Path) -> Origin | None:
    """The origin and HEAD of the zotsync checkout whose package folder is `package`: None when that is
    no checkout's top (an install into a virtual environment inside some other repository, say), or when
    the package's files differ from HEAD (the runner would not get this zotsync)."""
    root = package.parent
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root.resolve() or package.name != "zotsync":
        return None
    if _git(root, "status", "--porcelain", "--untracked-files=no", "--", package.name) != "":
        return None
    return _origin(_git(root, "remote", "get-url", "origin") or "", _git(root, "rev-parse", "HEAD") or "")


def _origin(url: str, commit: str) -> Origin | None:
    parts = urlsplit(url)
    # https only: the runner must fetch it without keys, and credentials would be committed in the file.
    if parts.scheme != "https" or "@" in parts.netloc or not re.fullmatch(r"[0-9a-f]{40}", commit):
        return None
    return Origin(url, commit)


def _git(folder: Path, *args: str) -> str | None:
    """`git -C folder args…`'s output, stripped; None when git fails or is missing."""
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _inside(root: Path, path: Path, what: str) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ConfigError(
            f"the {what} {path} is outside {root}: run `zotsync schedule github` from the repository "
            "that holds the config, the catalogue and the exports"
        ) from None
